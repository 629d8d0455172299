#!/usr/bin/env python3
"""Summarise streampool's GPU benchmarks: NVIDIA's pool against streampool's, in one run.

run.sh runs gpu_bench_runtime and gpu_bench_driver twice each, plain (NVIDIA's pool) and under
LD_PRELOAD=libstreampool.so (streampool's), and leaves four Google Benchmark JSON files:
    <outdir>/{runtime,driver}-{nvidia,streampool}.json
    compare.py <outdir> [--meta KEY=VALUE ...]
prints a Markdown summary and writes it to <outdir>/bench-summary.md: for each workload the
NVIDIA figure, the streampool figure, their ratio and the target it is held to, and the
thread-scaling table. A missing or crashed run leaves its cells as "missing"; the summary is
still written. --strict makes a missed or unmeasured target an exit status of 3.

Two checks used by ctest:
    compare.py --check-listing BINARY      the binary registers every workload summarised here
    compare.py --check-run BINARY --json OUT --expect-allocator {nvidia,streampool}
               [--preload LIB] [--set VAR=VALUE ...]
        runs every workload briefly (LD_PRELOAD only for the benchmark) and checks that it ran
        under the expected pool with no error and with the counters the summary reads.
"""

import argparse
import json
import math
import os
import subprocess
import sys

APIS = (("runtime", "Runtime API (cudart): gpu_bench_runtime"),
        ("driver", "Driver API (libcuda.so.1 entry points): gpu_bench_driver"))
MODES = ("nvidia", "streampool")
THREAD_COUNTS = (1, 2, 4, 8, 16)
SUMMARY_NAME = "bench-summary.md"

# Benchmark families (the names workloads.hpp registers) and how each is summarised.
# kind: "time"  - ns per iteration, speed-up = NVIDIA time / streampool time
#       "rate"  - aggregate pairs per second at the given thread count: the counter
#                 pairs_per_second (summed over threads), else 1e9 / real_time
#       "bytes" / "ratio" - a counter, ratio = streampool / NVIDIA
#       "ns"    - a counter of nanoseconds, ratio = streampool / NVIDIA (below 1: streampool faster)
# goal: (comparison, threshold) applied to the ratio shown in the row; None = no target.
ROWS = (
    dict(family="pair_1MiB", label="1 MiB alloc+free, one stream", kind="time", goal=(">=", 10.0)),
    dict(family="pair_1MiB_from_pool", label="1 MiB alloc+free from the default pool (FromPool entry)",
         kind="time", goal=None),
    dict(family="pair_256B", label="256 B alloc+free, one stream", kind="time", goal=None),
    dict(family="random_sizes", label="random sizes 256 B..16 MiB, 256 live, 200k ops, per alloc+free",
         kind="time", goal=(">=", 5.0)),
    dict(family="random_sizes", label="random sizes: peak reserved (RESERVED_MEM_HIGH)", kind="bytes",
         counter="peak_reserved", goal=("<=", 0.75)),
    dict(family="random_sizes", label="random sizes: peak used (USED_MEM_HIGH)", kind="bytes",
         counter="peak_used", goal=None),
    dict(family="random_sizes", label="random sizes: reserved_high / used_high", kind="ratio",
         counter="frag_ratio", goal=None),
    dict(family="threads_pair_1MiB", label="16 host threads, own streams: aggregate alloc+free pairs/s",
         kind="rate", threads=16, goal=(">=", 50.0)),
    dict(family="cross_stream_event", label="alloc s1, event record s1, wait s2, free s2", kind="time",
         goal=("<=", 1.0 / 3.0), as_time_fraction=True),
    dict(family="synchronized_pair_legacy", label="1 MiB alloc+free+synchronize, legacy default stream",
         kind="time", goal=None, optional=True),
    dict(family="pair_legacy", label="1 MiB alloc+free, legacy default stream, no blocking stream",
         kind="time", goal=None, optional=True),
    dict(family="pair_legacy_blocking_present", label="the same with a blocking stream in the process",
         kind="time", goal=None, optional=True),
    # Growth and release per GiB (the issue: never slower than NVIDIA's pool per GiB grown).
    dict(family="grow_release_1GiB_64MiB", label="grow 1 GiB in 64 MiB pieces: mapping (ns per GiB)",
         kind="ns", counter="grow_ns", goal=("<=", 1.0), optional=True),
    dict(family="grow_release_1GiB_64MiB", label="the same: free, synchronize, trim to 0 (ns per GiB)",
         kind="ns", counter="release_ns", goal=None, optional=True),
    dict(family="grow_release_1GiB_2MiB", label="grow 1 GiB in 2 MiB pieces: mapping (ns per GiB)",
         kind="ns", counter="grow_ns", goal=("<=", 1.0), optional=True),
    dict(family="grow_release_1GiB_2MiB", label="the same: free, synchronize, trim to 0 (ns per GiB)",
         kind="ns", counter="release_ns", goal=None, optional=True),
)
REQUIRED_FAMILIES = sorted({row["family"] for row in ROWS if not row.get("optional")})

