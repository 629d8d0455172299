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
# shellcheck source=tools/gpu/program_pairs.sh
source "$here/program_pairs.sh"
pairs_setup issue-programs "$@"

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
