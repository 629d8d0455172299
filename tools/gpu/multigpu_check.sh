#!/usr/bin/env bash
# The two-GPU check (run from the repo root on a box with two GPUs, $OUT a folder whose files come
# back): builds, then each step without and with LD_PRELOAD=libstreampool.so:
#   1. conformance: the TwoGpus* group of conformance_tests on NVIDIA's driver alone and under streampool
#   2. torch_two_devices.py (backend:cudaMallocAsync, tensors moved between the devices)
#   3. jax_two_devices.py (XLA_PYTHON_CLIENT_ALLOCATOR=cuda_async, pmap and shard_map)
#   4. torch_ddp_train.py: two-process NCCL data-parallel training; identical losses, step times and
#      peak memory of both runs
#   5. cuda-samples: the multi-GPU samples of cuda_samples.txt (cuda_samples_corpus.sh, CORPUS_ONLY),
#      with what is left of the budget (MULTIGPU_BUDGET seconds in all, default 570)
#
#   tools/gpu/multigpu_check.sh [--fake] [BUILD_DIR]     (default BUILD_DIR: build-multigpu)
#
# --fake: no GPU. The conformance group runs twice under streampool over the fake driver with
# STREAMPOOL_FAKE_DEVICES=2 (kernel and peer-copy variants skip there), the Python programs are
# syntax-checked, the samples are left out.
# Every step runs under `timeout`; a failing step never stops the next. Files in $OUT (default
# ./multigpu-out): summary.txt, conformance-driver.log, conformance-streampool.log, samples.log,
# programs.log, ddp.log, multigpu-logs.tar.gz. Exit 0 only if every step passed.
# Environment: OUT, PYTHON, DDP_STEPS (default 300), MULTIGPU_BUDGET (default 570),
# MULTIGPU_BUILD_TIMEOUT (default 240), STREAMPOOL_COMMIT (recorded when the tree has no .git).
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo" || exit 2
mode=gpu
if [[ ${1:-} == --fake ]]; then
  mode=fake
  shift
fi
build=${1:-$repo/build-multigpu}
out=${OUT:-$repo/multigpu-out}
mkdir -p "$out" "$build" || exit 2
out=$(cd "$out" && pwd)
build=$(cd "$build" && pwd)
logs=$build/multigpu-check
rm -rf "$logs"
mkdir -p "$logs"
python=${PYTHON:-python3}
overall=0
summary=()
deadline=$((SECONDS + ${MULTIGPU_BUDGET:-570}))
left() { echo $((deadline - SECONDS)); }
add() { summary+=("$*"); echo "multigpu-check: $*"; }
rc_text() {
  case $1 in
    0) echo ok ;;
    124 | 137) echo TIMEOUT ;;
    *) echo "FAILED (exit $1)" ;;
  esac
}

add "streampool multigpu-check, mode $mode, $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
add "commit: ${STREAMPOOL_COMMIT:-$(git rev-parse --verify -q HEAD 2>/dev/null || echo unknown)}"
if [[ $mode == gpu ]]; then
  add "gpus: $(timeout 30 nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader 2>&1 | tr '\n' ';')"
  timeout 30 nvidia-smi topo -m >"$logs/topology.txt" 2>&1
fi

# 0. Build.
start=$SECONDS
generator="Unix Makefiles"
command -v ninja >/dev/null 2>&1 && generator=Ninja
timeout -k 10 "${MULTIGPU_BUILD_TIMEOUT:-240}" bash -c '
  set -x
  cmake -S "$1" -B "$2" -G "$3" -DCMAKE_BUILD_TYPE=Release || exit $?
  cmake --build "$2" -j "$(nproc)" --target conformance_tests streampool_preload streampool_fakecuda
' build "$repo" "$build" "$generator" >"$logs/build.log" 2>&1
rc=$?
add "step build: $(rc_text $rc), $((SECONDS - start)) s"
((rc == 0)) || overall=1
conformance=$build/tests/conformance/conformance_tests
preload=$build/interpose/libstreampool.so
fake_lib=$build/fakecuda/libcuda.so.1