TIME_UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


# ---------------------------------------------------------------- reading Google Benchmark JSON

def load_run(path):
    """(document, note) for one JSON file; document None when absent or unreadable.

    A benchmark that crashes leaves the file cut short after its last finished entry; that part
    is kept and the note says so."""
    if not os.path.exists(path):
        return None, "missing"
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    try:
        return json.loads(text), ""
    except json.JSONDecodeError:
        pass
    cut = text.rfind("\n    }")
    if cut >= 0:
        try:
            return json.loads(text[:cut + len("\n    }")] + "\n  ]\n}\n"), "partial: the run stopped early"
        except json.JSONDecodeError:
            pass
    return None, "unreadable"


def family_of(entry):
    return entry.get("run_name", entry.get("name", "")).split("/")[0]


def index_results(document):
    """{(family, threads): result} with result = dict(real_ns, counters, error).

    With repetitions the median aggregate is used; without them the single run."""
    results = {}
    if not document:
        return results
    for entry in document.get("benchmarks", []):
        run_type = entry.get("run_type", "iteration")
        if run_type == "aggregate" and entry.get("aggregate_name") != "median":
            continue
        key = (family_of(entry), int(entry.get("threads", 1)))
        if run_type == "iteration" and key in results and results[key].get("from_median"):
            continue
        error = None
        if entry.get("error_occurred") or entry.get("skipped"):
            error = entry.get("error_message") or entry.get("skip_message") or "skipped"
        scale = TIME_UNIT_NS.get(entry.get("time_unit", "ns"), 1.0)
        real_time = entry.get("real_time")
        results[key] = dict(
            real_ns=None if error or real_time is None else float(real_time) * scale,
            counters={name: value for name, value in entry.items() if isinstance(value, (int, float))},
            error=error,
            from_median=run_type == "aggregate")
    return results


def measure(results, row, threads=None):
    """(value, problem) of one row in one run; value None with a short reason when unmeasured."""
    key = (row["family"], threads or row.get("threads", 1))
    result = results.get(key)
    if result is None:
        return None, "missing"
    if result["error"]:
        return None, "error: " + result["error"]
    if row["kind"] == "rate" and result["counters"].get("pairs_per_second", 0) > 0:
        return float(result["counters"]["pairs_per_second"]), ""
    if row["kind"] in ("time", "rate"):
        real_ns = result["real_ns"]
        if not real_ns or real_ns <= 0:
            return None, "no time"
        return (real_ns if row["kind"] == "time" else 1e9 / real_ns), ""
    value = result["counters"].get(row["counter"])
    return (None, "no counter") if value is None else (float(value), "")


# ---------------------------------------------------------------- formatting

