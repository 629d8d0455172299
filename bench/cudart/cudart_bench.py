#!/usr/bin/env python3
"""streampool's CUDA runtime against NVIDIA's cudart: launches, small copies, the allocation pair.

    cudart_bench.py run BUILD_DIR OUT_DIR [--rounds N] [--min-time S] [--only SUBSTRING] [--fake FAKE_LIBCUDA]
        Runs three configurations interleaved (nvidia preload streampool, nvidia preload ...):
          nvidia      cudart_bench_nvidia, NVIDIA's cudart on NVIDIA's driver
          preload     cudart_bench_nvidia under LD_PRELOAD=libstreampool.so
          streampool  cudart_bench_streampool (nvcc -cudart none, linked to libstreampool_cudart.so)
        and writes OUT_DIR/cudart_bench.json (every run) and OUT_DIR/cudart_bench.md (medians,
        ratios against NVIDIA's cudart measured in the same run, targets met or not).
        --fake: no GPU; every configuration runs over the given fake libcuda.so.1 (NVIDIA's cudart
        does not start there: only streampool's runtime must run for exit status 0).
    cudart_bench.py summarise RUNS_JSON
        Prints the Markdown summary of a cudart_bench.json.
    cudart_bench.py check BINARY [--expect-runtime streampool|nvidia]
        Runs BINARY briefly (environment as given) and checks that it ran every workload summarised
        here with no error, through the expected runtime (ctest, over the fake driver).

Targets (issue: the runtime library): launches and copies through streampool's runtime within 5% of
NVIDIA's cudart (time ratio <= 1.05); the allocation pair at least as fast as through the preload
(streampool's runtime time <= the preload's).
Exit status of `run`: 0 when every run finished, 1 otherwise (the summary is written either way).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

MODES = ("nvidia", "preload", "streampool")
LAUNCH_COPY_LIMIT = 1.05

# workload -> (label, target): "nvidia" = streampool / NVIDIA <= LAUNCH_COPY_LIMIT,
# "preload" = streampool / preload <= 1.0.
WORKLOADS = (
    ("launch_chevron", "empty<<<>>> x1000, one sync (ns per launch)", "nvidia"),
    ("launch_api", "cudaLaunchKernel x1000, one sync (ns per launch)", "nvidia"),
    ("launch_sync", "launch + cudaStreamSynchronize (ns per round trip)", "nvidia"),
    ("get_set_device", "cudaGetDevice + cudaSetDevice, same device (ns per pair)", "nvidia"),
    ("memcpy_h2d_pinned", "cudaMemcpy 4 KiB pinned -> device", "nvidia"),
    ("memcpy_d2h_pinned", "cudaMemcpy 4 KiB device -> pinned", "nvidia"),
    ("memcpy_h2d_pageable", "cudaMemcpy 4 KiB pageable -> device", "nvidia"),
    ("memcpy_d2h_pageable", "cudaMemcpy 4 KiB device -> pageable", "nvidia"),
    ("memcpy_d2d", "cudaMemcpy 4 KiB device -> device", "nvidia"),
    ("memcpy_async_h2d_pinned", "cudaMemcpyAsync 4 KiB pinned -> device x100, one sync", "nvidia"),
    ("memcpy_async_d2d", "cudaMemcpyAsync 4 KiB device -> device x100, one sync", "nvidia"),
    ("pair_1MiB", "cudaMallocAsync+cudaFreeAsync 1 MiB x1000, one sync (ns per pair)", "preload"),
    ("pair_random_sizes", "cudaMallocAsync+cudaFreeAsync 256 B..16 MiB x1000, one sync (ns per pair)", "preload"),
    ("pair_1MiB_kept", "the 1 MiB pair, pool kept (release threshold max)", "preload"),
    ("pair_random_sizes_kept", "the random-size pair, pool kept (release threshold max)", "preload"),
)


def configurations(build_dir, fake):
    """mode -> (argv prefix, environment) for one run of the benchmark."""
    bench = os.path.join(build_dir, "bench", "cudart")
    preload = os.path.join(build_dir, "interpose", "libstreampool.so")
    base = dict(os.environ)
    base.pop("LD_PRELOAD", None)
    base.pop("STREAMPOOL_LIBCUDA", None)
    nvidia_env, preload_env, streampool_env = dict(base), dict(base), dict(base)
    preload_env["LD_PRELOAD"] = preload
    if fake:
        fake = os.path.abspath(fake)
        # NVIDIA's cudart loads libcuda.so.1 by name; streampool's libraries take STREAMPOOL_LIBCUDA.
        nvidia_env["LD_LIBRARY_PATH"] = os.path.dirname(fake) + os.pathsep + base.get("LD_LIBRARY_PATH", "")
        for env in (nvidia_env, preload_env, streampool_env):
            env["CUDART_BENCH_FAKE_DRIVER"] = fake
        preload_env["STREAMPOOL_LIBCUDA"] = fake
        streampool_env["STREAMPOOL_LIBCUDA"] = fake
    return {
        "nvidia": (os.path.join(bench, "cudart_bench_nvidia"), nvidia_env),
        "preload": (os.path.join(bench, "cudart_bench_nvidia"), preload_env),
        "streampool": (os.path.join(bench, "cudart_bench_streampool"), streampool_env),
    }


def run_once(binary, env, min_time, timeout, only=None):
    """One run: (parsed JSON or None, stderr text, exit status). `only`: workloads whose name holds it."""
    try:
        done = subprocess.run([binary, "--min-time", str(min_time)] + (["--filter", only] if only else []), env=env, capture_output=True, text=True,
                              timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as error:
        return None, str(error), -1
    try:
        parsed = json.loads(done.stdout)
    except ValueError:
        parsed = None
    return parsed, done.stderr + ("" if parsed is not None else "\nstdout: " + done.stdout[-2000:]), done.returncode


def expected_runtime(mode, runtime_path):
    """Whether the library that answered cudaLaunchKernel is the one the mode means."""
    ours = "streampool" in os.path.basename(runtime_path or "")
    return ours if mode == "streampool" else (not ours and "cudart" in (runtime_path or ""))


def run(args):
    build_dir = os.path.abspath(args.build_dir)
    os.makedirs(args.out_dir, exist_ok=True)
    runs = []
    failures = 0
    commands = configurations(build_dir, args.fake)
    for round_index in range(args.rounds):
        for mode in MODES:
            binary, env = commands[mode]
            parsed, stderr, status = run_once(binary, env, args.min_time, args.timeout, args.only)
            ok = status == 0 and parsed is not None and parsed.get("ok", False)
            right_runtime = parsed is not None and expected_runtime(mode, parsed.get("runtime"))
            # Over the fake driver NVIDIA's cudart does not start (it needs cuGetExportTable): only
            # streampool's runtime has to run there.
            if (not ok or not right_runtime) and not (args.fake and mode != "streampool"):
                failures += 1
            runs.append(dict(mode=mode, round=round_index, status=status, ok=ok, right_runtime=right_runtime,
                             result=parsed, stderr=stderr[-4000:]))
            print(f"round {round_index} {mode}: exit {status}"
                  f"{'' if right_runtime else ' (WRONG RUNTIME: ' + str(parsed and parsed.get('runtime')) + ')'}",
                  flush=True)
            if stderr.strip():
                print("  | " + stderr.strip().replace("\n", "\n  | "), flush=True)
    document = dict(fake=bool(args.fake), rounds=args.rounds, min_time_s=args.min_time, runs=runs)
    with open(os.path.join(args.out_dir, "cudart_bench.json"), "w") as handle:
        json.dump(document, handle, indent=1)
    summary = summarise(document)
    with open(os.path.join(args.out_dir, "cudart_bench.md"), "w") as handle:
        handle.write(summary)
    print(summary)
    return 0 if failures == 0 else 1


def medians(document):
    """mode -> workload -> (median ns, [ns of each round]) over the runs that finished."""
    figures = {mode: {} for mode in MODES}
    for entry in document.get("runs", []):
        result = entry.get("result") or {}
        if entry.get("mode") not in figures or not entry.get("right_runtime", True):
            continue
        for name, ns in (result.get("workloads") or {}).items():
            figures[entry["mode"]].setdefault(name, []).append(float(ns))
    return {mode: {name: (statistics.median(values), values) for name, values in per.items()}
            for mode, per in figures.items()}


def cell(value):
    return "missing" if value is None else f"{value:,.0f}" if value >= 100 else f"{value:.1f}"


def ratio_cell(value):
    return "missing" if value is None else f"{value:.3f}"


def summarise(document):
    figures = medians(document)
    runtimes = {}
    for entry in document.get("runs", []):
        result = entry.get("result") or {}
        runtimes.setdefault(entry.get("mode"), result.get("runtime", "did not run"))
    lines = ["# streampool's CUDA runtime against NVIDIA's cudart", ""]
    lines.append(f"Driver: {'the fake driver (no GPU): the figures are the CPU cost of each runtime only' if document.get('fake') else 'NVIDIA'}; "
                 f"{document.get('rounds', '?')} rounds run interleaved (nvidia, preload, streampool, ...), "
                 f"each workload the best of three batches of {document.get('min_time_s', '?')}/3 s per run; "
                 "the table shows the median over rounds in ns per operation.")
    lines.append("")
    for mode in MODES:
        lines.append(f"- {mode}: cudaLaunchKernel from `{runtimes.get(mode, 'did not run')}`")
    lines.append("")
    lines.append("| workload | NVIDIA cudart | preload | streampool runtime | streampool / NVIDIA | preload / NVIDIA "
                 "| target | met |")
    lines.append("| --- | ---: | ---: | ---: | ---: | ---: | --- | --- |")
    met_all = True
    for name, label, target in WORKLOADS:
        values = {mode: figures[mode].get(name, (None, []))[0] for mode in MODES}
        ours_vs_nvidia = values["streampool"] / values["nvidia"] if values["streampool"] and values["nvidia"] else None
        preload_vs_nvidia = values["preload"] / values["nvidia"] if values["preload"] and values["nvidia"] else None
        if target == "nvidia":
            goal = f"streampool / NVIDIA <= {LAUNCH_COPY_LIMIT:.2f}"
            measured = ours_vs_nvidia
            met = measured is not None and measured <= LAUNCH_COPY_LIMIT
        else:
            measured = values["streampool"] / values["preload"] if values["streampool"] and values["preload"] else None
            goal = f"streampool <= preload ({ratio_cell(measured)})"
            met = measured is not None and measured <= 1.0
        met_all = met_all and met
        lines.append(f"| {name}: {label} | {cell(values['nvidia'])} | {cell(values['preload'])} "
                     f"| {cell(values['streampool'])} | {ratio_cell(ours_vs_nvidia)} | {ratio_cell(preload_vs_nvidia)} "
                     f"| {goal} | {'yes' if met else 'NO' if measured is not None else 'not measured'} |")
    lines.append("")
    lines.append(f"All targets met: {'yes' if met_all else 'no'}.")
    failed = [f"{entry.get('mode')} round {entry.get('round')}" for entry in document.get("runs", [])
              if not entry.get("ok") or not entry.get("right_runtime", True)]
    if failed:
        lines.append(f"Runs that failed or ran the wrong runtime (left out): {', '.join(failed)}.")
    return "\n".join(lines) + "\n"


def check(args):
    expected = "streampool" if args.expect_runtime == "streampool" else "nvidia"
    parsed, stderr, status = run_once(args.binary, dict(os.environ), 0.003, args.timeout)
    problems = []
    if status != 0 or parsed is None or not parsed.get("ok"):
        problems.append(f"exit {status}, ok={parsed and parsed.get('ok')}: {stderr.strip()[-1000:]}")
    else:
        if not expected_runtime(expected, parsed.get("runtime")):
            problems.append(f"cudaLaunchKernel came from {parsed.get('runtime')}, not {expected}'s runtime")
        ran = parsed.get("workloads", {})
        absent = [name for name, _, _ in WORKLOADS if not isinstance(ran.get(name), (int, float)) or ran[name] <= 0]
        if absent:
            problems.append("workloads without a figure: " + ", ".join(absent))
    for problem in problems:
        print("check: " + problem)
    print("check: " + ("ok" if not problems else "FAILED"))
    return 0 if not problems else 1


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    run_parser = commands.add_parser("run")
    run_parser.add_argument("build_dir")
    run_parser.add_argument("out_dir")
    run_parser.add_argument("--rounds", type=int, default=5)
    run_parser.add_argument("--min-time", type=float, default=0.3)
    run_parser.add_argument("--only", metavar="SUBSTRING", help="only the workloads whose name holds it")
    run_parser.add_argument("--timeout", type=float, default=120)
    run_parser.add_argument("--fake", metavar="FAKE_LIBCUDA")
    summary_parser = commands.add_parser("summarise")
    summary_parser.add_argument("runs_json")
    check_parser = commands.add_parser("check")
    check_parser.add_argument("binary")
    check_parser.add_argument("--expect-runtime", choices=("streampool", "nvidia"), default="streampool")
    check_parser.add_argument("--timeout", type=float, default=60)
    args = parser.parse_args(argv)
    if args.command == "run":
        return run(args)
    if args.command == "check":
        return check(args)
    with open(args.runs_json) as handle:
        sys.stdout.write(summarise(json.load(handle)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
