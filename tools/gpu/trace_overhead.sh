#!/usr/bin/env bash
# Tracing's cost on the same-stream pair on a GPU box: bench/trace/trace_overhead_bench through
# libstreampool.so over NVIDIA's driver and over the fake driver, three runs each, the fastest of 10
# repetitions per run (bench/trace/check_overhead.py), plus the cost of one time-stamp read.
#
#   tools/gpu/trace_overhead.sh BUILD_DIR [LIMIT]
#
# Writes $OUT/trace_overhead.log (or BUILD_DIR/trace_overhead.log). Exit status 0 when every run
# is within LIMIT (default 2.0).
set -u
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$(cd "${1:?usage: trace_overhead.sh BUILD_DIR [LIMIT]}" && pwd)
limit=${2:-2.0}
out=${OUT:-$build}
log=$out/trace_overhead.log
bench=$build/bench/trace/trace_overhead_bench
preload=$build/interpose/libstreampool.so
fake=$build/fakecuda/libcuda.so.1
status=0
: >"$log"
echo "driver: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1); cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)" | tee -a "$log"
for driver in nvidia fake; do
  for run in 1 2 3; do
    json=$(mktemp)
    if [[ $driver == fake ]]; then env_driver=(STREAMPOOL_LIBCUDA="$fake"); else env_driver=(); fi
    env LD_PRELOAD="$preload" "${env_driver[@]}" "$bench" --benchmark_repetitions=10 --benchmark_min_time=0.05 --benchmark_enable_random_interleaving=true \
      --benchmark_format=json --benchmark_out="$json" >/dev/null 2>>"$log"
    line=$(python3 "$repo/bench/trace/check_overhead.py" "$json" "$limit") || status=1
    stamp=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); t=[b['real_time'] for b in d['benchmarks'] if b.get('run_type')=='iteration' and 'Timestamp' in b['name']]; print(f'{min(t):.1f} ns' if t else 'n/a')" "$json")
    echo "$driver run $run: $line; one time-stamp read: $stamp" | tee -a "$log"
    rm -f "$json"
  done
done
echo "trace overhead: $([[ $status -eq 0 ]] && echo "within ${limit}x" || echo "over ${limit}x in some run")" | tee -a "$log"
exit $status