def format_value(kind, value, problem):
    if value is None:
        return problem
    if kind == "time":
        return f"{value:,.0f} ns" if value >= 100 else f"{value:.1f} ns"
    if kind == "rate":
        return f"{value / 1e6:.3g} M/s"
    if kind == "bytes":
        return f"{value / 1e6:,.0f} MB"
    if kind == "ns":
        return f"{value / 1e6:,.2f} ms" if value >= 1e6 else f"{value:,.0f} ns"
    return f"{value:.2f}"


def row_ratio(row, nvidia, streampool):
    """The number the row's target is about, or None."""
    if nvidia is None or streampool is None or nvidia <= 0 or streampool <= 0:
        return None
    if row["kind"] == "time":
        return streampool / nvidia if row.get("as_time_fraction") else nvidia / streampool
    return streampool / nvidia  # rate: speed-up; bytes/ratio: streampool relative to NVIDIA


def format_ratio(row, ratio):
    if ratio is None:
        return "n/a"
    if row["kind"] == "time" and row.get("as_time_fraction"):
        return f"{ratio:.2f}x the time ({1.0 / ratio:.1f}x faster)"
    if row["kind"] in ("time", "rate"):
        return f"{ratio:.1f}x faster" if ratio >= 1.0 else f"{ratio:.2f}x (slower)"
    if row["kind"] == "ns":
        return f"{ratio:.2f}x NVIDIA's time"
    return f"{ratio:.2f}x NVIDIA's"


def format_goal(row):
    goal = row["goal"]
    if goal is None:
        return "-"
    comparison, threshold = goal
    if row["kind"] == "time" and row.get("as_time_fraction"):
        return "<= 1/3 of the time" if math.isclose(threshold, 1 / 3) else f"{comparison} {threshold:.2f}x the time"
    if row["kind"] in ("time", "rate"):
        return f"{comparison} {threshold:g}x faster"
    return f"{comparison} {threshold:g}x NVIDIA's"


def goal_met(row, ratio):
    """"yes", "NO", "-" (no target) or "unmeasured"."""
    if row["goal"] is None:
        return "-"
    if ratio is None:
        return "unmeasured"
    comparison, threshold = row["goal"]
    met = ratio >= threshold if comparison == ">=" else ratio <= threshold * (1 + 1e-9)
    return "yes" if met else "NO"


def markdown_table(header, rows):
    def cell(value):
        return str(value).replace("|", "\\|").replace("\n", " ")
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(cell(value) for value in row) + " |" for row in rows]
    return lines


# ---------------------------------------------------------------- the summary

def context_of(document):
    return (document or {}).get("context", {})


