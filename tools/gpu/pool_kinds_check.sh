#!/usr/bin/env bash
# Every kind of pool used by kernels, and pools shared between processes, on a GPU: each check on
# NVIDIA's driver alone and under LD_PRELOAD=libstreampool.so, standard outputs compared.
#
#   tools/gpu/pool_kinds_check.sh [--fake] BUILD_DIR [OUT_DIR]
#
# BUILD_DIR holds a built tree (libstreampool.so, conformance_tests; tools/gpu-check.sh builds one).
# Steps, one "PASS name" / "FAIL name (why)" / "SKIP name (why)" line each:
#   build                    nvcc builds tools/gpu/pool_kinds.cu (sm_90 unless POOL_KINDS_ARCH)
#   kinds                    `pool_kinds kinds`: device, default, IPC-capable, host, host NUMA 0,
#                            managed pools; kernels write and read, the CPU reads and writes host
#                            and managed memory, statistics, trimming
#   ipc                      `pool_kinds ipc`: parent fills with a kernel, child (fork + exec, the
#                            descriptor over SCM_RIGHTS) imports, checks with a kernel, writes back,
#                            frees first; parent checks the write-back
#   locality-domain          tools/gpu/probe_locality_domain.c: pools at a device locality domain,
#                            the driver's answers reported, streampool's checked
#   conformance              conformance_tests' PoolKinds.*, Ipc.* and DeviceAttributes.* suites
#   streamOrderedAllocationIPC  NVIDIA's sample through cuda_samples_corpus.sh (CORPUS_ONLY), where
#                            the trimmed cuda-samples tree is there ($CUDA_SAMPLES or .gl/cuda-samples)
# Writes OUT_DIR/pool_kinds.log (every run's output) and OUT_DIR/pool_kinds.tar.gz (the raw files).
# Exit status 0 only if nothing failed.
#
# --fake (no GPU): builds the program where nvcc exists, runs it under streampool over the fake
# driver with POOL_KINDS_NO_KERNELS=1 (copies instead of kernels) where cudart runs on the fake, and
# runs the conformance suites under streampool over the fake; nothing is compared with a driver.
set -u
fake=0
if [[ ${1:-} == --fake ]]; then
  fake=1
  shift
fi
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$(cd "${1:?usage: pool_kinds_check.sh [--fake] BUILD_DIR [OUT_DIR]}" && pwd)
out=$(mkdir -p "${2:-$build/pool-kinds}" && cd "${2:-$build/pool-kinds}" && pwd)
work=$build/pool-kinds-work
mkdir -p "$work"
preload=${STREAMPOOL_PRELOAD:-$build/interpose/libstreampool.so}
fake_lib=${STREAMPOOL_FAKE_LIB:-$build/fakecuda/libcuda.so.1}
conformance=$build/tests/conformance/conformance_tests
log=$out/pool_kinds.log
: >"$log"
failures=0

say() { echo "$1" | tee -a "$log"; }
fail() {
  say "FAIL $1 ($2)"
  failures=$((failures + 1))
}
section() { echo "=== $1" >>"$log"; }

# run_both NAME COMMAND...: the command on the driver alone and under streampool (over the fake
# driver with --fake: that run alone); outputs in $work/NAME.{driver,streampool}.{out,err}.
run_both() {
  local name=$1
  shift
  local driver_rc=0
  if [[ $fake -eq 0 ]]; then
    timeout -k 10 300 env -u LD_PRELOAD -u STREAMPOOL_LIBCUDA "$@" >"$work/$name.driver.out" 2>"$work/$name.driver.err"
    driver_rc=$?
    section "$name: driver alone (exit $driver_rc)"
    cat "$work/$name.driver.out" "$work/$name.driver.err" >>"$log"
  fi
  local sp_env=("LD_PRELOAD=$preload")
  [[ $fake -eq 1 ]] && sp_env+=("STREAMPOOL_LIBCUDA=$fake_lib" "POOL_KINDS_NO_KERNELS=1")
  timeout -k 10 300 env "${sp_env[@]}" "$@" >"$work/$name.streampool.out" 2>"$work/$name.streampool.err"
  local sp_rc=$?
  section "$name: under streampool (exit $sp_rc)"
  cat "$work/$name.streampool.out" "$work/$name.streampool.err" >>"$log"
  if [[ $fake -eq 1 ]]; then
    [[ $sp_rc -eq 0 ]] && say "PASS $name (fake driver, under streampool only)" || fail "$name" "exit $sp_rc over the fake"
    return
  fi
  if [[ $driver_rc -ne 0 ]]; then
    fail "$name" "driver alone exited $driver_rc"
  elif [[ $sp_rc -ne 0 ]]; then
    fail "$name" "streampool exited $sp_rc"
  elif [[ $name != conformance ]] && ! cmp -s "$work/$name.driver.out" "$work/$name.streampool.out"; then
    fail "$name" "outputs differ"
    diff "$work/$name.driver.out" "$work/$name.streampool.out" | head -n 20 >>"$log"
  else
    say "PASS $name"
  fi
}

