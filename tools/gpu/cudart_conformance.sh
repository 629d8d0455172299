#!/usr/bin/env bash
# The runtime conformance suite (tests/runtime_conformance) on the GPU box: builds it twice from the
# same sources, linked to NVIDIA's cudart (runtime_conformance_nvidia) and with `nvcc -cudart none`
# to streampool's runtime (runtime_conformance_streampool), runs both on NVIDIA's driver, and writes
# per-binary pass/fail counts, the tests whose results differ between the two runtimes and the CUDA
# libraries each binary maps (ldd, and /proc/self/maps printed by the ProcessMaps test). Fails if a
# test fails, or if an NVIDIA libcudart is mapped in the streampool-linked binary.
#
#   tools/gpu/cudart_conformance.sh [--fake] [BUILD_DIR]
#
# --fake: no GPU; only the streampool-linked binary runs, over the fake driver, without the suites
# that need kernel execution (*OnGpu), as CI runs it. (NVIDIA's cudart does not start over the fake
# driver: it needs the driver's private export tables.)
# Writes $OUT/cudart_conformance.log (and prints the summary). Exits 1 if a step failed.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/script_log.sh" cudart_conformance.log . "$@"
[ -e "$build_dir/build.ninja" ] || run tools/setup.sh "$build_dir" -DSTREAMPOOL_BUILD_BENCH=OFF
binaries=(runtime_conformance_streampool)
[ $fake -eq 1 ] || binaries+=(runtime_conformance_nvidia)
run cmake --build "$build_dir" --target streampool_fakecuda "${binaries[@]}" -j"$(nproc)" || {
  say "cudart_conformance: FAIL (build)"
  exit 1
}
filter=()
if [ $fake -eq 1 ]; then
  export STREAMPOOL_LIBCUDA="$repo/$build_dir/fakecuda/libcuda.so.1"
  filter=(--gtest_filter=-*OnGpu*)
  say "driver: fake ($STREAMPOOL_LIBCUDA); suites *OnGpu not run"
else
  unset STREAMPOOL_LIBCUDA
  say "driver: NVIDIA's ($(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1))"
fi

results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT
summary=()
for binary in "${binaries[@]}"; do
  path="$build_dir/tests/runtime_conformance/$binary"
  say "== $binary"
  say "ldd: $(ldd "$path" | grep -E 'cudart|libcuda' | tr -s ' \t' ' ' | tr '\n' ';')"
  say "\$ $path ${filter[*]}"
  timeout 600 "$path" "${filter[@]}" >"$results/$binary.out" 2>&1
  rc=$?
  cat "$results/$binary.out" >>"$log"
  say "  -> exit $rc"
  [ $rc -eq 0 ] || status=1
  grep -E '^\[       OK \] ' "$results/$binary.out" | sed -E 's/^\[       OK \] ([^ ]+).*/\1 pass/' >"$results/$binary.status"
  grep -E '^\[  FAILED  \] [^ ]+ \(' "$results/$binary.out" | sed -E 's/^\[  FAILED  \] ([^ ]+).*/\1 FAIL/' \
    >>"$results/$binary.status"
  sort -o "$results/$binary.status" "$results/$binary.status"
  passed=$(grep -c ' pass$' "$results/$binary.status")
  failed=$(grep -c ' FAIL$' "$results/$binary.status")
  summary+=("$binary: $passed passed, $failed failed (exit $rc)")
  if [ "$binary" = runtime_conformance_streampool ]; then
    if ldd "$path" | grep -E 'libcudart\.so' | grep -vq "$build_dir/runtime/"; then
      say "FAIL: ldd resolves libcudart.so.13 outside streampool's runtime folder"
      status=1
    fi
    if grep -qE '^mapped: .*/libcudart' "$results/$binary.out"; then
      say "FAIL: an NVIDIA libcudart is mapped in the streampool-linked binary"
      status=1
    fi
    if ! grep -qE '^mapped: .*/libstreampool_cudart' "$results/$binary.out"; then
      say "FAIL: streampool's runtime is not mapped in the streampool-linked binary"
      status=1
    fi
  fi
done

say "== summary"
for line in "${summary[@]}"; do say "$line"; done
if [ ${#binaries[@]} -eq 2 ]; then
  differences=$(join -a1 -a2 -e missing -o 0,1.2,2.2 "$results/runtime_conformance_nvidia.status" \
    "$results/runtime_conformance_streampool.status" | awk '$2 != $3')
  if [ -n "$differences" ]; then
    say "tests whose results differ (test, NVIDIA's cudart, streampool's):"
    say "$differences"
  else
    say "every test has the same result under both runtimes"
  fi
fi
say "cudart_conformance: $([ $status -eq 0 ] && echo PASS || echo FAIL)"
exit $status