def summarise(outdir, meta):
    """(markdown text, list of goal states) for the four runs under outdir."""
    lines = ["# streampool GPU benchmarks: NVIDIA's pool vs streampool's, same run", ""]
    for key, value in meta:
        lines.append(f"- {key}: {value}")
    runs = {}
    warnings = []
    for api, _ in APIS:
        for mode in MODES:
            name = f"{api}-{mode}.json"
            document, note = load_run(os.path.join(outdir, name))
            runs[(api, mode)] = index_results(document)
            context = context_of(document)
            if note:
                warnings.append(f"{name}: {note}")
            if document is not None and context.get("allocator") not in (None, mode):
                warnings.append(f"{name} ran with allocator={context.get('allocator')}, expected {mode}: "
                                "the preload did not take (or took where it should not); its figures are not "
                                f"{mode}'s")
            failed = sum(1 for result in runs[(api, mode)].values() if result["error"])
            if failed:
                warnings.append(f"{name}: {failed} benchmark(s) reported an error")
            if document is not None and context.get("build_type", "").lower() in ("debug", ""):
                warnings.append(f"{name}: benchmark built as '{context.get('build_type', '?')}'")
            if document is not None:
                version = context.get("streampool_version")
                lines.append(f"- {name}: cuDriverGetVersion {context.get('cuda_driver_version', '?')}, "
                             + (f"streampool {version}, " if version else "")
                             + f"{context.get('num_cpus', '?')} CPUs, {context.get('host_name', '?')}, "
                             f"{context.get('date', '?')}")
    lines += ["- time: wall clock per iteration (alloc+free pair unless said), one run of each binary per pool;",
              "  streams created non-blocking; default pool, RELEASE_THRESHOLD = UINT64_MAX, warmed up.",
              "- ratios: speed-up = NVIDIA time / streampool time; memory = streampool / NVIDIA."]
    for warning in warnings:
        lines.append(f"- **WARNING** {warning}")

    goal_states = []
    for api, title in APIS:
        nvidia_results, streampool_results = runs[(api, "nvidia")], runs[(api, "streampool")]
        table = []
        for row in ROWS:
            nvidia, nvidia_problem = measure(nvidia_results, row)
            streampool, streampool_problem = measure(streampool_results, row)
            if row.get("optional") and nvidia_problem == "missing" and streampool_problem == "missing":
                continue  # a workload neither binary has: runs of builds from before it was added
            ratio = row_ratio(row, nvidia, streampool)
            state = goal_met(row, ratio)
            if row["goal"] is not None:
                goal_states.append(state)
            table.append((row["label"], format_value(row["kind"], nvidia, nvidia_problem),
                          format_value(row["kind"], streampool, streampool_problem),
                          format_ratio(row, ratio), format_goal(row), state))
        lines += ["", f"## {title}", ""]
        lines += markdown_table(("workload", "NVIDIA", "streampool", "ratio", "target", "met"), table)

        scaling_row = next(row for row in ROWS if row["kind"] == "rate")
        scaling = []
        for threads in THREAD_COUNTS:
            nvidia, nvidia_problem = measure(nvidia_results, scaling_row, threads)
            streampool, streampool_problem = measure(streampool_results, scaling_row, threads)
            ratio = row_ratio(scaling_row, nvidia, streampool)
            scaling.append((threads, format_value("rate", nvidia, nvidia_problem),
                            format_value("rate", streampool, streampool_problem),
                            "n/a" if ratio is None else f"{ratio:.1f}x"))
        lines += ["", f"### Thread scaling ({api}): aggregate 1 MiB alloc+free pairs per second, "
                      "each thread its own stream", ""]
        lines += markdown_table(("threads", "NVIDIA", "streampool", "streampool / NVIDIA"), scaling)

    met = goal_states.count("yes")
    lines += ["", f"Targets met: {met} of {len(goal_states)}"
              + ("" if met == len(goal_states) else
                 f" ({goal_states.count('NO')} missed, {goal_states.count('unmeasured')} unmeasured)"), ""]
    return "\n".join(lines), goal_states


# ---------------------------------------------------------------- ctest checks

def listed_families(binary, env=None):
    listing = subprocess.run([binary, "--benchmark_list_tests"], capture_output=True, text=True, env=env,
                             check=False)
    if listing.returncode != 0:
        raise SystemExit(f"{binary} --benchmark_list_tests failed ({listing.returncode}): {listing.stderr}")
    names = [line.strip() for line in listing.stdout.splitlines() if line.strip()]
    return names


def check_listing(binary):
    names = listed_families(binary)
    families = {name.split("/")[0] for name in names}
    missing = [family for family in REQUIRED_FAMILIES if family not in families]
    thread_counts = {int(part.split(":")[1]) for name in names if name.startswith("threads_pair_1MiB/")
                     for part in name.split("/") if part.startswith("threads:")}
    missing += [f"threads_pair_1MiB threads:{count}" for count in THREAD_COUNTS if count not in thread_counts]
    if missing:
        print(f"{binary} does not register: {', '.join(missing)}", file=sys.stderr)
        return 1
    print(f"{binary} registers all {len(REQUIRED_FAMILIES)} summarised workloads and {len(THREAD_COUNTS)} "
          "thread counts")
    return 0


