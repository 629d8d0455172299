#!/usr/bin/env bash
# Whether compute-sanitizer's memcheck sees a write past a pool block into its neighbour, on
# NVIDIA's pool, under streampool without NVTX registration and with it
# (src/interpose/hooks/insight/nvtx_registry.hpp), and what the registration costs per allocation.
#
#   BUILD=build-dir tools/gpu/nvtx_check.sh OUT_DIR
#
# BUILD (default build-gpu) holds interpose/libstreampool.so, and for the cost with an NVTX tool
# attached tests/interpose/fake_nvtx/libfake-nvtx-injection.so (built with the tests). Builds
# tools/gpu/nvtx_check.cu with nvcc and runs `compute-sanitizer --tool memcheck --nvtx yes` on:
#   a  overflow      NVIDIA's pool                          expected: missed (NVIDIA's pool, too, is
#                                                           one mapping to memcheck: measured)
#   b  overflow      streampool, STREAMPOOL_NVTX=0          expected: missed (one mapping to memcheck)
#   c  overflow      streampool, mode decided by itself     expected: caught (on under the sanitizer)
#   c1 overflow      streampool, STREAMPOOL_NVTX=1          expected: caught
#   d  queued-free   streampool, STREAMPOOL_NVTX=1          expected: clean (the kernel was queued
#                    before the free on the same stream)
#   e  other-stream  NVIDIA / streampool off / on           a use after free on another stream:
#                                                           expected caught / missed / caught
# Saves each output as OUT_DIR/<case>.txt and prints one line per case; then the cost: nvtx_check
# bench (1 MiB cudaMallocAsync + cudaFreeAsync pairs) without the sanitizer, on NVIDIA's pool and
# under streampool with STREAMPOOL_NVTX=0, =1 (no NVTX tool: each NVTX call returns at once) and =1
# with the fake injection as the tool (it records each call), the fastest of three runs each.
# Everything goes to OUT_DIR/nvtx_check.log too. Exit status 0 when a, b, c, c1, d and e-streampool-on are as expected.
set -u
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$(cd "${BUILD:-$repo/build-gpu}" && pwd) || { echo "FAIL nvtx-check: no build folder ${BUILD:-build-gpu}"; exit 1; }
out=$(mkdir -p "${1:?usage: BUILD=build-dir nvtx_check.sh OUT_DIR}" && cd "$1" && pwd)
log=$out/nvtx_check.log
: >"$log"
say() { echo "$*" | tee -a "$log"; }
preload=$build/interpose/libstreampool.so
injection=$build/tests/interpose/fake_nvtx/libfake-nvtx-injection.so
nvcc=${NVCC:-nvcc}
command -v "$nvcc" >/dev/null || nvcc=/usr/local/cuda/bin/nvcc
sanitizer=${COMPUTE_SANITIZER:-compute-sanitizer}
command -v "$sanitizer" >/dev/null || sanitizer=/usr/local/cuda/bin/compute-sanitizer
[[ -e $preload ]] || { say "FAIL nvtx-check: no $preload"; exit 1; }
"$nvcc" -arch=sm_90 -std=c++17 -O2 -lineinfo -o "$out/nvtx_check" "$repo/tools/gpu/nvtx_check.cu" >"$out/build.log" 2>&1 ||
  { say "FAIL nvtx-check: nvcc (see $out/build.log)"; exit 1; }
say "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1); $("$sanitizer" --version 2>/dev/null | grep -i version | head -1)"

