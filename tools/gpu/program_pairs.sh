# Sourced by run_programs.sh and run_issue_programs.sh: running one program twice, on NVIDIA's
# driver alone and with LD_PRELOAD=libstreampool.so STREAMPOOL_STATS=<file>, and judging the pair.
#
#   pairs_setup WORK_SUBDIR [--fake] [BUILD_DIR]   sets fake, build, work (BUILD_DIR/WORK_SUBDIR,
#                       emptied), python, preload, fake_lib, cuda_home, nvcc, stub, failures=0
#   run_pair NAME TIMEOUT COUNTERS [ENV...] -- COMMAND...
#                       the two runs and the checks. COUNTERS: "required" when the program's
#                       allocations must go through streampool (the stats report must count them),
#                       "reported" otherwise. ENV: NAME=VALUE to set, !NAME to unset. With --fake
#                       (no GPU) the reference run is streampool over the fake driver too.
#   say_pass / say_fail / say_skip NAME WHY, details FILE [LINES]
#
# A pair passes when both runs exit 0 with identical standard outputs (comment lines and hex
# addresses dropped), something was printed, and (if required) the stats report counts
# allocations and frees. Environment: STREAMPOOL_PRELOAD, STREAMPOOL_FAKE_LIB, PYTHON, NVCC,
# CUDA_HOME, PROGRAM_TIMEOUT (seconds per run, overriding each program's own).

pairs_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

pairs_setup() {
  local subdir=$1
  shift
  fake=0
  if [[ ${1:-} == --fake ]]; then
    fake=1
    shift
  fi
  build=${1:-$pairs_here/../../build-gpu}
  if [[ ! -d $build ]]; then
    echo "FAIL setup no build folder $build"
    exit 1
  fi
  build=$(cd "$build" && pwd)
  work=$build/$subdir
  rm -rf "$work"
  mkdir -p "$work"
  python=${PYTHON:-python3}
  preload=${STREAMPOOL_PRELOAD:-$build/interpose/libstreampool.so}
  if [[ ! -f $preload ]]; then
    local found
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
}

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
  # env takes its -u options before any assignment.
  local base_env=(-u LD_PRELOAD -u STREAMPOOL_LIBCUDA -u STREAMPOOL_STATS "${unset_env[@]}")
  local sp_env=(-u STREAMPOOL_LIBCUDA "${unset_env[@]}" "LD_PRELOAD=$preload" "STREAMPOOL_STATS=$stats")
  local base_label=driver-alone
  if [[ $fake -eq 1 ]]; then
    base_env=(-u STREAMPOOL_STATS "${unset_env[@]}" "LD_PRELOAD=$preload" "STREAMPOOL_LIBCUDA=$fake_lib")
    base_label=reference
    sp_env=("${unset_env[@]}" "LD_PRELOAD=$preload" "STREAMPOOL_LIBCUDA=$fake_lib" "STREAMPOOL_STATS=$stats")
  fi
  timeout -k 10 "$limit" env "${base_env[@]}" "${set_env[@]}" "$@" >"$base.out" 2>"$base.err"
  local base_rc=$?
  timeout -k 10 "$limit" env "${sp_env[@]}" "${set_env[@]}" "$@" >"$sp.out" 2>"$sp.err"
  local sp_rc=$?
  if [[ $base_rc -ne 0 ]]; then
    say_fail "$name" "$base_label run exited $base_rc$([[ $base_rc -eq 124 ]] && echo " (timeout ${limit}s)")"
    details "$base.out" 6
    details "$base.err"
    return
  fi
  if [[ $sp_rc -ne 0 ]]; then
    say_fail "$name" "streampool run exited $sp_rc$([[ $sp_rc -eq 124 ]] && echo " (timeout ${limit}s)")"
    # The reference output beside the streampool one: the first lines that differ say where.
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
  local counted stats_rc number
  counted=$("$python" "$pairs_here/stats_counters.py" "$stats" 2>&1)
  stats_rc=$?
  if [[ $stats_rc -ne 0 && $counters_mode == required ]]; then
    say_fail "$name" "stats: $(echo "$counted" | tail -n 1)"
    echo "$counted" | sed 's/^/  | /'
    return
  fi
  number=$(echo "$counted" | sed -n 's/.*counters=\([0-9]*\).*/\1/p' | head -n 1)
  say_pass "$name" "${number:-0}"
  echo "  | $(echo "$counted" | head -n 1); $(wc -l <"$base.out") identical lines"
}
