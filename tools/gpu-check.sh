#!/usr/bin/env bash
# The one script run on the GPU box (from the repo root, as root, with $OUT a folder whose files
# come back): build, the driver-API conformance suite on NVIDIA's driver alone and under
# LD_PRELOAD=libstreampool.so, the real programs (tools/gpu/run_programs.sh), the GPU benchmarks
# (bench/gpu/run.sh) and a summary.
#
#   tools/gpu-check.sh          on a GPU box
#   tools/gpu-check.sh --fake   dry run without a GPU: streampool over the fake driver
#                               (STREAMPOOL_LIBCUDA), no driver-alone run, no GPU-only programs,
#                               no benchmarks
#
# Files written to $OUT (at most 8; default $OUT: ./gpu-check-out):
#   build.log, conformance-driver.log, conformance-streampool.log, programs.log, bench.log,
#   bench-results.tar.gz (bench/gpu/run.sh's JSON and summary), core-bench.log, core-bench.json,
#   summary.txt
# Environment (optional): OUT, BUILD_DIR (default build-gpu, or build-gpucheck-fake with --fake),
# GPU_CHECK_BUDGET, STREAMPOOL_COMMIT (recorded in the summary when the tree has no .git).
# Every step runs under `timeout` with a share of a total budget (GPU_CHECK_BUDGET seconds,
# default 450), and a failed step never stops the next one. Exit status 0 only if every step passed.
set -u

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo" || exit 2
mode=gpu
if [[ ${1:-} == --fake ]]; then
  mode=fake
elif [[ $# -gt 0 ]]; then
  echo "usage: $0 [--fake]" >&2
  exit 2
fi
out=${OUT:-$repo/gpu-check-out}
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
if [[ $mode == gpu ]]; then
  build=${BUILD_DIR:-$repo/build-gpu}
else
  build=${BUILD_DIR:-$repo/build-gpucheck-fake}
fi
work=$build/gpu-check  # files that do not come back (XML, stats, bench JSON before packing)
budget_total=${GPU_CHECK_BUDGET:-450}
deadline=$((SECONDS + budget_total))
jobs=$(nproc 2>/dev/null || echo 2)
summary=()
overall=0

note() { echo "gpu-check: $*"; }
add() { summary+=("$*"); }
# budget CAP RESERVE: seconds for a step, leaving RESERVE seconds for the steps after it.
budget() {
  local left=$((deadline - SECONDS - $2))
  ((left > $1)) && left=$1
  echo "$left"
}
# Keeps a log small enough to come back: its head and tail when it is long.
shrink() {
  local file=$1 lines
  lines=$(wc -l <"$file")
  if ((lines > 4000)); then
    { head -n 300 "$file"; echo "... ($((lines - 2300)) lines cut) ..."; tail -n 2000 "$file"; } >"$file.cut"
    mv "$file.cut" "$file"
  fi
}
# gtest_counts LOG: "passed=P failed=F skipped=S" from gtest's closing lines.
gtest_counts() {
  local log=$1 passed failed skipped
  passed=$(sed -n 's/^\[  PASSED  \] \([0-9][0-9]*\) tests\{0,1\}\..*/\1/p' "$log" | tail -n 1)
  failed=$(sed -n 's/^\[  FAILED  \] \([0-9][0-9]*\) tests\{0,1\}, listed below:.*/\1/p' "$log" | tail -n 1)
  skipped=$(sed -n 's/^\[  SKIPPED \] \([0-9][0-9]*\) tests\{0,1\}, listed below:.*/\1/p' "$log" | tail -n 1)
  echo "passed=${passed:-?} failed=${failed:-0} skipped=${skipped:-0}"
}
# The names gtest lists as failed, on one line.
gtest_failures() {
  sed -n 's/^\[  FAILED  \] \([A-Za-z_0-9]*\.[A-Za-z_0-9/]*\).*/\1/p' "$1" | sort -u | tr '\n' ' '
}
rc_text() {
  case $1 in
    0) echo "ok" ;;
    124 | 137) echo "TIMEOUT" ;;
    *) echo "FAILED (exit $1)" ;;
  esac
}

rm -rf "$work"
mkdir -p "$work"
rm -f "$out"/{build,conformance-driver,conformance-streampool,programs,bench}.log "$out"/bench-results.tar.gz \
  "$out"/summary.txt
add "streampool gpu-check, mode $mode"
add "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
# A copy of the working tree may come without .git: STREAMPOOL_COMMIT can name the commit then.
commit=${STREAMPOOL_COMMIT:-$(git rev-parse --verify -q HEAD 2>/dev/null || echo "unknown (no git repository here)")}
# (A copy made by the device tool carries no usable git state: only count changes when no
# commit was named.)
dirty=0
[[ -n ${STREAMPOOL_COMMIT:-} ]] || dirty=$(git status --porcelain 2>/dev/null | wc -l)
add "commit: $commit$([[ $dirty -gt 0 ]] && echo " (+$dirty uncommitted paths)")"
add "host: $(hostname), $jobs CPUs, $(uname -r)"
if [[ $mode == gpu ]]; then
  gpu=$(timeout 30 nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv,noheader 2>/dev/null | head -n 1)
  add "gpu (name, driver, compute capability, memory): ${gpu:-unknown (nvidia-smi failed)}"
  driver=$(timeout 30 nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n 1)
  add "driver version: ${driver:-unknown}"