# 1. The conformance group.
counts() {
  local passed failed skipped
  passed=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) tests\{0,1\}\..*/\1/p' "$1" | tail -n 1)
  failed=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) tests\{0,1\}, listed below:.*/\1/p' "$1" | tail -n 1)
  skipped=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) tests\{0,1\}, listed below:.*/\1/p' "$1" | tail -n 1)
  echo "passed=${passed:-?} failed=${failed:-0} skipped=${skipped:-0}"
}
run_group() { # NAME ENV...
  local name=$1 log=$out/conformance-$1.log
  shift
  if [[ ! -x $conformance ]]; then
    add "step conformance-$name: FAILED (conformance_tests not built)"
    overall=1
    return
  fi
  start=$SECONDS
  timeout -k 10 120 env "$@" "$conformance" --gtest_color=no --gtest_filter='TwoGpus*' >"$log" 2>&1
  local rc=$?
  add "step conformance-$name: $(rc_text $rc), $((SECONDS - start)) s, $(counts "$log")"
  local failing
  failing=$(sed -n 's/^\[  FAILED  \] \([^ ,]*\).*/\1/p' "$log" | grep -v 'listed' | sort -u | tr '\n' ' ')
  [[ -n $failing ]] && add "  failing: $failing"
  grep '^two-gpus' "$log" | sed "s/^/  $name: /" >>"$logs/reuse-lines.txt"
  ((rc == 0)) || overall=1
}
if [[ $mode == gpu ]]; then
  run_group driver -u LD_PRELOAD -u STREAMPOOL_LIBCUDA
  run_group streampool -u STREAMPOOL_LIBCUDA "LD_PRELOAD=$preload"
else
  run_group driver "LD_PRELOAD=$preload" "STREAMPOOL_LIBCUDA=$fake_lib" STREAMPOOL_FAKE_DEVICES=2
  run_group streampool "LD_PRELOAD=$preload" "STREAMPOOL_LIBCUDA=$fake_lib" STREAMPOOL_FAKE_DEVICES=2
  add "  (--fake: both runs are streampool over two fake devices)"
fi
[[ -f $logs/reuse-lines.txt ]] && while read -r line; do add "  $line"; done <"$logs/reuse-lines.txt"

# 2.-3. The programs, with program_pairs.sh's two runs.
# shellcheck source=tools/gpu/program_pairs.sh
source "$here/program_pairs.sh"
pair_args=()
[[ $mode == fake ]] && pair_args=(--fake)
pairs_setup multigpu-programs "${pair_args[@]}" "$build" >"$out/programs.log" 2>&1
async=PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync
{
  if [[ $mode == fake ]]; then
    syntax_check_only torch_two_devices "$here/torch_two_devices.py"
    syntax_check_only torch_ddp_train "$here/torch_ddp_train.py"
    syntax_check_only jax_two_devices "$here/jax_two_devices.py"
  else
    run_pair torch_two_devices 90 required "$async" -- "$python" "$here/torch_two_devices.py"
    run_pair jax_two_devices 120 reported XLA_PYTHON_CLIENT_ALLOCATOR=cuda_async -- "$python" "$here/jax_two_devices.py"
  fi
} >>"$out/programs.log" 2>&1
while read -r line; do add "  $line"; done < <(grep -E '^(PASS|FAIL|SKIP) ' "$out/programs.log")
grep -q '^FAIL ' "$out/programs.log" && overall=1
add "step programs: $(grep -c '^PASS ' "$out/programs.log") pass, $(grep -c '^FAIL ' "$out/programs.log") fail, $(grep -c '^SKIP ' "$out/programs.log") skip"

