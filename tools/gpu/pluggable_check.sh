#!/usr/bin/env bash
# streampool as PyTorch's and CuPy's pluggable allocator (libstreampool_alloc.so, no LD_PRELOAD) on a GPU.
#
#   BUILD=<build dir> tools/gpu/pluggable_check.sh OUTDIR
#
# BUILD holds a built tree ($BUILD/pluggable/libstreampool_alloc.so; default build-gpu). Parts, each
# logged to OUTDIR/<part>.log and ending in one "PASS part" / "FAIL part (why)" / "SKIP part (why)":
#   train     a small transformer, 40 steps on random data with a fixed seed, once with PyTorch's
#             own allocator and once with streampool.torch.use(): the losses must be equal (compared
#             as float.hex); streampool's statistics printed
#   notebook  a notebook's order (import torch, CPU work, use(), then CUDA), and use() after a CUDA
#             tensor exists, which must raise streampool.NotUsable
#   cupy      streampool.cupy.use() and array operations checked against NumPy
#   torch-tests  PyTorch's own allocator tests if the wheel ships test/test_cuda.py (it usually does
#             not), else tools/gpu/pluggable_torch.py checks: memory_stats-like numbers from
#             streampool, empty_cache, side streams, a CUDA graph captured and replayed
# A minute or two. Exit status 0 only if nothing failed. PLUGGABLE_CHECK_PARTS="train cupy" runs some.
set -u
out=${1:?usage: BUILD=<build dir> pluggable_check.sh OUTDIR}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${BUILD:-$repo/build-gpu}
mkdir -p "$out" && out=$(cd "$out" && pwd)
library=${STREAMPOOL_LIBRARY:-$build/pluggable/libstreampool_alloc.so}
python=${PYTHON:-python3}
parts=${PLUGGABLE_CHECK_PARTS:-train notebook cupy torch-tests}
failures=0
say() { echo "$1" | tee -a "$out/summary.log"; }
result() {  # result PART STATUS WHY
  case $2 in
    PASS) say "PASS $1" ;;
    SKIP) say "SKIP $1 ($3)" ;;
    *) say "FAIL $1 ($3)"; failures=$((failures + 1)) ;;
  esac
}
: >"$out/summary.log"
if [[ ! -f $library ]]; then
  result setup FAIL "no $library"
  exit 1
fi
# Nothing preloaded: the process's libcuda must be NVIDIA's.
run_py() {  # run_py LOG ARGS...: python with the package and the library, output appended to LOG
  local log=$1
  shift
  env -u LD_PRELOAD PYTHONPATH="$repo/python${PYTHONPATH:+:$PYTHONPATH}" STREAMPOOL_LIBRARY="$library" \
    CUBLAS_WORKSPACE_CONFIG=:4096:8 "$python" "$@" >>"$log" 2>&1
}
have() { env -u LD_PRELOAD "$python" -c "import $1" >/dev/null 2>&1; }
fails_in() { grep -c '^FAIL ' "$1"; }
{ uname -a; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1; "$python" --version; } \
  >"$out/environment.log" 2>&1

for part in $parts; do
  log=$out/$part.log
  : >"$log"
  case $part in
    train)
      if ! have torch; then result train SKIP "no PyTorch"; continue; fi
      run_py "$out/train-native.log" "$repo/tools/gpu/pluggable_torch.py" train native
      native_rc=$?
      run_py "$out/train-streampool.log" "$repo/tools/gpu/pluggable_torch.py" train streampool
      streampool_rc=$?
      cat "$out/train-native.log" "$out/train-streampool.log" >"$log"
      native=$(grep '^loss ' "$out/train-native.log")
      ours=$(grep '^loss ' "$out/train-streampool.log")
      if [[ $native_rc -ne 0 || $streampool_rc -ne 0 ]]; then
        result train FAIL "exit $native_rc native, $streampool_rc streampool"
      elif [[ -z $ours || $(grep -c . <<<"$ours") -ne 40 ]]; then
        result train FAIL "$(grep -c . <<<"$ours") loss lines under streampool"
      elif [[ $native != "$ours" ]]; then
        result train FAIL "losses differ: $(diff <(echo "$native") <(echo "$ours") | head -3 | tr '\n' ' ')"
      else
        grep '^stats ' "$out/train-streampool.log" | tee -a "$out/summary.log"
        result train PASS
      fi
      ;;
    notebook)
      if ! have torch; then result notebook SKIP "no PyTorch"; continue; fi
      run_py "$log" "$repo/tools/gpu/pluggable_torch.py" notebook
      rc_notebook=$?
      run_py "$log" "$repo/tools/gpu/pluggable_torch.py" late
      rc_late=$?
      if [[ $rc_notebook -eq 0 && $rc_late -eq 0 && $(fails_in "$log") -eq 0 ]]; then
        result notebook PASS
      else
        result notebook FAIL "exit $rc_notebook / $rc_late: $(grep -m1 -E '^FAIL|Error' "$log")"
      fi
      ;;
    cupy)
      if ! have cupy || ! have numpy; then result cupy SKIP "no CuPy or NumPy"; continue; fi
      run_py "$log" "$repo/tools/gpu/pluggable_cupy.py"
      rc=$?
      grep '^stats ' "$log" | tee -a "$out/summary.log"
      if [[ $rc -eq 0 && $(fails_in "$log") -eq 0 ]]; then result cupy PASS; else result cupy FAIL "exit $rc: $(grep -m1 -E '^FAIL|Error' "$log")"; fi
      ;;
    torch-tests)
      if ! have torch; then result torch-tests SKIP "no PyTorch"; continue; fi
      torch_dir=$(env -u LD_PRELOAD "$python" -c "import torch, os; print(os.path.dirname(torch.__file__))")
      echo "torch folder: $torch_dir" >>"$log"
      test_file=""
      for candidate in "$torch_dir/test/test_cuda.py" "$torch_dir/../test/test_cuda.py"; do
        [[ -f $candidate ]] && test_file=$candidate
      done
      if [[ -n $test_file ]] && have pytest; then
        echo "running $test_file -k pluggable" >>"$log"
        run_py "$log" -m pytest -q "$test_file" -k "pluggable or Pluggable"
        rc=$?
        if [[ $rc -eq 0 ]]; then result torch-tests PASS; else result torch-tests FAIL "pytest exit $rc"; fi
      else
        echo "no test/test_cuda.py in the wheel: streampool's equivalent checks" >>"$log"
        run_py "$log" "$repo/tools/gpu/pluggable_torch.py" checks
        rc=$?
        if [[ $rc -eq 0 && $(fails_in "$log") -eq 0 ]]; then
          result torch-tests PASS
        else
          result torch-tests FAIL "exit $rc: $(grep '^FAIL' "$log" | tr '\n' ' ')"
        fi
      fi
      ;;
    *) result "$part" FAIL "unknown part" ;;
  esac
done
say "failures: $failures"
[[ $failures -eq 0 ]]
