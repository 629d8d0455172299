#!/usr/bin/env bash
# The out-of-memory report on a GPU: PyTorch's training step (tools/gpu/cap_oom.py --grow-batch)
# with PYTORCH_ALLOC_CONF=backend:cudaMallocAsync, under streampool and STREAMPOOL_LIMIT=8G, the
# batch doubled until it runs out of memory.
#
#   BUILD=build tools/gpu/oom_check.sh OUTDIR
#
# BUILD (default: build) holds a built tree (interpose/libstreampool.so, bin/streampool). Steps, one
# "PASS name" / "FAIL name (why)" line each, logs in OUTDIR:
#   torch-oom   the loop ends in torch.cuda.OutOfMemoryError; its stderr (OUTDIR/torch-oom.err) holds
#               streampool's report exactly once, with the 8 GiB cap and an explanation line;
#               streampool.oom_report() (OUTDIR/oom_report.json) is a dict with the cap, the
#               request, a cause and the count of failures
#   report      the STREAMPOOL_STATS report counts the failures (`streampool report` prints them)
# Takes well under a minute. Exit status 0 only if nothing failed. OOM_CHECK_FAKE=1 runs the same
# checks over the CPU-only fake driver (a 16 GiB device), with the PyTorch loop replaced by 1 GiB
# stream-ordered allocations through ctypes (tests/python/cuda_calls.py) until one fails.
set -u
out=${1:?usage: BUILD=build tools/gpu/oom_check.sh OUTDIR}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$(cd "${BUILD:-$repo/build}" && pwd)
mkdir -p "$out" && out=$(cd "$out" && pwd)
preload=$build/interpose/libstreampool.so
limit=8G
limit_bytes=$((8 << 30))
log=$out/oom_check.log
: >"$log"
failures=0
say() { echo "$1" | tee -a "$log"; }
fail() {
  say "FAIL $1 ($2)"
  failures=$((failures + 1))
}
if [[ ! -f $preload ]]; then
  say "FAIL setup (no $preload)"
  exit 1
fi

program=(python3 "$repo/tools/gpu/cap_oom.py" --grow-batch --oom-report "$out/oom_report.json")
extra_env=(PYTORCH_ALLOC_CONF=backend:cudaMallocAsync)
if [[ ${OOM_CHECK_FAKE:-0} == 1 ]]; then
  extra_env=(STREAMPOOL_LIBCUDA="$build/fakecuda/libcuda.so.1" STREAMPOOL_FAKE_MEMORY=16G
             PYTHONPATH="$repo/python:$repo/tests/python")
  program=(python3 -c '
import json, sys, cuda_calls, streampool
cuda = cuda_calls.Driver()
stream = cuda.stream()
held = []
while True:
    pointer = cuda.alloc(1 << 30, stream)
    if pointer < 0:
        print(f"grow_batch outcome=oom batch={len(held)}")
        break
    held.append(pointer)
report = streampool.oom_report()
json.dump(report, open(sys.argv[1], "w"), indent=1)
print("oom_report cause=%s failures=%d" % (report["cause"], report["failures"]))
' "$out/oom_report.json")
else
  extra_env+=(PYTHONPATH="$repo/python")
fi

timeout -k 10 300 env -u PYTORCH_CUDA_ALLOC_CONF LD_PRELOAD="$preload" STREAMPOOL_LIMIT="$limit" \
  STREAMPOOL_STATS="$out/stats.json" "${extra_env[@]}" "${program[@]}" >"$out/torch-oom.out" 2>"$out/torch-oom.err"
rc=$?
reports=$(grep -c '^streampool: out of memory: ' "$out/torch-oom.err")
explanations=$(grep -c '^streampool:   explanation: ' "$out/torch-oom.err")
if [[ $rc -ne 0 ]]; then fail torch-oom "exit status $rc: $(tail -n 1 "$out/torch-oom.err")"
elif ! grep -q '^grow_batch outcome=oom' "$out/torch-oom.out"; then fail torch-oom "the loop did not run out of memory"
elif [[ $reports -ne 1 || $explanations -ne 1 ]]; then
  fail torch-oom "$reports reports and $explanations explanations on stderr, expected one each"
elif ! grep -q '^streampool:   cap 8.0 GiB, ' "$out/torch-oom.err"; then fail torch-oom "the report does not name the 8 GiB cap"
elif ! why=$(python3 - "$out/oom_report.json" "$limit_bytes" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
assert isinstance(report, dict), "oom_report() gave no report"
assert report["limit"] == int(sys.argv[2]), f"limit {report['limit']}"
assert report["bytes"] > 0 and report["failures"] >= 1, report
assert report["cause"] in ("pending_frees", "fragmentation", "held_outside", "cap_reached", "device_full",
                           "pool_limit"), report["cause"]
assert report["pools"] and report["pools"][0]["handle"] == report["pool"], report["pools"]
print(f"{report['cause']}, {report['failures']} failure(s), the last of {report['bytes']} bytes")
PY
); then fail torch-oom "oom_report.json: $(tail -n 1 <<<"$why")"
else say "PASS torch-oom ($(sed -n 's/^grow_batch //p' "$out/torch-oom.out"); report: $why; explanation:$(sed -n 's/^streampool:   explanation://p' "$out/torch-oom.err"))"
fi

if [[ -x $build/bin/streampool && -f $out/stats.json ]]; then
  "$build/bin/streampool" report "$out/stats.json" >"$out/report.txt" 2>&1
  if grep -q '^  out-of-memory failures: [1-9]' "$out/report.txt"; then
    say "PASS report ($(grep -o 'out-of-memory failures: [0-9]*' "$out/report.txt"))"
  else fail report "no out-of-memory count in $out/report.txt"; fi
else
  fail report "no streampool command or no $out/stats.json"
fi

say "oom_check: $failures failure(s)"
[[ $failures -eq 0 ]]
