#!/usr/bin/env python3
"""Checks a file `streampool export --format perfetto` wrote against the Chrome JSON trace event
format (the "Trace Event Format" document that chrome://tracing and ui.perfetto.dev follow), with
the standard library only:
  - a JSON object with a "traceEvents" list (and displayTimeUnit "ms" or "ns" if present);
  - every event has a string name, a known phase, an integer pid, and (but metadata) a numeric
    ts >= 0; tid when present is an integer;
  - "M": process_name / thread_name with args.name a string;
  - "C": args of numbers only;
  - "b"/"e": a category and an id; per (cat, id) they alternate begin, end, never nest or
    overlap, the end no earlier than its begin, and every begin is ended;
  - "i": scope "g", "p" or "t".
Prints one summary line: events per phase, slices, and per counter the peak of each series.

usage: check_perfetto.py TRACE.json
"""
import json
import numbers
import sys

PHASES = {"B", "E", "X", "i", "I", "C", "b", "e", "n", "M", "s", "t", "f"}


class Bad(Exception):
    pass


def need(condition, what):
    if not condition:
        raise Bad(what)


def check(document):
    need(isinstance(document, dict) and isinstance(document.get("traceEvents"), list), "no traceEvents list")
    need(document.get("displayTimeUnit", "ms") in ("ms", "ns"), "displayTimeUnit is neither ms nor ns")
    phases = {}
    open_slices = {}
    slices = 0
    peaks = {}
    names = {}
    for i, e in enumerate(document["traceEvents"]):
        where = f"event {i}"
        need(isinstance(e, dict), f"{where}: not an object")
        ph = e.get("ph")
        need(ph in PHASES, f"{where}: phase {ph!r}")
        need(isinstance(e.get("name"), str) and e["name"], f"{where}: no name")
        need(isinstance(e.get("pid"), int), f"{where}: pid is not an integer")
        need("tid" not in e or isinstance(e["tid"], int), f"{where}: tid is not an integer")
        need("args" not in e or isinstance(e["args"], dict), f"{where}: args is not an object")
        phases[ph] = phases.get(ph, 0) + 1
        if ph == "M":
            need(e["name"] in ("process_name", "thread_name", "process_sort_index", "thread_sort_index",
                               "process_labels"), f"{where}: metadata {e['name']!r}")
            if e["name"].endswith("_name"):
                need(isinstance(e.get("args", {}).get("name"), str), f"{where}: metadata without args.name")
                names[(e["pid"], e.get("tid"))] = e["args"]["name"]
            continue
        ts = e.get("ts")
        need(isinstance(ts, numbers.Real) and not isinstance(ts, bool) and ts >= 0, f"{where}: ts {ts!r}")
        if ph == "C":
            need(e.get("args"), f"{where}: a counter without series")
            for series, value in e["args"].items():
                need(isinstance(value, numbers.Real) and not isinstance(value, bool), f"{where}: {series} is not a number")
                key = f"{e['name']} {series}"
                peaks[key] = max(peaks.get(key, 0), value)
        elif ph in ("b", "e"):
            need(isinstance(e.get("cat"), str) and e["cat"], f"{where}: an async event without cat")
            need(isinstance(e.get("id"), (str, int)), f"{where}: an async event without id")
            key = (e["pid"], e["cat"], e["id"])
            if ph == "b":
                need(key not in open_slices, f"{where}: {key} begins while its previous slice is open")
                open_slices[key] = ts
            else:
                need(key in open_slices, f"{where}: {key} ends without a begin")
                need(ts >= open_slices.pop(key), f"{where}: {key} ends before it began")
                slices += 1
        elif ph in ("i", "I"):
            need(e.get("s", "t") in ("g", "p", "t"), f"{where}: scope {e.get('s')!r}")
    need(not open_slices, f"{len(open_slices)} slices never end")
    need(any(n for (pid, tid), n in names.items() if tid is None), "no process_name")
    return phases, slices, peaks


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    try:
        with open(sys.argv[1], encoding="utf-8") as f:
            document = json.load(f)
        phases, slices, peaks = check(document)
    except (Bad, ValueError) as error:
        print(f"check_perfetto: {sys.argv[1]}: {error}", file=sys.stderr)
        return 1
    counts = ", ".join(f"{phases[p]} {p}" for p in sorted(phases))
    series = "; ".join(f"{k} peak {v}" for k, v in sorted(peaks.items()))
    print(f"perfetto ok: {counts}; {slices} slices; {series}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