status=0
# run_case NAME WHAT EXPECTED ENV...: the program's case WHAT under memcheck with the environment
# given (LD_PRELOAD unset unless given); EXPECTED is caught, missed or clean.
run_case() {
  local name=$1 what=$2 expected=$3
  shift 3
  timeout 600 "$sanitizer" --tool memcheck --nvtx yes --print-limit 20 \
    env -u LD_PRELOAD -u STREAMPOOL_NVTX "$@" "$out/nvtx_check" "$what" >"$out/$name.txt" 2>&1
  local rc=$?
  # Only memcheck's access errors count: the summary also counts the tool's warnings (an NVTX call
  # it refused is one), which say nothing of the write.
  local errors warnings
  errors=$(grep -Ec 'Invalid __global__ (write|read)' "$out/$name.txt")
  warnings=$(grep -Ec 'Warning: Call to nvtx' "$out/$name.txt")
  local seen
  if ! grep -q 'ERROR SUMMARY' "$out/$name.txt"; then
    seen="no summary (exit $rc)"
  elif [[ $errors -gt 0 ]]; then
    seen=caught
  elif [[ $expected == clean ]]; then
    seen=clean
  else
    seen=missed
  fi
  local verdict=UNEXPECTED
  [[ $seen == "$expected" ]] && verdict=as-expected
  local detail
  detail=$(grep -m1 -E 'second - first|queued-free:|other-stream:' "$out/$name.txt")
  local mode
  mode=$(grep -m1 -E 'NVTX memory registration on' "$out/$name.txt" >/dev/null && echo "registration on" || echo "registration off")
  say "$name $what: $seen ($errors invalid accesses, $warnings refused NVTX calls; $mode; expected $expected: $verdict) | $detail"
  [[ $verdict == as-expected ]]
}

sp=(LD_PRELOAD="$preload" STREAMPOOL_LOG=info)
run_case a-nvidia overflow missed || status=1
run_case b-streampool-off overflow missed "${sp[@]}" STREAMPOOL_NVTX=0 || status=1
run_case c-streampool-auto overflow caught "${sp[@]}" || status=1
run_case c1-streampool-on overflow caught "${sp[@]}" STREAMPOOL_NVTX=1 || status=1
run_case d-streampool-on queued-free clean "${sp[@]}" STREAMPOOL_NVTX=1 || status=1
run_case e-nvidia other-stream caught
run_case e-streampool-off other-stream missed "${sp[@]}" STREAMPOOL_NVTX=0
run_case e-streampool-on other-stream caught "${sp[@]}" STREAMPOOL_NVTX=1 || status=1
say "the injection compute-sanitizer names (the automatic mode's sign): $(grep -m1 -o 'NVTX_INJECTION64_PATH=[^ ]*' "$out/c-streampool-auto.txt")"

# The cost, without the sanitizer.
pairs=${PAIRS:-1000000}
fastest() {  # fastest NAME ENV...: ns per pair, the least of three runs
  local best=""
  for run in 1 2 3; do
    local ns
    ns=$(env -u LD_PRELOAD -u STREAMPOOL_NVTX -u NVTX_INJECTION64_PATH "$@" "$out/nvtx_check" bench "$pairs" 2>>"$log" |
      grep -Eo '[0-9.]+ ns per pair' | awk '{print $1}')
    [[ -n $ns ]] || continue
    if [[ -z $best ]] || awk -v a="$ns" -v b="$best" 'BEGIN {exit !(a < b)}'; then best=$ns; fi
  done
  echo "${best:-n/a}"
}
say "cost: $pairs pairs of 1 MiB (cudaMallocAsync + cudaFreeAsync), ns per pair, fastest of 3 runs"
say "  NVIDIA's pool:                          $(fastest)"
say "  streampool, STREAMPOOL_NVTX=0:          $(fastest LD_PRELOAD="$preload" STREAMPOOL_NVTX=0)"
say "  streampool, STREAMPOOL_NVTX=1, no tool: $(fastest LD_PRELOAD="$preload" STREAMPOOL_NVTX=1)"
if [[ -e $injection ]]; then
  say "  streampool, STREAMPOOL_NVTX=1, fake tool: $(fastest LD_PRELOAD="$preload" STREAMPOOL_NVTX=1 NVTX_INJECTION64_PATH="$injection")"
else
  say "  streampool with the fake tool: not measured (no $injection: build the tests)"
fi
say "$([[ $status -eq 0 ]] && echo PASS || echo FAIL) nvtx-check"
exit $status
