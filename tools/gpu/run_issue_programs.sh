#!/usr/bin/env bash
# The programs written for the reported breakages, each run twice: on NVIDIA's driver alone, then
# with LD_PRELOAD=libstreampool.so and STREAMPOOL_STATS=<file>. Same output format as
# run_programs.sh: a program passes when both runs exit 0 with identical standard outputs (after
# dropping lines that start with '#' and hex addresses), and, where the program's allocations go
# through the stream-ordered allocator, the stats report counts allocations and frees.
#
#   tools/gpu/run_issue_programs.sh [--fake] [BUILD_DIR]
#
#   torch_graphs            torch_graphs.py with PyTorch's default (caching) allocator: nothing
#                           reaches the pool family, so no counters are required
#   torch_graphs_async      the same with PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync
#   bindings_contexts       bindings_contexts.py (cuda.bindings.driver: created, pushed, popped,
#                           destroyed and primary contexts, reset, cycles, threads)
#   capture_patterns_static capture_patterns.cu with nvcc's default static cudart
#   capture_patterns_shared the same with -cudart shared
#
# Prints `PASS name counters=<n>`, `FAIL name <why>` (details on "  | " lines) or `SKIP name <why>`,
# then "issue programs: N failed"; exits 1 if any failed. Outputs are kept in
# BUILD_DIR/issue-programs/.
#
# --fake: no GPU. Builds capture_patterns (both cudarts) and syntax-checks the Python programs.
#
# Environment: STREAMPOOL_PRELOAD (default BUILD_DIR/interpose/libstreampool.so), PYTHON (default
# python3), NVCC, CUDA_HOME, PROGRAM_TIMEOUT (seconds per run, default by program).
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
fake=0
if [[ ${1:-} == --fake ]]; then
  fake=1
  shift
fi
build=${1:-$repo/build-gpu}
if [[ ! -d $build ]]; then
  echo "FAIL setup no build folder $build"
  exit 1
fi
build=$(cd "$build" && pwd)
work=$build/issue-programs
rm -rf "$work"
mkdir -p "$work"
python=${PYTHON:-python3}

preload=${STREAMPOOL_PRELOAD:-$build/interpose/libstreampool.so}
if [[ ! -f $preload ]]; then
  found=$(find "$build" -name libstreampool.so -type f 2>/dev/null | head -n 1)
  [[ -n $found ]] && preload=$found
fi
cuda_home=${CUDA_HOME:-/usr/local/cuda}
nvcc=${NVCC:-}
if [[ -z $nvcc ]]; then
  nvcc=$(command -v nvcc 2>/dev/null || true)
  [[ -z $nvcc && -x $cuda_home/bin/nvcc ]] && nvcc=$cuda_home/bin/nvcc
fi

failures=0
say_pass() { echo "PASS $1 counters=$2"; }
say_fail() {
  echo "FAIL $1 $2"
  failures=$((failures + 1))
}
say_skip() { echo "SKIP $1 $2"; }
details() { tail -n "${2:-8}" "$1" 2>/dev/null | sed 's/^/  | /'; }
normalise() { grep -v '^#' "$1" | sed -E 's/0x[0-9a-fA-F]{6,}/0xADDR/g'; }

