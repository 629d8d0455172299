#!/usr/bin/env bash
# streampool's CUDA runtime against NVIDIA's cudart on the GPU box: kernel launches, small copies and
# the cudaMallocAsync/cudaFreeAsync pair, one CUDA source (bench/cudart/cudart_bench.cu) run three
# ways, interleaved: linked to NVIDIA's cudart; the same binary under LD_PRELOAD=libstreampool.so;
# built with `nvcc -cudart none` and linked to libstreampool_cudart.so.
#
#   tools/gpu/cudart_bench.sh [--fake] [BUILD_DIR]        (from the repository root)
#
# Writes to $OUT (default BUILD_DIR/cudart-bench): cudart_bench.log (build, every run, the summary),
# cudart_bench.json (every run's figures) and cudart_bench.md (medians, ratios against NVIDIA's
# cudart from the same run, targets met or not). --fake: no GPU, everything over the fake driver
# (NVIDIA's cudart does not start there; its two configurations then show as failed runs and only
# streampool's runtime counts for the exit status).
# Environment: CUDART_BENCH_ROUNDS (default 7), CUDART_BENCH_MIN_TIME (seconds per workload and run,
# default 0.3), CUDART_BENCH_ONLY (only the workloads whose name holds it). Exit status: 0 when every run finished, 1 otherwise.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/script_log.sh" cudart_bench.log cudart-bench "$@"

[ -e "$build_dir/build.ninja" ] || { say "\$ tools/setup.sh $build_dir"; tools/setup.sh "$build_dir" >>"$log" 2>&1; }
# A folder configured without benchmarks (tools/gpu/cudart_check.sh makes one) gets them turned on.
if grep -q '^STREAMPOOL_BUILD_BENCH:BOOL=OFF' "$build_dir/CMakeCache.txt" 2>/dev/null; then
  say "\$ cmake -B $build_dir -DSTREAMPOOL_BUILD_BENCH=ON"
  cmake -S . -B "$build_dir" -DSTREAMPOOL_BUILD_BENCH=ON >>"$log" 2>&1
fi
say "\$ cmake --build $build_dir --target cudart_bench_nvidia cudart_bench_streampool streampool_preload streampool_fakecuda"
if ! cmake --build "$build_dir" --target cudart_bench_nvidia cudart_bench_streampool streampool_preload \
    streampool_fakecuda -j"$(nproc)" >>"$log" 2>&1; then
  say "cudart_bench: build failed (see $log)"
  exit 1
fi
if [ $fake -eq 1 ]; then
  say "driver: fake ($build_dir/fakecuda/libcuda.so.1)"
  fake_args=(--fake "$build_dir/fakecuda/libcuda.so.1")
else
  say "driver: NVIDIA's ($(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1))"
  fake_args=()
fi
for binary in cudart_bench_nvidia cudart_bench_streampool; do
  say "ldd $binary: $(ldd "$build_dir/bench/cudart/$binary" | grep -E 'cudart|libcuda' | tr -s ' \t' ' ' | tr '\n' ';')"
done
python3 -B bench/cudart/cudart_bench.py run "$build_dir" "$out" --rounds "${CUDART_BENCH_ROUNDS:-7}" \
  --min-time "${CUDART_BENCH_MIN_TIME:-0.3}" ${CUDART_BENCH_ONLY:+--only "$CUDART_BENCH_ONLY"} "${fake_args[@]}" 2>&1 | tee -a "$log"
status=${PIPESTATUS[0]}
say "cudart_bench: $([ "$status" -eq 0 ] && echo "every run finished" || echo "some runs failed") (exit $status)"
exit "$status"
