#!/usr/bin/env bash
# Real workloads under every allocator a user could pick (bench/workloads/README.md): PyTorch
# training, decoding and serving under its native allocator, expandable segments, NVIDIA's pool
# and streampool; JAX training under BFC, cuda_async and streampool; the engine replaying traces.
#
# Usage: tools/gpu/workloads.sh [--fake] [--smoke] [BUILD_DIR] [run_all.py options...]
#   BUILD_DIR   default build-gpu; configured and the preload library and the streampool command
#               built there when missing
#   --smoke     tiny sizes and one round: checks that every workload runs (a minute or two)
#   --fake      no GPU: bench/workloads/fake_workloads.py stands in for the frameworks, streampool's
#               configurations run over the fake driver, the real workload scripts are only
#               compiled; the replays are real
#   options     passed to bench/workloads/run_all.py, e.g. --pluggable, --rounds 5,
#               --streampool-setting STREAMPOOL_RELEASE=auto
# WORKLOADS_BUDGET (seconds, default 540) bounds the whole script, building included: the runs get
# what the build left, less 10 s for the archive. Results in $OUT (default BUILD_DIR/workloads),
# at most 5 files: workloads.md (the summary), workloads.json (every measurement), workloads.log
# (what ran), logs.tar.gz (each process's output, stats reports, the build log) and traces.tar (the
# traces of the traced processes, gzipped, at most 14 MiB).
set -uo pipefail
started=$(date +%s)
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
budget=${WORKLOADS_BUDGET:-540}
python=${PYTHON:-python3}
fake=0
smoke=0
while [[ ${1:-} == --fake || ${1:-} == --smoke ]]; do
  [[ $1 == --fake ]] && fake=1
  [[ $1 == --smoke ]] && smoke=1
  shift
done
build=build-gpu
if [[ $# -gt 0 && ${1:0:2} != -- ]]; then
  build=$1
  shift
fi
out=${OUT:-$build/workloads}
mkdir -p "$out/logs"
out=$(cd "$out" && pwd)
: >"$out/workloads.log"

targets=(streampool_preload streampool_cli)
[[ $fake == 1 ]] && targets+=(streampool_fakecuda)
[[ " $* " == *" --pluggable "* ]] && targets+=(streampool_alloc)
needed=("$build/interpose/libstreampool.so" "$build/bin/streampool")
[[ $fake == 1 ]] && needed+=("$build/fakecuda/libcuda.so.1")
[[ " $* " == *" --pluggable "* ]] && needed+=("$build/pluggable/libstreampool_alloc.so")
missing=0
for file in "${needed[@]}"; do [[ -e $file ]] || missing=1; done
if [[ $missing == 1 ]]; then
  echo "building ${targets[*]} in $build" | tee -a "$out/workloads.log"
  if ! { [[ -f $build/CMakeCache.txt ]] || (cd "$repo" && tools/setup.sh "$build" -DSTREAMPOOL_BUILD_BENCH=OFF); } \
       >"$out/logs/build.log" 2>&1 ||
     ! cmake --build "$build" -j "$(nproc)" --target "${targets[@]}" >>"$out/logs/build.log" 2>&1; then
    echo "FAIL build (logs/build.log):" | tee -a "$out/workloads.log"
    tail -n 20 "$out/logs/build.log" | tee -a "$out/workloads.log"
    tar -czf "$out/logs.tar.gz" -C "$out" logs && rm -rf "$out/logs"
    exit 1
  fi
fi
build=$(cd "$build" && pwd)
echo "build ready after $(( $(date +%s) - started )) s" | tee -a "$out/workloads.log"

options=()
[[ $smoke == 1 ]] && options+=(--smoke --rounds 1)
status=0
if [[ $fake == 1 ]]; then
  options+=(--fake)
  for script in "$repo"/bench/workloads/*.py; do
    if ! "$python" -c 'import sys; compile(open(sys.argv[1]).read(), sys.argv[1], "exec")' "$script" \
         2>>"$out/workloads.log"; then
      echo "FAIL $(basename "$script") does not compile" | tee -a "$out/workloads.log"
      status=1
    fi
  done
fi
left=$(( budget - ($(date +%s) - started) - 10 ))
"$python" "$repo/bench/workloads/run_all.py" --out "$out" --build "$build" --budget "$left" --python "$python" \
  "${options[@]}" "$@" || status=1
tar -czf "$out/logs.tar.gz" -C "$out" logs && rm -rf "$out/logs"
if [[ -d $out/traces ]]; then tar -cf "$out/traces.tar" -C "$out" traces && rm -rf "$out/traces"; fi
echo "finished after $(( $(date +%s) - started )) s; results in $out: $(cd "$out" && ls | tr '\n' ' ')" \
  | tee -a "$out/workloads.log"
exit $status
