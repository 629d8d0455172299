#!/usr/bin/env bash
# The process cap (STREAMPOOL_LIMIT) on a GPU, with PyTorch and the benchmarks.
#
#   tools/gpu/cap_check.sh OUTDIR BUILD_DIR
#
# BUILD_DIR holds a built tree (interpose/libstreampool.so, bin/streampool, bench/gpu/gpu_bench_*).
# Steps, one "PASS name" / "FAIL name (why)" / "SKIP name (why)" line each, logs in OUTDIR:
#   torch-async     PyTorch with PYTORCH_ALLOC_CONF=backend:cudaMallocAsync under STREAMPOOL_LIMIT=20G:
#                   mem_get_info's total is the cap (20 GiB), a training loop runs, a tensor list
#                   grows until out of memory and stops at the cap (within 1 GiB), not at the device
#   torch-native    the same with PyTorch's native caching allocator (its cudaMalloc calls are
#                   counted by the hooks that forward them): stops at the cap too
#   torch-uncapped  mem_get_info under streampool without a cap: the device's own total
#   report          the STREAMPOOL_STATS report of the async run, as `streampool report` prints it
#   bench           gpu_bench_driver and gpu_bench_runtime, pair and random-size workloads, under
#                   streampool with and without STREAMPOOL_LIMIT=20G, interleaved, 3 runs each;
#                   OUTDIR/cap-bench.md gives the medians and their ratio (target: within 2%)
# Takes about two minutes. Exit status 0 only if nothing failed. CAP_CHECK_FAKE=1 runs what it can
# over the CPU-only fake driver instead (no PyTorch there: those steps are skipped).
set -u
out=${1:?usage: cap_check.sh OUTDIR BUILD_DIR}
build=$(cd "${2:?usage: cap_check.sh OUTDIR BUILD_DIR}" && pwd)
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
mkdir -p "$out" && out=$(cd "$out" && pwd)
preload=${STREAMPOOL_PRELOAD:-$build/interpose/libstreampool.so}
cap=${CAP_CHECK_LIMIT:-20G}
cap_bytes=$((20 << 30))
[[ $cap == 20G ]] || cap_bytes=${CAP_CHECK_LIMIT_BYTES:?set CAP_CHECK_LIMIT_BYTES with CAP_CHECK_LIMIT}
log=$out/cap_check.log
: >"$log"
failures=0
say() { echo "$1" | tee -a "$log"; }
fail() {
  say "FAIL $1 ($2)"
  failures=$((failures + 1))
}
extra_env=()
if [[ ${CAP_CHECK_FAKE:-0} == 1 ]]; then
  extra_env=(STREAMPOOL_LIBCUDA="$build/fakecuda/libcuda.so.1")
fi
if [[ ! -f $preload ]]; then
  say "FAIL setup (no $preload)"
  exit 1
fi
field() { sed -n "s/.*[ ]$2=\([^ ]*\).*/\1/p" "$1" | head -n 1; }

# torch_run NAME LIMIT [ENV...]: cap_oom.py under streampool, PyTorch's allocator settings only
# those given; output in $out/NAME.{out,err}.
torch_run() {
  local name=$1 limit=$2
  shift 2
  timeout -k 10 120 env -u PYTORCH_ALLOC_CONF -u PYTORCH_CUDA_ALLOC_CONF LD_PRELOAD="$preload" \
    STREAMPOOL_LIMIT="$limit" "${extra_env[@]}" "$@" \
    python3 "$repo/tools/gpu/cap_oom.py" >"$out/$name.out" 2>"$out/$name.err"
}

# check_capped NAME: total is the cap, the growth ended in an OOM within 1 GiB below the cap.
check_capped() {
  local name=$1 rc=$2
  local total reached outcome
  total=$(sed -n 's/^mem_get_info_start .*total=\([0-9]*\).*/\1/p' "$out/$name.out")
  reached=$(sed -n 's/^grow .*reached=\([0-9]*\).*/\1/p' "$out/$name.out")
  outcome=$(sed -n 's/^grow outcome=\([a-z]*\).*/\1/p' "$out/$name.out")
  if [[ $rc -ne 0 ]]; then fail "$name" "exit status $rc: $(tail -n 1 "$out/$name.err")"
  elif [[ $total != "$cap_bytes" ]]; then fail "$name" "mem_get_info total $total, expected the cap $cap_bytes"
  elif [[ $outcome != oom ]]; then fail "$name" "the growth did not end in an out-of-memory error"
  elif (( reached > cap_bytes || reached < cap_bytes - (1 << 30) )); then
    fail "$name" "stopped at $reached bytes, not within 1 GiB below the cap"
  else say "PASS $name (total $total = the cap; out of memory at $reached bytes)"; fi
}

