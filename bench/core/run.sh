#!/usr/bin/env bash
# streampool's engine benchmarks (core_bench, on the in-memory doubles: no GPU).
#
#   bench/core/run.sh <outdir> [build-dir]
#
# Writes <outdir>/core-bench.json (Google Benchmark JSON) and <outdir>/core-bench-summary.md
# (summarize.py: ns per pair, frag_ratio, thread scaling, each against its target), and prints
# the summary. About a minute with the default min time. Instructions per call, which a loaded
# machine cannot make noisy: bench/core/instructions.py (callgrind; BM_GlibcMalloc64FreePair is the
# reference pair).
#
# Environment (all optional):
#   CORE_BENCH        the core_bench binary (default <build-dir>/bench/core/core_bench)
#   BENCH_MIN_TIME    seconds per benchmark, a plain number (default 0.5)
#   BENCH_EXTRA_ARGS  more Google Benchmark flags, e.g. --benchmark_repetitions=3 or a filter
#   SUMMARY_ARGS      flags for summarize.py, e.g. --require-targets (exit 1 on a missed target)
# Exit status: 0 when core_bench ran and every benchmark in it finished without an error;
# otherwise summarize.py's or core_bench's status.
set -u

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(cd "$script_dir/../.." && pwd)

if [[ $# -lt 1 || $# -gt 2 ]]; then
  echo "usage: $0 <outdir> [build-dir]" >&2
  exit 2
fi
outdir=$1
build_dir=${2:-$repo_root/build-bench}
binary=${CORE_BENCH:-$build_dir/bench/core/core_bench}
min_time=${BENCH_MIN_TIME:-0.5}
read -r -a extra_args <<<"${BENCH_EXTRA_ARGS:-}"
read -r -a summary_args <<<"${SUMMARY_ARGS:-}"
python=${PYTHON:-python3}

if [[ ! -x $binary ]]; then
  echo "$0: no core_bench at $binary (build it: ninja -C <build-dir> core_bench)" >&2
  exit 2
fi
mkdir -p "$outdir" || exit 2
json=$outdir/core-bench.json
summary=$outdir/core-bench-summary.md
# Never let an earlier run's file stand in for a run that fails now.
rm -f "$json" "$summary"

source "$repo_root/tools/benchmark-flags.sh"
min_time_flag=$(benchmark_min_time_flag "$min_time" "$binary")

"$binary" "$min_time_flag" --benchmark_out="$json" --benchmark_out_format=json \
  --benchmark_counters_tabular=true "${extra_args[@]}"
bench_status=$?
if [[ ! -s $json ]]; then
  echo "$0: core_bench wrote no JSON (exit status $bench_status)" >&2
  exit 1
fi

"$python" -B "$script_dir/summarize.py" "${summary_args[@]}" "$json" >"$summary"
summary_status=$?
cat "$summary"
if [[ $bench_status -ne 0 ]]; then
  echo "$0: core_bench exited with status $bench_status" >&2
  exit "$bench_status"
fi
exit "$summary_status"