def min_time_flag(binary, seconds, env):
    """--benchmark_min_time in the form this Google Benchmark accepts ("0.2s" from 1.8, 0.2 before)."""
    errors = []
    for form in (f"{seconds}s", f"{seconds}"):
        flag = f"--benchmark_min_time={form}"
        probe = subprocess.run([binary, "--benchmark_list_tests", flag], capture_output=True, text=True, env=env,
                               check=False)
        if probe.returncode == 0:
            return flag
        errors.append(f"{flag}: exit {probe.returncode}: {probe.stderr.strip()}")
    raise SystemExit(f"{binary} does not list its benchmarks with either form of --benchmark_min_time:\n"
                     + "\n".join(errors))


def check_run(args):
    env = dict(os.environ)
    for assignment in args.set or []:
        name, _, value = assignment.partition("=")
        env[name] = value
    if args.preload:
        if not os.path.isfile(args.preload):
            raise SystemExit(f"no preload library {args.preload} (not built?)")
        env["LD_PRELOAD"] = args.preload
    command = [args.check_run, min_time_flag(args.check_run, "0.01", env), f"--benchmark_out={args.json}",
               "--benchmark_out_format=json"]
    finished = subprocess.run(command, env=env, check=False)
    if finished.returncode != 0:
        print(f"benchmark exited with {finished.returncode}", file=sys.stderr)
        return 1
    document, note = load_run(args.json)
    if document is None or note:
        print(f"{args.json}: {note}", file=sys.stderr)
        return 1
    problems = []
    allocator = context_of(document).get("allocator")
    if allocator != args.expect_allocator:
        problems.append(f"allocator is {allocator}, expected {args.expect_allocator}")
    results = index_results(document)
    for row in ROWS:
        for threads in (THREAD_COUNTS if row["kind"] == "rate" else (None,)):
            value, problem = measure(results, row, threads)
            if value is None or (row["kind"] != "ratio" and value <= 0):
                problems.append(f"{row['family']} ({row.get('counter', row['kind'])}"
                                f"{'' if threads is None else f', {threads} threads'}): {problem or value}")
    for problem in problems:
        print(problem, file=sys.stderr)
    if not problems:
        print(f"every workload ran under {allocator}; results in {args.json}")
    return 1 if problems else 0


# ---------------------------------------------------------------- command line

def parse_meta(pairs):
    meta = []
    for pair in pairs or []:
        key, separator, value = pair.partition("=")
        if not separator:
            raise SystemExit(f"--meta wants KEY=VALUE, got {pair!r}")
        meta.append((key, value))
    return meta


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("outdir", nargs="?", help="folder holding the four JSON runs")
    parser.add_argument("--meta", action="append", metavar="KEY=VALUE", help="a header line (repeatable)")
    parser.add_argument("--strict", action="store_true", help="exit 3 unless every target is met")
    parser.add_argument("--check-listing", metavar="BINARY")
    parser.add_argument("--check-run", metavar="BINARY")
    parser.add_argument("--json", help="--check-run: where the run's JSON goes")
    parser.add_argument("--expect-allocator", choices=MODES, default="streampool")
    parser.add_argument("--preload", help="--check-run: LD_PRELOAD for the benchmark only")
    parser.add_argument("--set", action="append", metavar="VAR=VALUE", help="--check-run: environment")
    args = parser.parse_args(argv)

    if args.check_listing:
        return check_listing(args.check_listing)
    if args.check_run:
        if not args.json:
            parser.error("--check-run needs --json")
        return check_run(args)
    if not args.outdir:
        parser.error("give the folder holding the JSON runs")
    text, goal_states = summarise(args.outdir, parse_meta(args.meta))
    with open(os.path.join(args.outdir, SUMMARY_NAME), "w", encoding="utf-8") as handle:
        handle.write(text)
    print(text)
    if args.strict and any(state != "yes" for state in goal_states):
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
