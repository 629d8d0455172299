#!/usr/bin/env bash
# The group cap's random-kill test (tests/control/group_sigkill_test.cpp) at the scale the issue asks
# for: COPIES processes at once, each killing KILLS members at random instants (each copy its own
# group in its own folder), then the count checked exact after every kill. Over the fake driver's
# build: no GPU is used, only fast forks.
#
#   tools/gpu/group_kills.sh BUILD_DIR COPIES KILLS
# Prints "PASS kills (N members killed ...)" or "FAIL kills (...)".
set -u
build=${1:?usage: group_kills.sh BUILD_DIR COPIES KILLS}
copies=${2:?usage: group_kills.sh BUILD_DIR COPIES KILLS}
kills=${3:?usage: group_kills.sh BUILD_DIR COPIES KILLS}
binary=$build/tests/control/control_group_tests
[ -x "$binary" ] || { echo "FAIL kills (no $binary)"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
started=$SECONDS
pids=()
for i in $(seq 1 "$copies"); do
  STREAMPOOL_GROUP_KILLS=$kills "$binary" --gtest_filter='*MembersKilledAtRandomInstants*' >"$work/$i.out" 2>&1 &
  pids+=($!)
done
failed=0
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || failed=$((failed + 1))
done
cat "$work"/*.out
held=$(awk '/ kills in .* with the lock held$/ { n += $(NF - 6) } END { print n + 0 }' "$work"/*.out)
total=$(awk '/ kills in .* with the lock held$/ { n += $1 } END { print n + 0 }' "$work"/*.out)
if [ "$failed" -eq 0 ] && [ "${total:-0}" -eq $((copies * kills)) ]; then
  echo "PASS kills ($total members killed with SIGKILL at random instants by $copies processes at once in $((SECONDS - started)) s, ${held:-0} of them holding the group lock; the count exact after each)"
else
  echo "FAIL kills ($failed of $copies copies failed; ${total:-0} kills counted)"
  exit 1
fi
