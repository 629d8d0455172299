#!/usr/bin/env python3
"""Reads trace_overhead_bench's JSON (--benchmark_format=json, with repetitions) and checks that a
same-stream pair while tracing costs at most LIMIT times a pair without (the fastest repetition of
each, so that a noisy neighbour on a shared machine does not decide). Usage: check_overhead.py JSON [LIMIT]"""
import json
import sys

def fastest(benchmarks, name):
    times = [b["real_time"] for b in benchmarks if b.get("run_name", b["name"]).endswith(name)
             and b.get("run_type", "iteration") == "iteration"]
    if not times:
        sys.exit(f"no results for {name}")
    return min(times)

def main():
    data = json.load(open(sys.argv[1]))
    limit = float(sys.argv[2]) if len(sys.argv) > 2 else 2.0
    off = fastest(data["benchmarks"], "TracingOff")
    on = fastest(data["benchmarks"], "TracingOn")
    ratio = on / off
    print(f"same-stream pair: {off:.1f} ns without a trace, {on:.1f} ns tracing: {ratio:.2f}x (limit {limit}x)")
    sys.exit(0 if ratio <= limit else 1)

if __name__ == "__main__":
    main()
