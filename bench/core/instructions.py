#!/usr/bin/env python3
"""Instructions per engine call under callgrind: a figure a loaded machine cannot make noisy.

    instructions.py [--core-bench PATH] [--filter REGEX]

Runs each core_bench benchmark once under `valgrind --tool=callgrind`, collecting only inside the
benchmark's own function, and prints for each the inclusive instructions per call of
Engine::allocate and Engine::free (per pair: their sum) and, for BM_GlibcMalloc64FreePair, of
malloc and free: the reference the same-stream pair is held to. Needs valgrind.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

BENCHMARKS = {
    "BM_GlibcMalloc64FreePair": ("malloc", "free"),
    "BM_AllocFree1MiBOneStream": ("streampool::core::Engine::allocate(", "streampool::core::Engine::free("),
    "BM_RandomSizes": ("streampool::core::Engine::allocate(", "streampool::core::Engine::free("),
    "BM_CrossStreamHandOff": ("streampool::core::Engine::allocate(", "streampool::core::Engine::free("),
}
CALLED = re.compile(r"^cfn=\((\d+)\)(?: (.*))?$")
NAMED = re.compile(r"^c?fn=\((\d+)\) (.*)$")


def calls_and_cost(path, wanted):
    """{name: (calls, inclusive Ir)} for the functions named exactly `wanted` (or starting with it)."""
    names, totals = {}, {}
    with open(path, encoding="utf-8", errors="replace") as handle:
        lines = handle.read().split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        named = NAMED.match(line)
        if named:
            names[named.group(1)] = named.group(2)
        called = CALLED.match(line)
        if called and i + 2 < len(lines) and lines[i + 1].startswith("calls="):
            name = names.get(called.group(1), "")
            calls = int(lines[i + 1].split()[0].split("=")[1])
            cost = int(lines[i + 2].split()[1])
            for prefix in wanted:
                if name == prefix or (prefix.endswith("(") and name.startswith(prefix)):
                    entry = totals.setdefault(prefix, [0, 0])
                    entry[0] += calls
                    entry[1] += cost
            i += 3
            continue
        i += 1
    return totals


def main():
    parser = argparse.ArgumentParser()
    here = os.path.dirname(os.path.abspath(__file__))
    parser.add_argument("--core-bench", default=os.path.join(here, "../../build/bench/core/core_bench"))
    parser.add_argument("--filter", default=".")
    parser.add_argument("--min-time", default="0.2", help="seconds of benchmark time (under valgrind: slow)")
    args = parser.parse_args()
    print("| benchmark | allocate Ir/call | free Ir/call | pair Ir |")
    print("| --- | ---: | ---: | ---: |")
    status = 0
    with tempfile.TemporaryDirectory() as scratch:
        for benchmark, (allocate, free) in BENCHMARKS.items():
            if not re.search(args.filter, benchmark):
                continue
            out = os.path.join(scratch, benchmark + ".callgrind")
            run = subprocess.run(
                ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", f"--toggle-collect=*{benchmark}*",
                 args.core_bench, f"--benchmark_filter=^{benchmark}$", f"--benchmark_min_time={args.min_time}"],
                capture_output=True, text=True, check=False)
            totals = calls_and_cost(out, (allocate, free)) if run.returncode == 0 and os.path.exists(out) else {}
            if allocate not in totals or free not in totals:
                print(f"| {benchmark} | failed | | |")
                status = 1
                continue
            per_allocate = totals[allocate][1] / totals[allocate][0]
            per_free = totals[free][1] / totals[free][0]
            print(f"| {benchmark} | {per_allocate:.0f} | {per_free:.0f} | {per_allocate + per_free:.0f} |")
    return status


if __name__ == "__main__":
    sys.exit(main())
