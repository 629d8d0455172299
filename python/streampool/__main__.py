"""`python -m streampool [--json]`: whether streampool serves this Python process, and its
statistics (as `streampool report` prints them; --json: the report itself)."""
import json
import sys

import streampool


def human(count):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if count < 1024 or unit == "TiB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024.0
    return str(count)


def main(argv):
    if argv not in ([], ["--json"]):
        print("usage: python -m streampool [--json]", file=sys.stderr)
        return 2
    if not streampool.active():
        loaded = streampool._symbol("streampool_version") is not None  # pylint: disable=protected-access
        print("streampool: loaded, passing everything through (STREAMPOOL_DISABLE)" if loaded else
              "streampool: not loaded in this process (run under LD_PRELOAD=libstreampool.so or `streampool run`)")
        return 1
    report = streampool.stats()
    if argv == ["--json"]:
        print(json.dumps(report, indent=1))
        return 0
    print(f"streampool {streampool.version()}: serving this process")
    print(f"  {'pool':<16} {'kind':<8} {'reserved':>12} {'peak':>12} {'used':>12} {'peak':>12}")
    for pool in report.get("pools", []):
        print(f"  {pool['handle']:<16} {pool['kind']:<8} {human(pool['reserved_current']):>12} "
              f"{human(pool['reserved_high']):>12} {human(pool['used_current']):>12} {human(pool['used_high']):>12}")
    served = report.get("served", {})
    print(f"  calls served: {served.get('allocations', 0)} allocations, {served.get('frees', 0)} frees")
    if served.get("trace"):
        print(f"  trace: {served['trace']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
