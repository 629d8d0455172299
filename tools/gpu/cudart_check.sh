#!/usr/bin/env bash
# streampool's CUDA runtime (libstreampool_cudart.so, SONAME libcudart.so.13) on the GPU box:
# builds the runtime, its tests and the runtime examples (nvcc -cudart none, linked to it), runs the
# examples on NVIDIA's driver with no NVIDIA cudart in the process (each prints its
# /proc/self/maps lines of CUDA libraries), and writes the coverage table.
#
#   tools/gpu/cudart_check.sh [--fake] [BUILD_DIR]
#
# --fake: no GPU; everything runs over the fake driver (examples then check the launch record).
# Writes the log to $OUT/cudart_check.log (and prints it). Exits 1 if a step failed.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/script_log.sh" cudart_check.log . "$@"
[ -e "$build_dir/build.ninja" ] || run tools/setup.sh "$build_dir" -DSTREAMPOOL_BUILD_BENCH=OFF
run cmake --build "$build_dir" --target streampool_cudart streampool_fakecuda runtime_tests vector_add_async pool_threshold graph_replay \
  -j"$(nproc)"
if [ $fake -eq 1 ]; then
  export STREAMPOOL_LIBCUDA="$repo/$build_dir/fakecuda/libcuda.so.1"
  say "driver: fake ($STREAMPOOL_LIBCUDA)"
else
  unset STREAMPOOL_LIBCUDA
  say "driver: NVIDIA's ($(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1))"
fi
lib="$build_dir/runtime/libstreampool_cudart.so"
say "library: $(readelf -d "$lib" | grep SONAME)"
run env STREAMPOOL_LIBCUDA="$repo/$build_dir/fakecuda/libcuda.so.1" "$build_dir/tests/runtime/runtime_tests"
for example in vector_add_async pool_threshold graph_replay; do
  say "== $example (ldd: $(ldd "$build_dir/examples/cudart/$example" | grep -E 'cudart|libcuda' | tr -s ' \t' ' '))"
  run env STREAMPOOL_SHOW_MAPS=1 "$build_dir/examples/cudart/$example"
  if grep -q "maps: .*/libcudart.so" "$log"; then say "FAIL: an NVIDIA libcudart is mapped"; status=1; fi
done
if [ -e "${CUDA_HOME:-/usr/local/cuda}/lib64/libcudart.so.13" ]; then
  run python3 tools/cudart_coverage.py "${CUDA_HOME:-/usr/local/cuda}/lib64/libcudart.so.13" "$lib" "$out/cudart-coverage.md"
fi
say "cudart_check: $([ $status -eq 0 ] && echo PASS || echo FAIL)"
exit $status
