#!/usr/bin/env bash
# How far PyTorch's wheel gets with streampool's runtime (libstreampool_cudart.so) as its
# libcudart.so.13: first on LD_LIBRARY_PATH, and preloaded (see torch_cudart_trial.py for the modes,
# the steps and how the loader's search is shown).
#
#   tools/gpu/torch_cudart_trial.sh [--fake] [BUILD_DIR]        (from the repository root)
#
# Writes to $OUT (default BUILD_DIR/torch-cudart): torch_cudart_trial.log (everything),
# torch_cudart_missing.md (steps per mode, where each stops and why, the cudart functions torch
# imports that streampool lacks), torch_cudart_imports.txt (every imported name; then
#   python3 tools/cudart_coverage.py <NVIDIA libcudart.so.13> BUILD_DIR/runtime/libstreampool_cudart.so \
#     docs/cudart-coverage.md --needed-by PyTorch=torch_cudart_imports.txt
# marks them in the coverage table). --fake: no GPU and no torch; the symbol listing runs on this
# build's programs linked to a libcudart.so.13, over the fake driver. Exit status: 0 when the trial
# ran (whatever torch did), 1 when the build or the trial script failed.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/script_log.sh" torch_cudart_trial.log torch-cudart "$@"

[ -e "$build_dir/build.ninja" ] || { say "\$ tools/setup.sh $build_dir"; tools/setup.sh "$build_dir" >>"$log" 2>&1; }
targets=(streampool_cudart)
[ $fake -eq 1 ] && targets+=(streampool_fakecuda runtime_tests)
say "\$ cmake --build $build_dir --target ${targets[*]}"
if ! cmake --build "$build_dir" --target "${targets[@]}" -j"$(nproc)" >>"$log" 2>&1; then
  say "torch_cudart_trial: build failed (see $log)"
  exit 1
fi
scan=()
if [ $fake -eq 1 ]; then
  export STREAMPOOL_LIBCUDA="$repo/$build_dir/fakecuda/libcuda.so.1"
  say "driver: fake ($STREAMPOOL_LIBCUDA)"
  scan=("$build_dir/tests/runtime/runtime_tests")
else
  unset STREAMPOOL_LIBCUDA
  say "driver: NVIDIA's ($(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1))"
fi
say "runtime: $(readelf -d "$build_dir/runtime/libstreampool_cudart.so" | grep SONAME | tr -s ' ')"
python3 -B tools/gpu/torch_cudart_trial.py --runtime-dir "$build_dir/runtime" --out "$out" \
  --scan "${scan[@]}" 2>&1 | tee -a "$log"
status=${PIPESTATUS[0]}
# The coverage table with a column for what PyTorch imports (copy it to docs/cudart-coverage.md).
nvidia_cudart=${CUDA_HOME:-/usr/local/cuda}/lib64/libcudart.so.13
if [ $fake -eq 0 ] && [ "$status" -eq 0 ] && [ -e "$nvidia_cudart" ] && [ -s "$out/torch_cudart_imports.txt" ]; then
  python3 -B tools/cudart_coverage.py "$nvidia_cudart" "$build_dir/runtime/libstreampool_cudart.so" \
    "$out/cudart-coverage.md" --needed-by "PyTorch=$out/torch_cudart_imports.txt" 2>&1 | tee -a "$log"
fi
say "torch_cudart_trial: $([ "$status" -eq 0 ] && echo "ran" || echo "FAILED") (exit $status)"
[ "$status" -eq 0 ] || exit 1
