#!/usr/bin/env bash
# STREAMPOOL_SERVE_MALLOC=1 on a GPU: cudaMalloc / cuMemAlloc served from streampool's pools, one
# budget for the whole process.
#
#   OUT=DIR tools/gpu/serve_malloc_check.sh [--fake] [BUILD_DIR]      (BUILD_DIR default build-gpu)
#
# Steps, one "PASS name" / "FAIL name (why)" / "SKIP name (why)" line each:
#   conformance   tests/conformance on NVIDIA's driver alone, then under streampool with
#                 STREAMPOOL_SERVE_MALLOC=1: both exit 0 and no test passes on one and fails on the other
#   torch-native  PyTorch's native caching allocator (no PYTORCH_CUDA_ALLOC_CONF) under LD_PRELOAD,
#                 STREAMPOOL_SERVE_MALLOC=1 and STREAMPOOL_LIMIT=20G (tools/gpu/cap_oom.py):
#                 mem_get_info's total is the cap, a training loop runs, a tensor list grows until
#                 torch.OutOfMemoryError within 1 GiB below the cap (not at the device), and the
#                 stats report shows the memory served (served_malloc > 0) and nothing forwarded
#   cupy          CuPy's default (non-async) memory pool, same settings, a small computation
#   jax           JAX's default BFC allocator, same settings, a jitted computation
#                 (tools/gpu/serve_malloc_frameworks.py for both; served_malloc > 0 in each report)
# Everything runs within SERVE_BUDGET seconds (default 400): each step gets what is left, and a step
# with no time left is a FAIL. Output: $OUT/serve_malloc_check.log (every command and its output)
# and $OUT/serve_malloc_stats.json (the last stats report), nothing else. Exit status 0 only if no
# step failed.
#
# --fake (no GPU): the conformance suite under streampool with STREAMPOOL_SERVE_MALLOC=1 over the
# CPU-only fake driver only (NVIDIA's driver is not there to compare with); the frameworks steps are
# SKIPped (NVIDIA's cudart does not start over the fake driver).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/script_log.sh" serve_malloc_check.log serve-malloc "$@"
source "$repo/tools/gpu/build_targets.sh"
budget=${SERVE_BUDGET:-400}
deadline=$(($(date +%s) + budget))
cap=20G
cap_bytes=$((20 << 30))
stats_file=$out/serve_malloc_stats.json
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
failures=0
pass() { say "PASS $*"; }
fail() {
  say "FAIL $1 ($2)"
  failures=$((failures + 1))
}
left() { echo $((deadline - $(date +%s))); }
# logged NAME SECONDS CMD...: runs CMD with at most SECONDS (and what the budget leaves), its output
# in $scratch/NAME.out and appended to the log. Returns CMD's status (124: out of time).
logged() {
  local name=$1 seconds=$2
  shift 2
  local remaining
  remaining=$(left)
  ((seconds > remaining)) && seconds=$remaining
  if ((seconds <= 0)); then
    say "# $name: no time left in SERVE_BUDGET=$budget"
    return 124
  fi
  say "\$ (timeout ${seconds}s) $*"
  timeout -k 5 "$seconds" "$@" >"$scratch/$name.out" 2>&1
  local rc=$?
  cat "$scratch/$name.out" >>"$log"
  say "  -> exit $rc"
  return "$rc"
}
# stats_field KEY: device 0's KEY in the stats report just written (empty if none).
stats_field() {
  python3 -c 'import json,sys
try:
    devices = json.load(open(sys.argv[1])).get("devices", [])
    print(devices[0].get(sys.argv[2], "") if devices else "")
except (OSError, ValueError):
    print("")' "$stats_file" "$1"
}
# served_ok NAME: the report shows served memory and no forwarded allocation; appended to the log.
served_ok() {
  local served forwarded
  served=$(stats_field served_malloc)
  forwarded=$(stats_field forwarded)
  say "# $1 report: served_malloc=$served forwarded=$forwarded"
  [[ -n $served && $served -gt 0 && $forwarded == 0 ]]
}

build_targets "$build_dir" "streampool" streampool_preload streampool_fakecuda conformance_tests || exit 1
preload=$repo/$build_dir/interpose/libstreampool.so
conformance=$repo/$build_dir/tests/conformance/conformance_tests
serve_env=(LD_PRELOAD="$preload" STREAMPOOL_SERVE_MALLOC=1)
if [ "$fake" -eq 1 ]; then
  serve_env+=(STREAMPOOL_LIBCUDA="$repo/$build_dir/fakecuda/libcuda.so.1")
  say "driver: fake"
else
  say "driver: NVIDIA's ($(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1))"
fi

