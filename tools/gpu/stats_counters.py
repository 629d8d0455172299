#!/usr/bin/env python3
"""Reads a STREAMPOOL_STATS report and says whether the allocator entry points went through
streampool.

    stats_counters.py REPORT.json

Prints one line, `alloc=<n> free=<n> pool=<n> counters=<n>` (counters = their sum), and exits 0
when both an allocation (cuMemAllocAsync / cuMemAllocFromPoolAsync, any variant) and a free
(cuMemFreeAsync) were counted; otherwise prints why and exits 1. The report's call counters are the
object "calls" ({"cuMemAllocAsync": 12, ...}); any other object of name -> count pairs found in
the report is read the same way, so small format changes do not break the check.
"""
import json
import re
import sys

ALLOC = re.compile(r"^cuMemAlloc(FromPool)?Async(_ptsz)?$")
FREE = re.compile(r"^cuMemFreeAsync(_ptsz)?$")
POOL = re.compile(r"^cu(MemPool\w+|(Device|Mem)(Get|Set|GetDefault)MemPool)$")


def counters(node, found):
    """Collects name -> count pairs of cu* entry points anywhere in the report."""
    if isinstance(node, dict):
        if "name" in node and isinstance(node.get("name"), str):
            count = node.get("count", node.get("calls"))
            if isinstance(count, int) and not isinstance(count, bool):
                found[node["name"]] = found.get(node["name"], 0) + count
        for key, value in node.items():
            if key.startswith("cu") and isinstance(value, int) and not isinstance(value, bool):
                found[key] = found.get(key, 0) + value
            else:
                counters(value, found)
    elif isinstance(node, list):
        for item in node:
            counters(item, found)
    return found


def main(argv):
    if len(argv) != 2:
        print("usage: stats_counters.py REPORT.json", file=sys.stderr)
        return 2
    try:
        with open(argv[1], encoding="utf-8") as report_file:
            report = json.load(report_file)
    except (OSError, ValueError) as error:
        print("no readable stats report: %s" % error)
        return 1
    if isinstance(report, dict) and report.get("streampool", {}).get("disabled") is True:
        print("streampool reports itself disabled (pass-through)")
        return 1
    found = counters(report, {})
    alloc = sum(v for k, v in found.items() if ALLOC.match(k))
    free = sum(v for k, v in found.items() if FREE.match(k))
    pool = sum(v for k, v in found.items() if POOL.match(k))
    print("alloc=%d free=%d pool=%d counters=%d" % (alloc, free, pool, alloc + free + pool))
    if alloc == 0 or free == 0:
        print("no allocation or no free went through streampool")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
