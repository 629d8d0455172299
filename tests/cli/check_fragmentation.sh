#!/usr/bin/env bash
# One definition of fragmentation: `run`'s report of a program, and `replay` of the trace the same
# run recorded (its table per pool, its all-pools line and its JSON) give the same figure.
# Usage: check_fragmentation.sh STREAMPOOL_COMMAND PROGRAM WORK_PREFIX EXPECTED (e.g. 40.0%)
set -euo pipefail
cli=$1
program=$2
work=$3
expected=$4
"$cli" run --fake --trace "$work.trace" -- "$program" 2>"$work.report"
run_figure=$(awk '$2 ~ /^device/ {print $NF}' "$work.report")
"$cli" replay "$work.trace" >"$work.replay"
replay_pool=$(awk '$1 ~ /^0x/ {print $NF}' "$work.replay")
replay_all=$(sed -n 's/.*all pools:.* fragmentation \([0-9.]*%\).*/\1/p' "$work.replay")
replay_json=$("$cli" replay "$work.trace" --json | sed -n 's/.*"used_at_peak_reserved":[0-9]*,"fragmentation":\([0-9.]*\).*/\1/p')
replay_json=$(awk -v f="$replay_json" 'BEGIN {printf "%.1f%%", 100 * f}')
echo "run's report: $run_figure; replay: pool $replay_pool, all pools $replay_all, JSON $replay_json; expected $expected"
for figure in "$run_figure" "$replay_pool" "$replay_all" "$replay_json"; do
  test "$figure" = "$expected"
done
