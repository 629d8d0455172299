#!/usr/bin/env bash
# Real programs, each run twice: on NVIDIA's driver alone, then with LD_PRELOAD=libstreampool.so
# and STREAMPOOL_STATS=<file>. A program passes when both runs exit 0, their standard outputs are
# identical (after dropping lines that start with '#', which no program prints today, and any hex
# address), and the stats report counts allocations and frees that went through streampool.
#
#   tools/gpu/run_programs.sh [--fake] [BUILD_DIR]
#
# Prints one line per program: `PASS name counters=<n>`, `FAIL name <why>` or `SKIP name <why>`
# (details of a failure follow on lines starting with "  | "). Runs every program, then exits 1
# if any failed.
#
# --fake: no GPU. Runs the C driver-API program under streampool over the fake driver twice
# (with and without STREAMPOOL_STATS: there is no "driver alone" without a GPU), builds the CUDA
# sample and syntax-checks the Python programs without running them.
#
# Environment: STREAMPOOL_PRELOAD (default BUILD_DIR/interpose/libstreampool.so),
# STREAMPOOL_FAKE_LIB (default BUILD_DIR/fakecuda/libcuda.so.1), PYTHON (default python3),
# NVCC, CUDA_HOME, PROGRAM_TIMEOUT (seconds per run, default by program).
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tools/gpu/program_pairs.sh
source "$here/program_pairs.sh"
pairs_setup gpu-programs "$@"

if [[ ! -f $preload ]]; then
  echo "FAIL setup no libstreampool.so (looked for $preload; set STREAMPOOL_PRELOAD)"
  exit 1
fi
if [[ $fake -eq 1 && ! -f $fake_lib ]]; then
  echo "FAIL setup no fake driver at $fake_lib (set STREAMPOOL_FAKE_LIB)"
  exit 1
fi

# 1. The plain C driver-API program: the only one that also runs on the fake driver.
if [[ -f $stub ]] && cc -O2 -std=c11 -I"$cuda_home/include" "$here/driver_pool_demo.c" "$stub" \
  -o "$work/driver_pool_demo" 2>"$work/driver_pool_demo.build.log"; then
  run_pair driver_pool_demo 45 required -- "$work/driver_pool_demo"
else
  say_fail driver_pool_demo "build failed (stub: ${stub:-none})"
  details "$work/driver_pool_demo.build.log"
fi

# 2. The CUDA sample, with nvcc's default static cudart and with the shared one.
arch=sm_90
if [[ $fake -eq 0 ]]; then
  cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d ' .')
  [[ $cap =~ ^[0-9]+$ ]] && arch=sm_$cap
fi
for cudart in static shared; do
  name=sample_$cudart
  if [[ -z $nvcc ]]; then
    say_fail "$name" "no nvcc"
    continue
  fi
  if ! "$nvcc" -O2 -arch="$arch" -cudart "$cudart" "$here/sample.cu" -o "$work/$name" >"$work/$name.build.log" 2>&1; then
    say_fail "$name" "nvcc build failed"
    details "$work/$name.build.log"
    continue
  fi
  if [[ $fake -eq 1 ]]; then
    say_skip "$name" "built for $arch; the fake driver runs no kernels"
  else
    run_pair "$name" 45 required -- "$work/$name"
  fi
done

# 3. The Python programs (the frameworks need a GPU).
for program in torch_two_streams:90 cupy_async:90 jax_async:90 bindings_mempool:45; do
  name=${program%%:*}
  if [[ $fake -eq 1 ]]; then
    if "$python" -c 'import ast, sys; ast.parse(open(sys.argv[1]).read(), sys.argv[1])' "$here/$name.py" \
      2>"$work/$name.compile.log"; then
      say_skip "$name" "syntax checked only; needs a GPU"
    else
      say_fail "$name" "does not parse"
      details "$work/$name.compile.log"
    fi
    continue
  fi
  run_pair "$name" "${program##*:}" required -- "$python" "$here/$name.py"
done

echo "programs: $failures failed"
[[ $failures -eq 0 ]]