# --- build ---
program=$work/pool_kinds
nvcc=$(command -v "${NVCC:-nvcc}" || echo /usr/local/cuda/bin/nvcc)
if [[ -x $nvcc ]]; then
  section "build"
  if "$nvcc" -arch="${POOL_KINDS_ARCH:-sm_90}" -std=c++17 -O2 -o "$program" "$repo/tools/gpu/pool_kinds.cu" >>"$log" 2>&1; then
    say "PASS build"
  else
    fail build "nvcc failed"
    program=""
  fi
else
  say "SKIP build (no nvcc)"
  program=""
fi

# --- the program ---
cudart_on_fake=1
if [[ $fake -eq 1 && -n $program ]]; then
  # cudart refuses drivers older than itself: the fake must answer as new a driver as the toolkit.
  if ! env LD_PRELOAD="$preload" STREAMPOOL_LIBCUDA="$fake_lib" POOL_KINDS_NO_KERNELS=1 "$program" kinds \
    >"$work/probe.out" 2>&1 && grep -q 'RequiresNewerDriver\|InsufficientDriver\|NoDevice' "$work/probe.out"; then
    cudart_on_fake=0
  fi
fi
for mode in kinds ipc; do
  if [[ -z $program ]]; then
    say "SKIP $mode (not built)"
  elif [[ $fake -eq 1 && $cudart_on_fake -eq 0 ]]; then
    say "SKIP $mode (cudart does not run over the fake driver: $(grep -o 'cuda[A-Za-z]*Error[A-Za-z]*\|cudaError[A-Za-z]*' "$work/probe.out" | head -n 1))"
  else
    run_both "$mode" "$program" "$mode"
  fi
done

# --- pools at a device locality domain: reported on the driver alone, checked under streampool ---
probe=$work/probe_locality_domain
cuda_home=${CUDA_HOME:-/usr/local/cuda}
if cc -I"$cuda_home/include" -o "$probe" "$repo/tools/gpu/probe_locality_domain.c" -L"$cuda_home/lib64/stubs" -lcuda \
  >>"$log" 2>&1; then
  if [[ $fake -eq 0 ]]; then
    section "locality domain: driver alone (a report; driver 580 predates locality domains)"
    env -u LD_PRELOAD "$probe" >>"$log" 2>&1
    say "REPORT locality-domain (driver alone: exit $?, see the log)"
  fi
  section "locality domain: under streampool"
  sp_env=("LD_PRELOAD=$preload")
  [[ $fake -eq 1 ]] && sp_env+=("STREAMPOOL_LIBCUDA=$fake_lib")
  if env "${sp_env[@]}" "$probe" expect >>"$log" 2>&1; then say "PASS locality-domain"; else fail locality-domain "see the log"; fi
else
  fail locality-domain "the probe did not build"
fi

# --- the conformance suites of the kinds and of IPC ---
if [[ -x $conformance ]]; then
  run_both conformance "$conformance" --gtest_filter='PoolKinds.*:Ipc.*:DeviceAttributes.*:PoolLifecycle.*:CurrentPool.*'
else
  say "SKIP conformance (conformance_tests not built)"
fi

# --- NVIDIA's sample ---
samples=${CUDA_SAMPLES:-$repo/.gl/cuda-samples}
if [[ $fake -eq 1 ]]; then
  say "SKIP streamOrderedAllocationIPC (needs a GPU)"
elif [[ -d $samples ]]; then
  section "streamOrderedAllocationIPC (cuda_samples_corpus.sh)"
  if CORPUS_ONLY='^streamOrderedAllocationIPC$' CUDA_SAMPLES=$samples "$repo/tools/gpu/cuda_samples_corpus.sh" "$build" \
    >"$work/sample.log" 2>&1; then
    say "PASS streamOrderedAllocationIPC"
  else
    fail streamOrderedAllocationIPC "see the log"
  fi
  cat "$work/sample.log" >>"$log"
else
  say "SKIP streamOrderedAllocationIPC (no cuda-samples tree at $samples)"
fi

tar -czf "$out/pool_kinds.tar.gz" -C "$work" --exclude=pool_kinds . 2>/dev/null
say "pool kinds: $([[ $failures -eq 0 ]] && echo "all passed" || echo "$failures failed")"
[[ $failures -eq 0 ]]