fi

# 1. Configure and build.
step_start=$SECONDS
b=$(budget 240 200)
generator="Unix Makefiles"
keep_going=(-k)
if command -v ninja >/dev/null 2>&1; then
  generator=Ninja
  keep_going=(-k 0)
fi
# What the checks need first, then (on the GPU) everything else, the benchmarks included.
everything=1
[[ $mode == fake ]] && everything=0
note "build ($generator, $jobs jobs, ${b}s) into $build"
timeout -k 10 "$b" bash -c '
  set -x
  cmake --version | head -n 1
  cmake -S "$1" -B "$2" -G "$3" -DCMAKE_BUILD_TYPE=Release || exit $?
  cmake --build "$2" -j "$4" --target conformance_tests streampool_preload streampool_fakecuda -- "${@:6}"
  first=$?
  [[ $5 -eq 1 ]] || exit $first
  cmake --build "$2" -j "$4" -- "${@:6}"
' gpu-check-build "$repo" "$build" "$generator" "$jobs" "$everything" "${keep_going[@]}" >"$out/build.log" 2>&1
build_rc=$?
shrink "$out/build.log"
failed_targets=$(grep -c '^FAILED: ' "$out/build.log")
add "step build: $(rc_text $build_rc), $((SECONDS - step_start)) s, $generator, failed build edges: $failed_targets"
[[ $build_rc -eq 0 ]] || overall=1

conformance=$build/tests/conformance/conformance_tests
preload=$build/interpose/libstreampool.so
[[ -f $preload ]] || preload=$(find "$build" -name libstreampool.so -type f 2>/dev/null | head -n 1)
fake_lib=$build/fakecuda/libcuda.so.1
add "libstreampool.so: ${preload:-not built}"

# run_conformance NAME LOG CAP RESERVE ENV...: the suite under `env ENV...`. A test that kills the
# process (a segfault inside a driver) is excluded and the suite run again, at most 3 times, so
# one crash does not hide the other results; the counts are those of the last run.
run_conformance() {
  local name=$1 log=$2 cap=$3 reserve=$4
  shift 4
  local start=$SECONDS limit
  limit=$(budget "$cap" "$reserve")
  if [[ ! -x $conformance ]]; then
    echo "conformance_tests was not built" >"$log"
    add "step $name: FAILED (conformance_tests not built)"
    overall=1
    return
  fi
  if ((limit < 10)); then
    add "step $name: SKIPPED (no time left)"
    overall=1
    return
  fi
  note "$name (${limit}s)"
  : >"$log"
  local excluded="" crashed="" attempt rc=0 attempt_log left
  for attempt in 1 2 3 4; do
    left=$((start + limit - SECONDS))
    ((left < 5)) && break
    attempt_log=$work/$name.attempt$attempt.log
    timeout -k 10 "$left" env "$@" "$conformance" --gtest_color=no ${excluded:+"--gtest_filter=-$excluded"} \
      "--gtest_output=xml:$work/$name.xml" >"$attempt_log" 2>&1
    rc=$?
    [[ $attempt -gt 1 ]] && echo "=== run $attempt, excluding crashed tests: $excluded" >>"$log"
    cat "$attempt_log" >>"$log"
    # Finished (gtest printed its closing line), timed out, or out of retries: stop here.
    if grep -q '^\[==========\] .* ran\.' "$attempt_log" || [[ $rc -eq 124 || $rc -eq 137 || $attempt -eq 4 ]]; then
      break
    fi
    local victim
    victim=$(sed -n 's/^\[ RUN      \] \(.*\)$/\1/p' "$attempt_log" | tail -n 1)
    [[ -z $victim ]] && break
    echo "=== $victim ended the process (exit $rc)" >>"$log"
    crashed="$crashed $victim"
    excluded="${excluded:+$excluded:}$victim"
  done
  shrink "$log"
  add "step $name: $(rc_text $rc), $((SECONDS - start)) s, $(gtest_counts "$attempt_log")"
  local failing
  failing=$(gtest_failures "$attempt_log")
  [[ -n $failing ]] && add "  failing: $failing"
  if [[ -n $crashed ]]; then
    add "  crashed the process:$crashed"
    overall=1
  fi
  [[ $rc -eq 0 ]] || overall=1
}

# 2. The conformance suite on NVIDIA's driver alone.
if [[ $mode == gpu ]]; then
  run_conformance conformance-driver "$out/conformance-driver.log" 90 150 -u LD_PRELOAD -u STREAMPOOL_LIBCUDA
else
  add "step conformance-driver: SKIPPED (--fake: no NVIDIA driver)"
fi

