#!/usr/bin/env bash
# `streampool export` against the torch wheel's own memory viewer, on the GPU box:
#
#   tools/gpu/export_check.sh OUT_DIR BUILD_DIR
#
#  1. records a trace of PyTorch training (tools/gpu/torch_train.py, backend:cudaMallocAsync)
#     under LD_PRELOAD=libstreampool.so, and two traces over the fake driver (examples/pool_demo,
#     tests/python/cuda_calls.py: two streams, a failed allocation, blocks live at exit);
#  2. exports each as a torch snapshot and as a Perfetto trace, checks both with the CI checkers
#     (tests/cli/check_torch_snapshot.py, check_perfetto.py);
#  3. runs `python -m torch.cuda._memory_viz` of the torch wheel on each snapshot: trace_plot,
#     trace_plot -s, segment_plot (HTML kept in OUT_DIR), and its `stats` and `trace` printouts
#     (Python code of torch's that walks every segment, block and entry, and asserts the blocks
#     tile their segments);
#  4. draws each trace with `streampool plot` (HTML and SVG kept, for screenshots elsewhere);
#  5. runs tools/gpu/torch_export_train.py: training that records and exports its own trace
#     through the Python package (python/streampool), checked the same way.
# Everything goes to OUT_DIR (export_check.log: each command and its exit status; the traces,
# snapshots, JSON and HTML). Prints PASS/FAIL per step and exits 0 only when all pass. The HTML
# pages load the viewer's script (MemoryViz.js) from the network when opened in a browser.
set -u
if [ $# -ne 2 ]; then
  echo "usage: tools/gpu/export_check.sh OUT_DIR BUILD_DIR" >&2
  exit 2
fi
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=$(mkdir -p "$1" && cd "$1" && pwd)
build=$(cd "$2" && pwd)
cli=$build/bin/streampool
preload=$build/interpose/libstreampool.so
fake=$build/fakecuda/libcuda.so.1
python=${PYTHON:-python3}
log=$out/export_check.log
: >"$log"
status=0
say() { echo "$*" | tee -a "$log"; }
run() { say "\$ $*"; "$@" >>"$log" 2>&1; local rc=$?; say "  -> exit $rc"; return $rc; }
step() {  # step NAME COMMAND...: PASS or FAIL NAME
  local name=$1
  shift
  if run "$@"; then say "PASS $name"; else say "FAIL $name"; status=1; fi
}

say "streampool export check: $(date -u +%FT%TZ), $("$python" -c 'import torch; print("torch", torch.__version__)' 2>/dev/null || echo "no torch")"
for tool in "$cli" "$preload" "$fake"; do
  [ -e "$tool" ] || { say "FAIL missing $tool (build the streampool_cli, streampool_preload, streampool_fakecuda targets)"; exit 1; }
done

# 1. Traces.
step record-torch-train env LD_PRELOAD="$preload" STREAMPOOL_TRACE="$out/torch_train.trace" TRAIN_STEPS=20 \
  PYTORCH_ALLOC_CONF=backend:cudaMallocAsync PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync \
  "$python" "$repo/tools/gpu/torch_train.py"
traces=(torch_train)
if [ -x "$build/examples/pool_demo" ]; then
  step record-fake-pool-demo "$cli" run --fake --trace "$out/fake_pool_demo.trace" -- "$build/examples/pool_demo"
  traces+=(fake_pool_demo)
fi
step record-fake-handover env LD_PRELOAD="$preload" STREAMPOOL_LIBCUDA="$fake" STREAMPOOL_TRACE="$out/fake_handover.trace" \
  "$python" "$repo/tests/python/cuda_calls.py"
traces+=(fake_handover)

# 5. Training that records and exports itself through the Python package.
step package-torch-train env LD_PRELOAD="$preload" PYTHONPATH="$repo/python" STREAMPOOL_COMMAND="$cli" \
  "$python" "$repo/tools/gpu/torch_export_train.py" "$out"
[ -e "$out/package_train.trace" ] && traces+=(package_train)

# 2 to 4. Export, check, plot, and torch's viewer.
viz() { "$python" -m torch.cuda._memory_viz "$@"; }
for name in "${traces[@]}"; do
  trace=$out/$name.trace
  [ -e "$trace" ] || { say "FAIL $name: no trace"; status=1; continue; }
  run "$cli" replay "$trace"
  step "$name-plot" "$cli" plot "$trace" -o "$out/$name.plot.html"
  run "$cli" plot "$trace" -o "$out/$name.plot.svg"
  if [ "$name" != package_train ]; then
    step "$name-export-snapshot" "$cli" export "$trace" --format torch-snapshot -o "$out/$name.pickle"
    step "$name-export-perfetto" "$cli" export "$trace" --format perfetto -o "$out/$name.json"
  fi
  step "$name-check-snapshot" "$python" "$repo/tests/cli/check_torch_snapshot.py" "$out/$name.pickle"
  step "$name-check-perfetto" "$python" "$repo/tests/cli/check_perfetto.py" "$out/$name.json"
  step "$name-memory-viz-trace-plot" viz trace_plot "$out/$name.pickle" -o "$out/$name.trace_plot.html"
  step "$name-memory-viz-trace-plot-segments" viz trace_plot -s "$out/$name.pickle" -o "$out/$name.trace_plot_segments.html"
  step "$name-memory-viz-segment-plot" viz segment_plot "$out/$name.pickle" -o "$out/$name.segment_plot.html"
  say "\$ python -m torch.cuda._memory_viz stats $name.pickle > $name.stats.txt"
  if viz stats "$out/$name.pickle" >"$out/$name.stats.txt" 2>&1; then say "PASS $name-memory-viz-stats"; else
    say "FAIL $name-memory-viz-stats"; status=1; fi
  say "\$ python -m torch.cuda._memory_viz trace $name.pickle > $name.trace.txt"
  if viz trace "$out/$name.pickle" >"$out/$name.trace.txt" 2>&1; then say "PASS $name-memory-viz-trace"; else
    say "FAIL $name-memory-viz-trace"; status=1; fi
  tail -n 4 "$out/$name.stats.txt" | sed 's/^/    /' | tee -a "$log" >/dev/null
done
if [ -e "$out/package_train_during.pickle" ]; then
  step package-train-during-check-snapshot "$python" "$repo/tests/cli/check_torch_snapshot.py" "$out/package_train_during.pickle"
fi
if "$python" -c "import perfetto.trace_processor" >/dev/null 2>&1; then
  say "(the perfetto Python package is installed: its trace processor needs its binary, not run offline)"
fi
[ $status -eq 0 ] && say "PASS export-check" || say "FAIL export-check"
exit $status
