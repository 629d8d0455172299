#!/usr/bin/env bash
# A group cap (STREAMPOOL_GROUP, STREAMPOOL_GROUP_LIMIT=30G) shared by PyTorch processes on one GPU,
# one of them killed with kill -9 while it holds its share:
#   1. member A takes 20 GiB and holds it;
#   2. member B sees the group's limit as mem_get_info's total and what A leaves as free, and a
#      15 GiB tensor is refused (out of memory at the group's cap, not the device's);
#   3. A is killed with SIGKILL; member C then takes 25 GiB (A's share reclaimed when C's admission
#      would have failed), and says how long that took.
#
#   tools/gpu/group_check.sh OUT_DIR BUILD_DIR
#
# PyTorch runs with backend:cudaMallocAsync under LD_PRELOAD=BUILD_DIR/interpose/libstreampool.so.
# One PASS/FAIL line per step; OUT_DIR/group_check.log holds every member's output.
set -u
out=$(mkdir -p "${1:?usage: group_check.sh OUT_DIR BUILD_DIR}" && cd "$1" && pwd)
build=$(cd "${2:?usage: group_check.sh OUT_DIR BUILD_DIR}" && pwd)
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
log=$out/group_check.log
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
member=(env LD_PRELOAD="$build/interpose/libstreampool.so" PYTORCH_ALLOC_CONF=backend:cudaMallocAsync
        PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync STREAMPOOL_GROUP=gpucheck STREAMPOOL_GROUP_DIR="$dir"
        STREAMPOOL_GROUP_LIMIT=30G python3 "$repo/tools/gpu/group_member.py")
status=0
step() { if [[ $2 == 0 ]]; then echo "PASS group $1"; else echo "FAIL group $1"; status=1; fi; }

"${member[@]}" hold 20 "$dir/ready" >"$dir/a.out" 2>&1 &
holder=$!
for _ in $(seq 600); do [[ -e $dir/ready ]] && break; sleep 0.1; done
[[ -e $dir/ready ]]; step "member-a-holds-20GiB" $?
"${member[@]}" probe 15 >"$dir/b.out" 2>&1
grep -q "probe_start free_gib=\(9\|10\)\.[0-9]* total_gib=30.000" "$dir/b.out" &&
  grep -q "probe_outcome=oom" "$dir/b.out"; step "member-b-sees-the-group-and-is-refused-at-its-cap" $?
kill -9 "$holder"; wait "$holder" 2>/dev/null
killed_at=$(date +%s.%N)
"${member[@]}" take 25 >"$dir/c.out" 2>&1
done_at=$(date +%s.%N)
grep -q "take_outcome=allocated" "$dir/c.out"; step "member-c-gets-the-killed-members-share" $?
{
  echo "== member A (hold 20 GiB, then kill -9)"; cat "$dir/a.out"
  echo "== member B (probe 15 GiB)"; cat "$dir/b.out"
  echo "== member C (take 25 GiB after the kill)"; cat "$dir/c.out"
  echo "from the kill to C's 25 GiB allocated (C's start included): $(python3 -c "print(round($done_at - $killed_at, 2))") s"
} >"$log"
cat "$log"
exit $status