if ! python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1 &&
   [[ ${CAP_CHECK_FAKE:-0} == 1 ]]; then
  say "SKIP torch-async (no PyTorch with CUDA here)"
  say "SKIP torch-native (no PyTorch with CUDA here)"
  say "SKIP torch-uncapped (no PyTorch with CUDA here)"
  say "SKIP report (no PyTorch run)"
else
  torch_run torch-async "$cap" PYTORCH_ALLOC_CONF=backend:cudaMallocAsync STREAMPOOL_STATS="$out/torch-async-stats.json"
  check_capped torch-async $?
  torch_run torch-native "$cap" STREAMPOOL_STATS="$out/torch-native-stats.json"
  check_capped torch-native $?
  timeout -k 10 60 env -u STREAMPOOL_LIMIT LD_PRELOAD="$preload" PYTORCH_ALLOC_CONF=backend:cudaMallocAsync \
    python3 -c 'import torch; f, t = torch.cuda.mem_get_info(); print(f"total={t} free={f}")' \
    >"$out/torch-uncapped.out" 2>"$out/torch-uncapped.err"
  uncapped=$(sed -n 's/^total=\([0-9]*\).*/\1/p' "$out/torch-uncapped.out")
  if [[ -n $uncapped && $uncapped -gt $cap_bytes ]]; then say "PASS torch-uncapped (total $uncapped: the device's)"
  else fail torch-uncapped "total '$uncapped'"; fi
  if [[ -x $build/bin/streampool && -f $out/torch-async-stats.json ]]; then
    "$build/bin/streampool" report "$out/torch-async-stats.json" >"$out/report.txt" 2>&1
    if grep -q "cap dev 0: 20.0 GiB" "$out/report.txt"; then say "PASS report ($(grep 'cap dev 0' "$out/report.txt"))"
    else fail report "no cap line for device 0 in $out/report.txt"; fi
  else
    say "SKIP report (no streampool command or no report)"
  fi
fi

# Benchmarks: the same binary under streampool, with and without the cap, interleaved.
bench_dir=$build/bench/gpu
filter='^(pair_1MiB/real_time|pair_1MiB_from_pool/real_time|random_sizes)'
binaries=()
for binary in gpu_bench_driver gpu_bench_runtime; do
  [[ -x $bench_dir/$binary ]] && binaries+=("$binary")
done
[[ ${CAP_CHECK_FAKE:-0} == 1 ]] && binaries=(gpu_bench_driver)  # NVIDIA's cudart refuses the fake driver
if [[ ${#binaries[@]} -eq 0 ]]; then
  say "SKIP bench (no gpu_bench_driver or gpu_bench_runtime under $bench_dir)"
else
  bench_failed=0
  for rep in 1 2 3; do
    for binary in "${binaries[@]}"; do
      for mode in nocap cap; do
        limit=""
        [[ $mode == cap ]] && limit=$cap
        timeout -k 10 60 env LD_PRELOAD="$preload" STREAMPOOL_LIMIT="$limit" "${extra_env[@]}" \
          "$bench_dir/$binary" --benchmark_filter="$filter" --benchmark_min_time=0.2 --benchmark_format=json \
          >"$out/bench-$binary-$mode-$rep.json" 2>"$out/bench-$binary-$mode-$rep.err" || bench_failed=1
      done
    done
  done
  python3 - "$out" "$cap" >"$out/cap-bench.md" <<'PY'
import collections, glob, json, os, statistics, sys
out, cap = sys.argv[1], sys.argv[2]
runs = collections.defaultdict(lambda: collections.defaultdict(list))
for path in sorted(glob.glob(os.path.join(out, "bench-*.json"))):
    _, binary, mode, _ = os.path.basename(path)[:-5].split("-")
    try:
        data = json.load(open(path))
    except ValueError:
        continue
    for bench in data.get("benchmarks", []):
        if bench.get("error_occurred") or bench.get("real_time", 0) <= 0:
            continue
        runs[(binary, bench["name"])][mode].append(bench["real_time"])
print(f"| binary | workload | no cap (ns, median) | STREAMPOOL_LIMIT={cap} (ns, median) | ratio |")
print("| --- | --- | --- | --- | --- |")
rows = 0
for (binary, name), modes in sorted(runs.items()):
    if not modes["nocap"] or not modes["cap"]:
        continue
    plain, capped = statistics.median(modes["nocap"]), statistics.median(modes["cap"])
    print(f"| {binary} | {name} | {plain:.1f} | {capped:.1f} | {capped / plain:.3f} |")
    rows += 1
sys.exit(0 if rows else 1)
PY
  summary_rc=$?
  cat "$out/cap-bench.md" >>"$log"
  if [[ $bench_failed -ne 0 ]]; then fail bench "a run failed: see $out/bench-*.err"
  elif [[ $summary_rc -ne 0 ]]; then fail bench "no benchmark measured both ways: see $out/bench-*.err"
  else say "PASS bench (medians in $out/cap-bench.md)"; fi
fi

say "cap_check: $failures failure(s)"
[[ $failures -eq 0 ]]
