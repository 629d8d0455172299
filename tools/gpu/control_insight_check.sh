#!/usr/bin/env bash
# The control and insight checks on the GPU box, in one call: build, then the capture race in every
# mode (NVIDIA's driver alone and under streampool), the process cap with PyTorch and the
# benchmarks with and without it, a group cap shared by PyTorch processes with one killed, the
# exports read by the torch wheel's own memory viewer, the packages run from their unpacked
# trees, the out-of-memory report of PyTorch at a cap, the leak report of a program that leaks on
# purpose, compute-sanitizer catching an overflow between two pooled blocks, PyTorch and CuPy
# through the pluggable allocator library, and tens of thousands of group members killed with
# SIGKILL (over the fake driver: the box's cores fork fast). Each step's PASS/FAIL lines go to
# OUT/summary.txt, its logs into OUT/logs.tar.gz.
#
#   OUT=... tools/gpu/control_insight_check.sh [BUILD_DIR [STEP...]]
# STEPs (default: all, in this order): capture-race group cap export package oom leaks nvtx
# pluggable kills cudart (the runtime conformance suite against both runtimes). The build is incremental, so the steps can be split over calls that keep BUILD_DIR.
set -u
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo" || exit 2
out=${OUT:?set OUT}
build=${1:-build-gpu}
shift || true
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(capture-race group cap export package oom leaks nvtx pluggable kills cudart)
logs=$out/logs
mkdir -p "$logs"
summary=$out/summary.txt
{
  echo "date: $(date -u +%FT%TZ)  commit: ${STREAMPOOL_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /'
} >"$summary"
run_step() {  # NAME SECONDS COMMAND...
  local name=$1 seconds=$2 started=$SECONDS
  shift 2
  timeout "$seconds" "$@" >"$logs/$name.out" 2>&1
  local rc=$?
  grep -E '^(PASS|FAIL|SKIP|NOTE)' "$logs/$name.out" >>"$summary"
  echo "step $name: exit $rc in $((SECONDS - started)) s" >>"$summary"
}
tools/setup.sh "$build" >"$logs/build.out" 2>&1 && cmake --build "$build" -j"$(nproc)" >>"$logs/build.out" 2>&1
echo "step build: exit $?" >>"$summary"
for step in "${steps[@]}"; do
  case $step in
    capture-race) run_step capture-race 150 tools/gpu/capture_race.sh "$build" "$logs/capture-race" "" 100 ;;
    group) run_step group 120 tools/gpu/group_check.sh "$logs/group" "$build" ;;
    cap) run_step cap 240 tools/gpu/cap_check.sh "$logs/cap" "$build" ;;
    export) run_step export 150 tools/gpu/export_check.sh "$logs/export" "$build" ;;
    package) run_step package 100 tools/gpu/package_check.sh "$logs/package" "$build" ;;
    oom) run_step oom 240 env BUILD="$build" tools/gpu/oom_check.sh "$logs/oom" ;;
    leaks) run_step leaks 100 env BUILD="$build" tools/gpu/leak_check.sh "$logs/leaks" ;;
    nvtx) run_step nvtx 150 env BUILD="$build" tools/gpu/nvtx_check.sh "$logs/nvtx" ;;
    pluggable) run_step pluggable 200 env BUILD="$build" tools/gpu/pluggable_check.sh "$logs/pluggable" ;;
    kills) run_step kills 120 tools/gpu/group_kills.sh "$build" 8 10000 ;;
    cudart) mkdir -p "$logs/cudart" && run_step cudart 300 env OUT="$logs/cudart" tools/gpu/cudart_conformance.sh "$build" ;;
    *) echo "unknown step $step" >>"$summary" ;;
  esac
done
find "$logs" -name '*.trace' -size +4M -delete
tar -czf "$out/logs-${steps[0]}.tar.gz" -C "$out" logs && rm -rf "$logs"
cat "$summary"
