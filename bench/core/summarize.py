#!/usr/bin/env python3
"""Summarise core_bench's Google Benchmark JSON as a markdown table against the targets.

    summarize.py [--require-targets] core-bench.json

Per benchmark: ns per pair (1e9 / items_per_second; for the thread benchmarks that is the
aggregate rate, so ns of wall time per pair across all threads), frag_ratio where reported, the
thread-scaling ratio (N-thread aggregate / 1-thread aggregate), and the target with met / not
met. A thread-count target is "n/a" when the machine has fewer CPUs than threads: the 16-thread
target is meant for a machine with at least 16 cores. The same-stream pair is also held to glibc's
malloc(64)+free pair of the same run (BM_GlibcMalloc64FreePair): at most 1.5x.

With --benchmark_repetitions the median aggregate is used when present, else the median of the
repetitions. Exit status: 0 when the table was written and every benchmark ran without an error
(targets missed on a small machine are reported, not fatal); 1 when a benchmark reported an
error or a summarised one is missing; with --require-targets also 1 when a target is not met.
"""

import argparse
import json
import re
import statistics
import sys

# Single-thread benchmarks and their ns-per-pair limits.
NS_TARGETS = {
    "BM_AllocFree1MiBOneStream": 40.0,
    "BM_RandomSizes": 120.0,
}
# The same-stream pair against glibc's malloc(64)+free pair measured in the same run.
REFERENCE_PAIR = "BM_GlibcMalloc64FreePair"
REFERENCE_TARGET = ("BM_AllocFree1MiBOneStream", 1.5)
FRAG_TARGET = 1.10
NVIDIA_FRAG = 1.59
SCALING_TARGETS = {16: 8.0}  # threads -> minimum N-thread / 1-thread aggregate ratio
THREAD_FAMILIES = ("BM_ThreadsOwnStreams", "BM_ThreadsOwnStreams4KiB", "BM_GlibcMalloc64FreePairThreads")
# Thread rows that measure the machine, not streampool: listed, held to no target.
REFERENCE_THREAD_FAMILIES = ("BM_GlibcMalloc64FreePairThreads",)
REQUIRED = list(NS_TARGETS) + [f"{THREAD_FAMILIES[0]}/threads:{n}" for n in (1, 2, 4, 8, 16)]


def load(path):
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def family_and_threads(run_name):
    """'BM_X/real_time/threads:4' -> ('BM_X', 4); 'BM_X' -> ('BM_X', 1)."""
    match = re.search(r"/threads:(\d+)$", run_name)
    threads = int(match.group(1)) if match else 1
    family = run_name.split("/")[0]
    return family, threads


def collect(benchmarks):
    """(family, threads) -> {"items_per_second", "frag_ratio", ...}, plus the errors seen."""
    iterations, medians, errors = {}, {}, []
    for entry in benchmarks:
        run_name = entry.get("run_name", entry.get("name", ""))
        key = family_and_threads(run_name)
        if entry.get("error_occurred"):
            errors.append(f"{entry.get('name')}: {entry.get('error_message', 'error')}")
            continue
        if entry.get("run_type") == "aggregate":
            if entry.get("aggregate_name") == "median":
                medians[key] = entry
            continue
        iterations.setdefault(key, []).append(entry)
    results = {}
    for key in set(iterations) | set(medians):
        if key in medians:
            picked = medians[key]
            results[key] = {k: v for k, v in picked.items() if isinstance(v, (int, float))}
        else:
            runs = iterations[key]
            fields = {k for run in runs for k, v in run.items() if isinstance(v, (int, float))}
            results[key] = {k: statistics.median(r[k] for r in runs if k in r) for k in fields}
    return results, errors


def ns_per_pair(result):
    rate = result.get("items_per_second", 0.0)
    return 1e9 / rate if rate > 0 else float("nan")


def verdict(met):
    return "met" if met else "**not met**"


