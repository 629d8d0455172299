#!/usr/bin/env bash
# The leak report (STREAMPOOL_LEAKS=1) of a CUDA program that leaks on purpose from two functions
# and frees one pointer twice (leak_check.cu), built with nvcc:
#   1. static cudart (nvcc's default) under LD_PRELOAD=$BUILD/interpose/libstreampool.so;
#   2. shared cudart (-cudart shared, as PyTorch links it) under the same preload: its cudaFreeAsync
#      is streampool's fast path, which hands the refused second free on to cudart's own function
#      (that asks the driver entry again): the double free must still be one line;
#   3. the same source linked with -cudart none against $BUILD/runtime/libstreampool_cudart.so.
# Each run's stderr (the text report) and STREAMPOOL_LEAKS_FILE (JSON) are saved in OUTDIR; one
# PASS/FAIL line per check.
#
#   BUILD=build tools/gpu/leak_check.sh OUTDIR
#
# Over the fake driver (no GPU), set STREAMPOOL_LIBCUDA to it; only the third run works there
# (NVIDIA's cudart needs NVIDIA's driver), so LEAK_CHECK_RUNS=cudart runs only that one.
set -u
out=$(mkdir -p "${1:?usage: BUILD=build leak_check.sh OUTDIR}" && cd "$1" && pwd)
build=$(cd "${BUILD:?set BUILD to the build folder}" && pwd)
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
runs=${LEAK_CHECK_RUNS:-static shared cudart}
status=0
step() { if [[ $2 == 0 ]]; then echo "PASS leaks $1"; else echo "FAIL leaks $1"; status=1; fi; }

# The checks of one run's text report ($1.err) and JSON ($1.json).
check_report() {
  local name=$1 err=$out/$1.err json=$out/$1.json
  grep -q "first free 0, second free 1" "$out/$name.out"; step "$name-double-free-returns-invalid-value" $?
  grep -q "streampool: leaks: 4 allocations (4390912 bytes) still live at exit, from 2 call sites" "$err"
  step "$name-four-live-from-two-sites" $?
  python3 - "$err" <<'PY'
import sys
text = open(sys.argv[1]).read()
model = text.find("4194304 bytes in 1 allocations at")
cache = text.find("196608 bytes in 3 allocations at")
ok = 0 <= model < cache and model < text.find("leak_from_model", model) < cache and text.find("leak_from_cache", cache) > cache
sys.exit(0 if ok else 1)
PY
  step "$name-sites-sorted-by-bytes-with-names" $?
  grep "leaks: double_free of" "$err" | grep -q "first freed at .*free_twice"; step "$name-double-free-reported-with-both-sites" $?
  [[ $(grep -c "leaks: double_free of" "$err") == 1 ]]; step "$name-double-free-reported-once" $?
  python3 -c "import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if r['live']['allocations']==4 and r['bad_frees']['double_free']==1 else 1)" "$json"
  step "$name-json-report" $?
}

if ! command -v nvcc >/dev/null; then echo "FAIL leaks nvcc-missing"; exit 1; fi
for run in $runs; do
  case $run in
    static)
      nvcc -O1 -g -Xlinker --export-dynamic -o "$out/leak_check_static" "$repo/tools/gpu/leak_check.cu" \
        >"$out/static.build" 2>&1; step static-builds $?
      env LD_PRELOAD="$build/interpose/libstreampool.so" STREAMPOOL_LEAKS=1 STREAMPOOL_LEAKS_FILE="$out/static.json" \
        "$out/leak_check_static" >"$out/static.out" 2>"$out/static.err"
      check_report static ;;
    shared)
      nvcc -O1 -g -cudart shared -Xlinker --export-dynamic -o "$out/leak_check_shared" \
        "$repo/tools/gpu/leak_check.cu" >"$out/shared.build" 2>&1; step shared-builds $?
      env LD_PRELOAD="$build/interpose/libstreampool.so" STREAMPOOL_LEAKS=1 STREAMPOOL_LEAKS_FILE="$out/shared.json" \
        "$out/leak_check_shared" >"$out/shared.out" 2>"$out/shared.err"
      check_report shared ;;
    cudart)
      nvcc -O1 -g -cudart none -Xlinker --export-dynamic -o "$out/leak_check_cudart" "$repo/tools/gpu/leak_check.cu" \
        -L"$build/runtime" -lstreampool_cudart -Xlinker -rpath="$build/runtime" >"$out/cudart.build" 2>&1
      step cudart-builds $?
      env STREAMPOOL_LEAKS=1 STREAMPOOL_LEAKS_FILE="$out/cudart.json" \
        "$out/leak_check_cudart" >"$out/cudart.out" 2>"$out/cudart.err"
      check_report cudart ;;
  esac
done
exit $status
