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
work=$build/gpu-programs
rm -rf "$work"
mkdir -p "$work"
python=${PYTHON:-python3}

preload=${STREAMPOOL_PRELOAD:-$build/interpose/libstreampool.so}
if [[ ! -f $preload ]]; then
  found=$(find "$build" -name libstreampool.so -type f 2>/dev/null | head -n 1)
  [[ -n $found ]] && preload=$found
fi
fake_lib=${STREAMPOOL_FAKE_LIB:-$build/fakecuda/libcuda.so.1}

cuda_home=${CUDA_HOME:-/usr/local/cuda}
nvcc=${NVCC:-}
if [[ -z $nvcc ]]; then
  nvcc=$(command -v nvcc 2>/dev/null || true)
  [[ -z $nvcc && -x $cuda_home/bin/nvcc ]] && nvcc=$cuda_home/bin/nvcc
fi
[[ -n $nvcc ]] && cuda_home=$(cd "$(dirname "$nvcc")/.." && pwd)
stub=$cuda_home/lib64/stubs/libcuda.so
[[ -f $stub ]] || stub=$(find "$cuda_home/" -path '*stubs/libcuda.so' 2>/dev/null | head -n 1)

failures=0
say_pass() { echo "PASS $1 counters=$2"; }
say_fail() {
  echo "FAIL $1 $2"
  failures=$((failures + 1))
}
say_skip() { echo "SKIP $1 $2"; }
# The last lines of a file, indented, as the details of a failure.
details() { tail -n "${2:-8}" "$1" 2>/dev/null | sed 's/^/  | /'; }
# Drops what may legitimately differ between two runs: comment lines and hex addresses.
normalise() { grep -v '^#' "$1" | sed -E 's/0x[0-9a-fA-F]{6,}/0xADDR/g'; }

# run_pair NAME TIMEOUT COMMAND...: the two runs and the checks.
run_pair() {
  local name=$1 limit=${PROGRAM_TIMEOUT:-$2}
  shift 2
  local base=$work/$name.driver sp=$work/$name.streampool stats=$work/$name.stats.json
  local base_env=(-u LD_PRELOAD -u STREAMPOOL_LIBCUDA -u STREAMPOOL_STATS)
  local sp_env=(-u STREAMPOOL_LIBCUDA "LD_PRELOAD=$preload" "STREAMPOOL_STATS=$stats")
  local base_label=driver-alone
  if [[ $fake -eq 1 ]]; then
    # No GPU: the reference run is streampool over the fake as well, without a stats report.
    base_env=(-u STREAMPOOL_STATS "LD_PRELOAD=$preload" "STREAMPOOL_LIBCUDA=$fake_lib")
    base_label=reference
    sp_env=("LD_PRELOAD=$preload" "STREAMPOOL_LIBCUDA=$fake_lib" "STREAMPOOL_STATS=$stats")
  fi
  timeout -k 10 "$limit" env "${base_env[@]}" "$@" >"$base.out" 2>"$base.err"
  local base_rc=$?
  timeout -k 10 "$limit" env "${sp_env[@]}" "$@" >"$sp.out" 2>"$sp.err"
  local sp_rc=$?
  if [[ $base_rc -ne 0 ]]; then
    say_fail "$name" "$base_label run exited $base_rc$([[ $base_rc -eq 124 ]] && echo " (timeout ${limit}s)")"
    details "$base.err"
    return
  fi
  if [[ $sp_rc -ne 0 ]]; then
    say_fail "$name" "streampool run exited $sp_rc$([[ $sp_rc -eq 124 ]] && echo " (timeout ${limit}s)")"
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
  local counted
  counted=$("$python" "$here/stats_counters.py" "$stats" 2>&1)
  local stats_rc=$?
  if [[ $stats_rc -ne 0 ]]; then
    say_fail "$name" "stats: $(echo "$counted" | tail -n 1)"
    echo "$counted" | sed 's/^/  | /'
    return
  fi
  say_pass "$name" "$(echo "$counted" | sed -n 's/.*counters=\([0-9]*\).*/\1/p' | head -n 1)"
  echo "  | $(echo "$counted" | head -n 1); $(wc -l <"$base.out") identical lines"
}

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
  run_pair driver_pool_demo 45 "$work/driver_pool_demo"
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
    run_pair "$name" 45 "$work/$name"
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
  run_pair "$name" "${program##*:}" "$python" "$here/$name.py"
done

echo "programs: $failures failed"
[[ $failures -eq 0 ]]