# 4. The training pair: the losses must match; step times and peak memory are reported.
if [[ $mode == gpu ]]; then
  start=$SECONDS
  steps=${DDP_STEPS:-300}
  {
    echo "=== without streampool"
    timeout -k 10 150 env -u LD_PRELOAD -u STREAMPOOL_LIBCUDA "$async" "$python" "$here/torch_ddp_train.py" "$steps" \
      >"$logs/ddp.driver.out" 2>"$logs/ddp.driver.err"
    echo "exit $?"
    echo "=== with streampool"
    timeout -k 10 150 env -u STREAMPOOL_LIBCUDA "LD_PRELOAD=$preload" "$async" "$python" "$here/torch_ddp_train.py" "$steps" \
      >"$logs/ddp.streampool.out" 2>"$logs/ddp.streampool.err"
    echo "exit $?"
    echo "=== comparison"
    "$python" "$here/torch_ddp_train.py" --compare "$logs/ddp.driver.out" "$logs/ddp.streampool.out"
    echo "compare exit $?"
    for which in driver streampool; do
      echo "=== $which: reports"
      grep '^# ' "$logs/ddp.$which.out"
      echo "=== $which: last lines of stderr"
      tail -n 15 "$logs/ddp.$which.err"
    done
  } >"$out/ddp.log" 2>&1
  verdict=$(grep '^losses:' "$out/ddp.log" || echo "no comparison (a run failed)")
  add "step ddp: $((SECONDS - start)) s, $verdict"
  for which in driver streampool; do
    add "  $which: $(grep '^# ' "$logs/ddp.$which.out" | tr '\n' ' ')"
  done
  grep -q '^compare exit 0' "$out/ddp.log" || overall=1
else
  add "step ddp: SKIPPED (--fake: needs two GPUs; syntax-checked above)"
  echo "--fake: not run" >"$out/ddp.log"
fi

# 5. The multi-GPU cuda-samples, last: they take what is left of the budget.
samples_regex='^(simpleMultiGPU|MonteCarloMultiGPU|p2pBandwidthLatencyTest|simpleCUBLASXT|cudaOpenMP|topologyQuery|simpleP2P|streamOrderedAllocationP2P|conjugateGradientMultiDeviceCG|simpleCUFFT_MGPU|simpleCUFFT_2d_MGPU)(@shared)?$'
# The two-GPU list and its sources (.gl/cuda-samples-multigpu, made with --prepare) when present;
# else the main list, whose two-GPU samples without sources there are reported as SKIP.
samples_env=(CORPUS_ONLY="$samples_regex")
samples_tree=${CUDA_SAMPLES_MULTIGPU:-$repo/.gl/cuda-samples-multigpu}
if [[ -d $samples_tree/Samples ]]; then
  samples_env+=(CORPUS_MANIFEST="$here/cuda_samples_multigpu.txt" CUDA_SAMPLES="$samples_tree")
fi
if [[ $mode == fake ]]; then
  add "step samples: SKIPPED (--fake: needs GPUs)"
  echo "--fake: not run" >"$out/samples.log"
elif (($(left) < 90)); then
  add "step samples: SKIPPED (no time left in MULTIGPU_BUDGET)"
  echo "not run: no time left" >"$out/samples.log"
  overall=1
else
  start=$SECONDS
  b=$(($(left) - 15))
  env "${samples_env[@]}" CORPUS_BUDGET=$((b - 10)) CORPUS_RUN_JOBS=1 STREAMPOOL_PRELOAD="$preload" \
    timeout -k 10 "$b" "$here/cuda_samples_corpus.sh" "$build" >"$out/samples.log" 2>&1
  rc=$?
  add "step samples: $(rc_text $rc), $((SECONDS - start)) s, $(tail -n 1 "$out/samples.log")"
  while read -r line; do add "  $line"; done < <(grep -E '^(PASS|FAIL|SKIP) ' "$out/samples.log")
  ((rc == 0)) || overall=1
fi

add "overall: $([[ $overall -eq 0 ]] && echo PASS || echo FAIL)"
printf '%s\n' "${summary[@]}" >"$out/summary.txt"
tar -czf "$out/multigpu-logs.tar.gz" -C "$build" multigpu-check multigpu-programs 2>/dev/null
exit "$overall"