def summarize(data, out):
    context = data.get("context", {})
    cpus = int(context.get("num_cpus", 0))
    results, errors = collect(data.get("benchmarks", []))
    missed, problems = [], list(errors)

    out.append("# streampool engine benchmarks (core_bench, in-memory doubles)")
    out.append("")
    build = context.get("streampool_build_type", "unknown")
    out.append(f"Host: {context.get('host_name', '?')}, {cpus} CPUs at {context.get('mhz_per_cpu', '?')} MHz, "
               f"streampool build {build}, run {context.get('date', '?')}.")
    if build != "Release":
        out.append("")
        out.append(f"WARNING: streampool was built as {build}, not Release: the numbers are not representative.")
    out.append("")
    out.append("| benchmark | ns per pair | M pairs/s | frag_ratio | vs 1 thread | target | result |")
    out.append("| --- | ---: | ---: | ---: | ---: | --- | --- |")

    for name, limit in NS_TARGETS.items():
        result = results.get((name, 1))
        if result is None:
            problems.append(f"{name}: missing")
            out.append(f"| {name} | - | - | - | - | <= {limit:g} ns | missing |")
            continue
        ns = ns_per_pair(result)
        rate = result.get("items_per_second", 0.0) / 1e6
        frag = result.get("frag_ratio")
        frag_text = f"{frag:.3f}" if frag is not None else "-"
        met = ns <= limit
        if not met:
            missed.append(f"{name}: {ns:.1f} ns > {limit:g} ns")
        out.append(f"| {name} | {ns:.1f} | {rate:.2f} | {frag_text} | - | <= {limit:g} ns | {verdict(met)} |")
        if frag is not None:
            met = frag <= FRAG_TARGET
            if not met:
                missed.append(f"{name}: frag_ratio {frag:.3f} > {FRAG_TARGET}")
            peaks = (f"peak reserved {result.get('peak_reserved_mib', float('nan')):.0f} MiB / "
                     f"used {result.get('peak_used_mib', float('nan')):.0f} MiB, "
                     f"{result.get('map_calls', float('nan')):.0f} maps")
            out.append(f"| {name} (fragmentation) | - | - | {frag:.3f} | - | frag_ratio <= {FRAG_TARGET:.2f} "
                       f"(NVIDIA {NVIDIA_FRAG}); {peaks} | {verdict(met)} |")

    reference = results.get((REFERENCE_PAIR, 1))
    pair = results.get((REFERENCE_TARGET[0], 1))
    if reference is not None and pair is not None:
        ratio = ns_per_pair(pair) / ns_per_pair(reference)
        limit = REFERENCE_TARGET[1]
        met = ratio <= limit
        if not met:
            missed.append(f"{REFERENCE_TARGET[0]}: {ratio:.2f}x glibc's pair > {limit:g}x")
        out.append(f"| {REFERENCE_TARGET[0]} / {REFERENCE_PAIR} ({ns_per_pair(reference):.1f} ns) | - | - | - | "
                   f"{ratio:.2f}x | <= {limit:g}x glibc's malloc(64)+free | {verdict(met)} |")

    for family in THREAD_FAMILIES:
        counts = sorted(threads for (fam, threads) in results if fam == family)
        if not counts:
            if family == THREAD_FAMILIES[0]:
                problems.append(f"{family}: missing")
            continue
        base = results.get((family, 1))
        base_rate = base.get("items_per_second", 0.0) if base else 0.0
        for threads in counts:
            result = results[(family, threads)]
            rate = result.get("items_per_second", 0.0)
            ratio = rate / base_rate if base_rate > 0 else float("nan")
            target, status = "-", "-"
            if threads in SCALING_TARGETS and family not in REFERENCE_THREAD_FAMILIES:
                limit = SCALING_TARGETS[threads]
                target = f">= {limit:g}x (on >= {threads} cores)"
                if cpus and cpus < threads:
                    status = f"n/a ({cpus} CPUs)"
                else:
                    status = verdict(ratio >= limit)
                    if ratio < limit:
                        missed.append(f"{family}/threads:{threads}: {ratio:.2f}x < {limit:g}x")
            out.append(f"| {family}/threads:{threads} | {ns_per_pair(result):.1f} | {rate / 1e6:.2f} | - | "
                       f"{ratio:.2f}x | {target} | {status} |")

    for name in REQUIRED:
        family, threads = family_and_threads(name)
        if (family, threads) not in results and f"{name}: missing" not in problems and f"{family}: missing" not in problems:
            problems.append(f"{name}: missing")

    out.append("")
    out.append("ns per pair = 1e9 / items_per_second: one alloc + free; for the thread rows, wall time per pair "
               "of the aggregate. BM_RandomSizes: one operation = free a random slot + allocate the next size.")
    if missed:
        out.append("")
        out.append("Targets not met: " + "; ".join(missed) + ".")
    if problems:
        out.append("")
        out.append("Problems: " + "; ".join(problems) + ".")
    return missed, problems


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("json", help="core_bench --benchmark_out JSON")
    parser.add_argument("--require-targets", action="store_true", help="exit 1 when a target is not met")
    args = parser.parse_args(argv)
    try:
        data = load(args.json)
    except (OSError, ValueError) as error:
        print(f"summarize.py: cannot read {args.json}: {error}", file=sys.stderr)
        return 1
    out = []
    missed, problems = summarize(data, out)
    print("\n".join(out))
    if problems:
        return 1
    if args.require_targets and missed:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