# run_pair NAME TIMEOUT COUNTERS ENV... -- COMMAND...: the two runs and the checks. COUNTERS is
# "required" when the program's allocations must go through streampool, else "reported". ENV: NAME=VALUE
# to set, !NAME to unset (env takes its -u options before any assignment).
run_pair() {
  local name=$1 limit=${PROGRAM_TIMEOUT:-$2} counters_mode=$3
  shift 3
  local unset_env=() set_env=()
  while [[ $# -gt 0 && $1 != -- ]]; do
    if [[ $1 == !* ]]; then
      unset_env+=(-u "${1#!}")
    else
      set_env+=("$1")
    fi
    shift
  done
  shift
  local base=$work/$name.driver sp=$work/$name.streampool stats=$work/$name.stats.json
  timeout -k 10 "$limit" env -u LD_PRELOAD -u STREAMPOOL_LIBCUDA -u STREAMPOOL_STATS "${unset_env[@]}" \
    "${set_env[@]}" "$@" >"$base.out" 2>"$base.err"
  local base_rc=$?
  timeout -k 10 "$limit" env -u STREAMPOOL_LIBCUDA "${unset_env[@]}" "LD_PRELOAD=$preload" "STREAMPOOL_STATS=$stats" \
    "${set_env[@]}" "$@" >"$sp.out" 2>"$sp.err"
  local sp_rc=$?
  if [[ $base_rc -ne 0 ]]; then
    say_fail "$name" "driver-alone run exited $base_rc$([[ $base_rc -eq 124 ]] && echo " (timeout ${limit}s)")"
    details "$base.out" 6
    details "$base.err"
    return
  fi
  if [[ $sp_rc -ne 0 ]]; then
    say_fail "$name" "streampool run exited $sp_rc$([[ $sp_rc -eq 124 ]] && echo " (timeout ${limit}s)")"
    # The driver-alone output beside the streampool one: the first lines that differ say where.
    diff <(normalise "$base.out") <(normalise "$sp.out") | grep '^[<>]' | head -n 8 | sed 's/^/  | /'
    details "$sp.err"
    return
  fi
  if ! diff -u <(normalise "$base.out") <(normalise "$sp.out") >"$work/$name.diff"; then
    say_fail "$name" "outputs differ ($(grep -c '^[-+][^-+]' "$work/$name.diff") lines)"
    details "$work/$name.diff" 20
    return
  fi
  if [[ ! -s $base.out ]]; then
    say_fail "$name" "printed nothing"
    return
  fi
  local counted stats_rc
  counted=$("$python" "$here/stats_counters.py" "$stats" 2>&1)
  stats_rc=$?
  if [[ $stats_rc -ne 0 && $counters_mode == required ]]; then
    say_fail "$name" "stats: $(echo "$counted" | tail -n 1)"
    while IFS= read -r line; do echo "  | $line"; done <<<"$counted"
    return
  fi
  local number
  number=$(echo "$counted" | sed -n 's/.*counters=\([0-9]*\).*/\1/p' | head -n 1)
  say_pass "$name" "${number:-0}"
  echo "  | $(echo "$counted" | head -n 1); $(wc -l <"$base.out") identical lines"
}

if [[ $fake -eq 0 && ! -f $preload ]]; then
  echo "FAIL setup no libstreampool.so (looked for $preload; set STREAMPOOL_PRELOAD)"
  exit 1
fi

# 1. The Python programs.
python_programs=(
  "torch_graphs|torch_graphs.py|180|reported|!PYTORCH_CUDA_ALLOC_CONF"
  "torch_graphs_async|torch_graphs.py|180|required|PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync"
  "bindings_contexts|bindings_contexts.py|90|required"
)
for entry in "${python_programs[@]}"; do
  IFS='|' read -r -a fields <<<"$entry"
  name=${fields[0]}
  script=${fields[1]}
  if [[ $fake -eq 1 ]]; then
    if "$python" -c 'import ast, sys; ast.parse(open(sys.argv[1]).read(), sys.argv[1])' "$here/$script" \
      2>"$work/$name.compile.log"; then
      say_skip "$name" "syntax checked only; needs a GPU"
    else
      say_fail "$name" "does not parse"
      details "$work/$name.compile.log"
    fi
    continue
  fi
  run_pair "$name" "${fields[2]}" "${fields[3]}" "${fields[@]:4}" PYTHONUNBUFFERED=1 -- "$python" "$here/$script"
done

# 2. The capture program, with nvcc's default static cudart and with the shared one.
arch=sm_90
if [[ $fake -eq 0 ]]; then
  cap=$(timeout 30 nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d ' .')
  [[ $cap =~ ^[0-9]+$ ]] && arch=sm_$cap
fi
for cudart in static shared; do
  name=capture_patterns_$cudart
  if [[ -z $nvcc ]]; then
    say_fail "$name" "no nvcc"
    continue
  fi
  if ! "$nvcc" -O2 -std=c++17 -arch="$arch" -cudart "$cudart" "$here/capture_patterns.cu" -o "$work/$name" \
    >"$work/$name.build.log" 2>&1; then
    say_fail "$name" "nvcc build failed"
    details "$work/$name.build.log"
    continue
  fi
  if [[ $fake -eq 1 ]]; then
    say_skip "$name" "built for $arch; needs a GPU"
  else
    run_pair "$name" 90 required -- "$work/$name"
  fi
done

echo "issue programs: $failures failed"
[[ $failures -eq 0 ]]
