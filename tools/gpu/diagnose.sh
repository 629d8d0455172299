#!/usr/bin/env bash
# Diagnostics for the GPU box, after tools/gpu-check.sh has built into BUILD_DIR: what each
# entry point sees under streampool for one run of a program, with logging.
#   tools/gpu/diagnose.sh <build-dir> <out-file>
set -u
build=${1:?build dir}
out=${2:?out file}
preload=$build/interpose/libstreampool.so
work=$(mktemp -d)
{
  echo "== tools: $(command -v gdb perf eu-stack 2>/dev/null | tr '\n' ' ')"
  echo "== pool access for the owning device: NVIDIA's driver, then streampool"
  timeout 60 python3 tools/gpu/probe_pool_access.py 2>&1 | tail -8
  LD_PRELOAD=$preload timeout 60 python3 tools/gpu/probe_pool_access.py 2>&1 | tail -8
  echo "== jax under streampool, STREAMPOOL_LOG=debug"
  STREAMPOOL_LOG=debug STREAMPOOL_STATS=$work/jax.json LD_PRELOAD=$preload timeout 120 python3 tools/gpu/jax_async.py \
    >"$work/jax.out" 2>"$work/jax.err"
  echo "exit $?"
  grep -v "^  " "$work/jax.err" | grep -E "streampool|rror|Out of memory" | head -60
  echo "-- stats"; cat "$work/jax.json" 2>/dev/null | head -c 4000; echo
  for filter in 'pair_1MiB/' 'threads_pair_1MiB.*threads:16' 'cross_stream_event'; do
    for binary in gpu_bench_runtime gpu_bench_driver; do
      echo "== $binary $filter under streampool"
      STREAMPOOL_STATS=$work/b.json LD_PRELOAD=$preload timeout 60 "$build/bench/gpu/$binary" \
        --benchmark_filter="$filter" --benchmark_min_time=0.2s 2>&1 | tail -3
      python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print('calls', d.get('calls')); print('pools', [(p['reserved_high'], p['used_high']) for p in d['pools']])" "$work/b.json"
    done
  done
} >"$out" 2>&1
rm -rf "$work"