# 3. The same suite under streampool (over the real driver, or over the fake with --fake).
if [[ -z $preload || ! -f $preload ]]; then
  echo "libstreampool.so was not built" >"$out/conformance-streampool.log"
  add "step conformance-streampool: FAILED (libstreampool.so not built)"
  overall=1
else
  sp_env=("LD_PRELOAD=$preload" "STREAMPOOL_STATS=$work/conformance-stats.json")
  if [[ $mode == gpu ]]; then
    sp_env=(-u STREAMPOOL_LIBCUDA "${sp_env[@]}")
  else
    sp_env=("STREAMPOOL_LIBCUDA=$fake_lib" "${sp_env[@]}")
  fi
  run_conformance conformance-streampool "$out/conformance-streampool.log" 90 120 "${sp_env[@]}"
  if [[ -f $work/conformance-stats.json ]]; then
    { echo; echo "STREAMPOOL_STATS report:"; cat "$work/conformance-stats.json"; } >>"$out/conformance-streampool.log"
    add "  $(python3 tools/gpu/stats_counters.py "$work/conformance-stats.json" 2>&1 | head -n 1)"
  else
    add "  no STREAMPOOL_STATS report was written"
  fi
fi

# 4. Real programs, each without and with streampool.
step_start=$SECONDS
b=$(budget 200 40)
if ((b < 10)); then
  add "step programs: SKIPPED (no time left)"
  overall=1
else
  note "programs (${b}s)"
  program_args=()
  [[ $mode == fake ]] && program_args=(--fake)
  STREAMPOOL_PRELOAD=$preload STREAMPOOL_FAKE_LIB=$fake_lib \
    timeout -k 10 "$b" tools/gpu/run_programs.sh "${program_args[@]}" "$build" >"$out/programs.log" 2>&1
  rc=$?
  add "step programs: $(rc_text $rc), $((SECONDS - step_start)) s, pass=$(grep -c '^PASS ' "$out/programs.log")" \
    "fail=$(grep -c '^FAIL ' "$out/programs.log") skip=$(grep -c '^SKIP ' "$out/programs.log")"
  while read -r line; do add "  $line"; done < <(grep -E '^(PASS|FAIL|SKIP) ' "$out/programs.log")
  [[ $rc -eq 0 ]] || overall=1
fi

# 5. The GPU benchmarks (another part of the project writes bench/gpu/run.sh).
step_start=$SECONDS
if [[ $mode == fake ]]; then
  add "step bench: SKIPPED (--fake: needs a GPU)"
elif [[ ! -x bench/gpu/run.sh ]]; then
  add "step bench: SKIPPED (no bench/gpu/run.sh)"
else
  b=$(budget 180 5)
  if ((b < 20)); then
    add "step bench: SKIPPED (no time left)"
    overall=1
  else
    note "bench (${b}s)"
    # Its own folder, packed into one file afterwards: $OUT takes only a few files.
    STREAMPOOL_PRELOAD=$preload BENCH_RUN_TIMEOUT=$(((b - 10) / 2)) \
      timeout -k 10 "$b" bench/gpu/run.sh "$work/bench" "$build" >"$out/bench.log" 2>&1
    rc=$?
    if [[ -f $work/bench/bench-summary.md ]]; then
      { echo; echo "bench-summary.md:"; cat "$work/bench/bench-summary.md"; } >>"$out/bench.log"
    fi
    [[ -d $work/bench ]] && tar -czf "$out/bench-results.tar.gz" -C "$work" bench 2>>"$out/bench.log"
    add "step bench: $(rc_text $rc), $((SECONDS - step_start)) s, results in bench-results.tar.gz"
    [[ $rc -eq 0 ]] || overall=1
  fi
fi

# 6. The engine's own benchmarks on this machine's cores (thread scaling needs 16 of them).
step_start=$SECONDS
if [[ ! -x bench/core/run.sh ]]; then
  add "step core-bench: SKIPPED (no bench/core/run.sh)"
else
  b=$(budget 120 5)
  if ((b < 20)); then
    add "step core-bench: SKIPPED (no time left)"
  else
    note "core bench (${b}s)"
    timeout -k 10 "$b" bench/core/run.sh "$work/core-bench" "$build" >"$out/core-bench.log" 2>&1
    rc=$?
    [[ -f $work/core-bench/core-bench-summary.md ]] && cat "$work/core-bench/core-bench-summary.md" >>"$out/core-bench.log"
    [[ -f $work/core-bench/core-bench.json ]] && cp "$work/core-bench/core-bench.json" "$out/core-bench.json"
    add "step core-bench: $(rc_text $rc), $((SECONDS - step_start)) s"
    [[ $rc -eq 0 ]] || overall=1
  fi
fi

add "total: $SECONDS s of a ${budget_total} s budget"
add "overall: $([[ $overall -eq 0 ]] && echo PASS || echo FAIL)"
printf '%s\n' "${summary[@]}" >"$out/summary.txt"
echo "=== summary ($out/summary.txt)"
cat "$out/summary.txt"
exit "$overall"
