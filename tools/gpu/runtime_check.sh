#!/usr/bin/env bash
# Issue-sized GPU check of streampool's CUDA runtime and the tracer, in one or two device calls:
# builds once, then runs the chosen steps, each writing its own log under $OUT/<step>/.
#
#   tools/gpu/runtime_check.sh BUILD_DIR [STEP...]
#
# Steps (all when none is named, in this order):
#   examples      tools/gpu/cudart_check.sh: the runtime's tests, the examples linked to it with
#                 the CUDA libraries they map, the coverage table against NVIDIA's libcudart
#   conformance   tools/gpu/cudart_conformance.sh: the runtime conformance suite against NVIDIA's
#                 cudart and against streampool's
#   samples       tools/gpu/cudart_samples.sh: NVIDIA's cuda-samples built with each runtime
#   bench         tools/gpu/cudart_bench.sh: launches, copies, the allocation pair vs NVIDIA's cudart
#   torch         tools/gpu/torch_cudart_trial.sh: PyTorch's wheel with streampool's libcudart.so.13
#   trace         tools/gpu/trace_overhead.sh: tracing's cost on the same-stream pair
# Writes $OUT/runtime_check.txt (one line per step: PASS/FAIL, seconds) and $OUT/runtime_check.tgz
# (every step's files). Exit status 0 when every step passed.
set -u
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo" || exit 1
build=${1:?usage: runtime_check.sh BUILD_DIR [STEP...]}
shift
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(examples conformance samples bench torch trace)
out=${OUT:-$build/runtime-check}
mkdir -p "$out"
out=$(cd "$out" && pwd)
summary=$out/runtime_check.txt
# The tree's commit: STREAMPOOL_COMMIT when the caller knows it (a copied tree's .git may be stale).
echo "runtime check of ${STREAMPOOL_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo '?')} on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1), $(date -u +%FT%TZ)" >>"$summary"

if [ ! -e "$build/build.ninja" ]; then
  tools/setup.sh "$build" -DSTREAMPOOL_BUILD_BENCH=ON >"$out/setup.log" 2>&1
fi
start=$(date +%s)
cmake --build "$build" -j"$(nproc)" >"$out/build.log" 2>&1
echo "build: exit $? in $(( $(date +%s) - start )) s" | tee -a "$summary"

for step in "${steps[@]}"; do
  case $step in
    examples) command=(tools/gpu/cudart_check.sh "$build") ;;
    conformance) command=(tools/gpu/cudart_conformance.sh "$build") ;;
    samples) command=(tools/gpu/cudart_samples.sh "$build") ;;
    bench) command=(tools/gpu/cudart_bench.sh "$build") ;;
    torch) command=(tools/gpu/torch_cudart_trial.sh "$build") ;;
    trace) command=(tools/gpu/trace_overhead.sh "$build" 2.0) ;;
    *) echo "unknown step $step" | tee -a "$summary"; continue ;;
  esac
  mkdir -p "$out/$step"
  start=$(date +%s)
  OUT=$out/$step "${command[@]}" >"$out/$step/stdout.log" 2>&1
  rc=$?
  echo "$([ $rc -eq 0 ] && echo PASS || echo FAIL) $step (exit $rc, $(( $(date +%s) - start )) s)" | tee -a "$summary"
  tail -n 5 "$out/$step/stdout.log" | sed 's/^/    /' | tee -a "$summary"
done
tar -czf "$out/runtime_check.tgz" -C "$out" --exclude=runtime_check.tgz . 2>/dev/null
! grep -q '^FAIL' "$summary"