# --- conformance: the driver alone, then served ---
results() { sed -nE 's/^\[ +(OK|FAILED) +\] ([^ ]+) \(.*/\2 \1/p' "$1" | sort -u; }
if [ "$fake" -eq 1 ]; then
  logged conformance-served 150 env "${serve_env[@]}" "$conformance" --gtest_filter=-TwoGpus*
  rc=$?
  if ((rc == 0)); then pass "conformance (over the fake driver, served: $(grep -c ' OK$' <(results "$scratch/conformance-served.out")) passed)"
  else fail conformance "exit $rc under streampool with STREAMPOOL_SERVE_MALLOC=1 over the fake driver"; fi
else
  logged conformance-driver 120 env -u LD_PRELOAD "$conformance" --gtest_brief=0
  rc_driver=$?
  logged conformance-served 120 env "${serve_env[@]}" "$conformance" --gtest_brief=0
  rc_served=$?
  differ=$(join <(results "$scratch/conformance-driver.out") <(results "$scratch/conformance-served.out") |
    awk '$2 != $3 {print $1 " driver:" $2 " served:" $3}')
  [[ -n $differ ]] && say "$differ"
  if ((rc_driver != 0)); then fail conformance "exit $rc_driver on NVIDIA's driver alone"
  elif ((rc_served != 0)); then fail conformance "exit $rc_served under streampool with STREAMPOOL_SERVE_MALLOC=1"
  elif [[ -n $differ ]]; then fail conformance "results differ: $(echo "$differ" | head -n 1)"
  else pass "conformance (driver alone and served: $(grep -c ' OK$' <(results "$scratch/conformance-served.out")) passed each)"; fi
fi

# --- frameworks: the same settings, their own allocators ---
have() { python3 -c "import $1" >/dev/null 2>&1; }
framework_env=("${serve_env[@]}" STREAMPOOL_LIMIT="$cap" STREAMPOOL_STATS="$stats_file")
if [ "$fake" -eq 1 ]; then
  for step in torch-native cupy jax; do say "SKIP $step (--fake: NVIDIA's cudart does not start over the fake driver)"; done
else
  if ! have torch; then say "SKIP torch-native (no PyTorch)"
  else
    rm -f "$stats_file"
    logged torch-native 150 env -u PYTORCH_ALLOC_CONF -u PYTORCH_CUDA_ALLOC_CONF "${framework_env[@]}" \
      python3 "$repo/tools/gpu/cap_oom.py"
    rc=$?
    total=$(sed -n 's/^mem_get_info_start .*total=\([0-9]*\).*/\1/p' "$scratch/torch-native.out")
    reached=$(sed -n 's/^grow .*reached=\([0-9]*\).*/\1/p' "$scratch/torch-native.out")
    outcome=$(sed -n 's/^grow outcome=\([a-z]*\).*/\1/p' "$scratch/torch-native.out")
    backend=$(sed -n 's/^allocator_backend=//p' "$scratch/torch-native.out")
    if ((rc != 0)); then fail torch-native "exit $rc: $(tail -n 1 "$scratch/torch-native.out")"
    elif [[ $backend != native ]]; then fail torch-native "allocator backend '$backend', expected native"
    elif [[ $total != "$cap_bytes" ]]; then fail torch-native "mem_get_info total $total, expected the cap $cap_bytes"
    elif [[ $outcome != oom ]]; then fail torch-native "the growth did not end in an out-of-memory error"
    elif ((reached > cap_bytes || reached < cap_bytes - (1 << 30))); then
      fail torch-native "out of memory at $reached bytes, not within 1 GiB below the cap"
    elif ! served_ok torch-native; then fail torch-native "the report shows no served memory, or forwarded allocations"
    else pass "torch-native (total $total = the cap; out of memory at $reached bytes; served_malloc $(stats_field served_malloc))"; fi
  fi
  for step in cupy jax; do
    if ! have "$step"; then
      say "SKIP $step (no $step)"
      continue
    fi
    rm -f "$stats_file"
    logged "$step" 90 env "${framework_env[@]}" python3 "$repo/tools/gpu/serve_malloc_frameworks.py" "$step"
    rc=$?
    if ((rc != 0)); then fail "$step" "exit $rc: $(tail -n 1 "$scratch/$step.out")"
    elif ! served_ok "$step"; then fail "$step" "the report shows no served memory, or forwarded allocations"
    else pass "$step ($(grep -E "^$step ok=" "$scratch/$step.out" | head -n 1); served_malloc $(stats_field served_malloc))"; fi
  done
fi

say "serve_malloc_check: $failures failure(s), $(($(date +%s) - deadline + budget)) s of SERVE_BUDGET=$budget"
[ "$failures" -eq 0 ]
