#!/usr/bin/env bash
# streampool's GPU benchmarks: NVIDIA's pool against streampool's, in one run on one machine.
#
#   bench/gpu/run.sh <outdir> [build-dir]
#
# Runs gpu_bench_runtime and gpu_bench_driver from <build-dir>/bench/gpu twice each: plain (NVIDIA's
# pool) and with LD_PRELOAD=libstreampool.so (streampool's pool), writes
#   <outdir>/{runtime,driver}-{nvidia,streampool}.json   (Google Benchmark JSON)
#   <outdir>/bench-summary.md                             (compare.py: ratios against the targets)
# and prints the summary. Takes well under two minutes on an H200 box.
#
# Environment (all optional):
#   STREAMPOOL_PRELOAD   libstreampool.so to preload (default <build-dir>/interpose/libstreampool.so)
#   BENCH_MIN_TIME       seconds per benchmark, a plain number (default 0.2)
#   BENCH_RUN_TIMEOUT    seconds before one run is killed (default 240)
#   BENCH_EXTRA_ARGS     more Google Benchmark flags, e.g. --benchmark_repetitions=3
# Exit status: 0 when all four runs finished and the summary was written, 1 otherwise (the
# summary is still written from whatever ran).
set -u

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(cd "$script_dir/../.." && pwd)

if [[ $# -lt 1 || $# -gt 2 ]]; then
  echo "usage: $0 <outdir> [build-dir]" >&2
  exit 2
fi
outdir=$1
build_dir=${2:-$repo_root/build-gbench}
min_time=${BENCH_MIN_TIME:-0.2}
run_timeout=${BENCH_RUN_TIMEOUT:-240}
read -r -a extra_args <<<"${BENCH_EXTRA_ARGS:-}"
invocation="$0 $*"

if [[ ! -d $build_dir ]]; then
  echo "$0: no build folder $build_dir" >&2
  exit 2
fi
build_dir=$(cd "$build_dir" && pwd)
bench_dir=$build_dir/bench/gpu
preload=${STREAMPOOL_PRELOAD:-$build_dir/interpose/libstreampool.so}
if [[ ! -f $preload ]]; then
  found=$(find "$build_dir" -name libstreampool.so -type f 2>/dev/null | head -n 1)
  [[ -n $found ]] && preload=$found
fi

mkdir -p "$outdir" || exit 2
outdir=$(cd "$outdir" && pwd)
preload=$(readlink -f "$preload" 2>/dev/null || echo "$preload")
# Never let an earlier run's file stand in for a run that fails now.
rm -f "$outdir"/{runtime,driver}-{nvidia,streampool}.json "$outdir/bench-summary.md"

source "$repo_root/tools/benchmark-flags.sh"
min_time_flag() {
  local binary=$1
  shift
  benchmark_min_time_flag "$min_time" "$binary" "$@"
}

failures=0
bench_flags=""
# run_one <api> <mode>: one binary under one pool.
run_one() {
  local api=$1 mode=$2
  local binary=$bench_dir/gpu_bench_$api
  local json=$outdir/$api-$mode.json
  local environment=(-u LD_PRELOAD)
  if [[ $mode == streampool ]]; then
    if [[ ! -f $preload ]]; then
      echo "=== $api / $mode: skipped, no libstreampool.so (looked for $preload; set STREAMPOOL_PRELOAD)" >&2
      failures=$((failures + 1))
      return
    fi
    environment=("LD_PRELOAD=$preload")
  fi
  if [[ ! -x $binary ]]; then
    echo "=== $api / $mode: skipped, $binary not built (ninja -C $build_dir gpu_bench_runtime gpu_bench_driver)" >&2
    failures=$((failures + 1))
    return
  fi
  local flags=("$(min_time_flag "$binary" "${environment[@]}")" "--benchmark_out=$json" --benchmark_out_format=json
               "${extra_args[@]}")
  bench_flags="${flags[0]} ${extra_args[*]}"
  echo "=== $api / $mode: env ${environment[*]} $binary ${flags[*]}"
  local started=$SECONDS
  # The preload goes to the benchmark only, not to timeout.
  timeout -k 10 "$run_timeout" env "${environment[@]}" "$binary" "${flags[@]}"
  local status=$?
  echo "=== $api / $mode: exit $status after $((SECONDS - started)) s"
  [[ $status -eq 0 ]] || failures=$((failures + 1))
}

for api in runtime driver; do
  run_one "$api" nvidia
  run_one "$api" streampool
done

driver_version=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n 1)
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
# STREAMPOOL_COMMIT first: a machine given a copy of the working tree may carry a .git of an older
# checkout, whose HEAD is not what was built.
if [[ -n ${STREAMPOOL_COMMIT:-} ]]; then
  commit=$STREAMPOOL_COMMIT
else
  commit=$(git -C "$repo_root" rev-parse --verify -q HEAD 2>/dev/null || echo "unknown (no commit)")
  if [[ -n $(git -C "$repo_root" status --porcelain 2>/dev/null | head -n 1) ]]; then
    commit="$commit (working tree has uncommitted changes)"
  fi
fi

python3 "$script_dir/compare.py" "$outdir" \
  --meta "date=$(date -u '+%Y-%m-%d %H:%M:%S UTC')" \
  --meta "commit=$commit" \
  --meta "command=$invocation (each binary: plain, then LD_PRELOAD=$preload; flags: ${bench_flags:-none})" \
  --meta "driver=${driver_version:-unknown (no nvidia-smi; see cuDriverGetVersion below)}" \
  --meta "GPU=${gpu_name:-unknown}" \
  --meta "host=$(hostname), $(nproc) CPUs"
compare_status=$?

echo "summary: $outdir/bench-summary.md"
if [[ $compare_status -ne 0 || $failures -ne 0 ]]; then
  echo "$failures of 4 runs failed or were skipped; compare.py exit $compare_status" >&2
  exit 1
fi
exit 0
