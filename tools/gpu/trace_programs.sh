#!/usr/bin/env bash
# Traces of real programs under streampool: a PyTorch training run (PYTORCH_CUDA_ALLOC_CONF=
# backend:cudaMallocAsync, torch_train.py) and a JAX run (XLA_PYTHON_CLIENT_ALLOCATOR=cuda_async,
# jax_async.py), each run with `streampool run --trace`, then replayed on the CPU as recorded and
# with two what-if settings (release threshold 0: give memory back at every synchronisation;
# 32 MiB granules: map as coarsely as NVIDIA's pool grows), and plotted.
#
# Usage: tools/gpu/trace_programs.sh [--fake] [BUILD_DIR]     (from the repository root)
#   BUILD_DIR   default build-gpu; configured and the needed targets built when missing
#   --fake      no GPU: the demo program (examples/pool_demo) over the fake driver instead; the
#               Python programs are only syntax-checked
# Results go to $OUT (default BUILD_DIR/trace-programs), at most 8 files: summary.txt (reports and
# replays), logs.tar.gz (every output), and per program NAME.html (the plot) and NAME.trace.gz.
# Prints PASS/FAIL/SKIP lines; exits non-zero when a program failed.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
fake=0
if [[ ${1:-} == --fake ]]; then
  fake=1
  shift
fi
build=${1:-$repo/build-gpu}
out=${OUT:-$build/trace-programs}
python=${PYTHON:-python3}

if [[ ! -x $build/bin/streampool || ! -f $build/interpose/libstreampool.so || ! -x $build/examples/pool_demo ]]; then
  [[ -f $build/CMakeCache.txt ]] || "$repo/tools/setup.sh" "$build" || exit 1
  cmake --build "$build" -j "$(nproc)" --target streampool_cli streampool_preload streampool_fakecuda pool_demo >/dev/null || exit 1
fi
build=$(cd "$build" && pwd)
streampool=$build/bin/streampool
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
summary=$out/summary.txt
: >"$summary"
failures=0

run_flags=()
[[ $fake == 1 ]] && run_flags+=(--fake)

# trace NAME TIMEOUT COMMAND...: run, replay three ways, plot.
trace() {
  local name=$1 limit=$2
  shift 2
  local status=0
  timeout "$limit" "$streampool" run "${run_flags[@]}" --trace "$work/$name.%p.trace" \
    --stats "$work/$name.stats.%p.json" -- "$@" >"$work/$name.out" 2>"$work/$name.err" || status=$?
  # The program's own process wrote the largest trace (helpers it forked write their own).
  local file
  file=$(ls -S "$work/$name".*.trace 2>/dev/null | head -n 1)
  {
    echo "=== $name: exit status $status"
    sed -n '/^streampool [0-9.]*: /,$p' "$work/$name.err"
  } >>"$summary"
  if [[ $status != 0 || -z $file ]]; then
    echo "FAIL $name exit status $status${file:+}${file:- no trace}"
    tail -n 8 "$work/$name.err" | sed 's/^/  | /'
    failures=$((failures + 1))
    return
  fi
  {
    echo "--- replay as recorded"
    "$streampool" replay "$file"
    echo "--- what if: --release-threshold 0 (memory back to the device at every synchronisation)"
    "$streampool" replay "$file" --release-threshold 0
    echo "--- what if: --granule 32M (mapped as coarsely as NVIDIA's pool grows)"
    "$streampool" replay "$file" --granule 32M
  } >>"$summary" 2>&1
  "$streampool" replay "$file" --json >"$work/$name.replay.json" 2>>"$work/$name.err"
  if ! "$streampool" plot "$file" -o "$out/$name.html" 2>>"$work/$name.err"; then
    echo "FAIL $name plot"
    failures=$((failures + 1))
    return
  fi
  "$streampool" plot "$file" -o "$work/$name.svg" 2>>"$work/$name.err"
  gzip -c "$file" >"$out/$name.trace.gz"
  local events
  events=$(sed -n 's/.*"events":\([0-9]*\).*/\1/p' "$work/$name.replay.json")
  if [[ -z $events || $events == 0 ]]; then
    echo "FAIL $name the trace holds no events"
    failures=$((failures + 1))
    return
  fi
  echo "PASS $name events=$events $(sed -n 's/.*"peak_reserved":\([0-9]*\).*/peak_reserved=\1/p' "$work/$name.replay.json")"
}

syntax_only() {
  if "$python" -c 'import ast, sys; ast.parse(open(sys.argv[1]).read(), sys.argv[1])' "$2" 2>"$work/$1.syntax.log"; then
    echo "SKIP $1 syntax checked only; needs a GPU"
  else
    echo "FAIL $1 does not parse"
    failures=$((failures + 1))
  fi
}

if [[ $fake == 1 ]]; then
  trace pool_demo 120 "$build/examples/pool_demo"
  syntax_only torch_train "$here/torch_train.py"
  syntax_only jax_async "$here/jax_async.py"
else
  trace torch_train 900 "$python" "$here/torch_train.py"
  trace jax_async 600 env XLA_PYTHON_CLIENT_ALLOCATOR=cuda_async XLA_PYTHON_CLIENT_PREALLOCATE=false \
    "$python" "$here/jax_async.py"
fi

tar -czf "$out/logs.tar.gz" -C "$work" --exclude='*.trace' . 2>/dev/null
echo "results in $out: $(cd "$out" && ls | tr '\n' ' ')"
exit $((failures > 0))
