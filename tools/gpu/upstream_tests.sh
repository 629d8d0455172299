#!/usr/bin/env bash
# The frameworks' own allocator tests, which nobody here wrote, with streampool's pluggable allocator
# and without it: PyTorch's test/test_cuda.py (a selection: its allocator, memory, stream and graph
# tests) with streampool.torch.use(), and CuPy's tests/cupy_tests/cuda_tests/test_memory.py with
# streampool.cupy.use(), each selected by the staged conftest (upstream_conftest.py) before the
# suite's first CUDA allocation. Each suite runs twice, with the framework's allocator and with
# streampool's, one run after the other (some tests size themselves from the free memory), and
# upstream_compare.py puts the outcomes side by side: a test failing in both is the test's; one
# failing under streampool alone is a finding, printed with its traceback.
#
#   tools/gpu/upstream_tests.sh [--fake] [BUILD_DIR]
#
# BUILD_DIR (default build-gpu): a streampool build folder; libstreampool_alloc.so is built there
# first (tools/setup.sh configures the folder if it has no build files). The tests come from
# UPSTREAM_TESTS (default .gl/upstream-tests of the repository), staged by stage_upstream_tests.sh;
# a suite not staged, or whose modules the Python lacks (the wheels' test dependencies: pytest,
# psutil, expecttest ...), is SKIPped with the reason.
#
# --fake: no GPU; the library's driver is the fake (STREAMPOOL_LIBCUDA). The frameworks' own CUDA
# does not run over the fake: this only shows that the script, the staging and the reports work.
#
# Writes under $OUT (default BUILD_DIR/upstream-tests): upstream_tests.log (the summary below),
# SUITE-native.log and SUITE-streampool.log (pytest's full output) and SUITE-compare.md. The
# summary has, per suite, the outcome counts side by side, then "fail under streampool only" (each
# with its traceback), those at a documented limit of every pluggable allocator (PyTorch's
# memory_stats(), snapshots ...: "does not yet support"), and "fail with both allocators"; a last
# line "upstream-tests: ..." per suite. Exits 1 if a test fails under streampool alone for another
# reason, 0 otherwise (skipped suites included).
#
# Environment: PYTHON, UPSTREAM_TESTS, UPSTREAM_BUDGET (seconds for the whole script, default 290),
# UPSTREAM_TORCH_SELECT (pytest -k expression for test_cuda.py, default below), UPSTREAM_CUPY_SELECT
# (default: every test of test_memory.py).
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
python=${PYTHON:-python3}
start=$(date +%s)
mode=gpu
[[ ${1:-} == --fake ]] && { mode=fake; shift; }
[[ ${1:-} == -* ]] && { echo "usage: $0 [--fake] [BUILD_DIR]" >&2; exit 2; }
build=${1:-$repo/build-gpu}
[[ $build == /* ]] || build=$repo/$build
out=${OUT:-$build/upstream-tests}
tests=${UPSTREAM_TESTS:-$repo/.gl/upstream-tests}
budget=${UPSTREAM_BUDGET:-290}
mkdir -p "$out" "$build"
log=$out/upstream_tests.log
: >"$log"
say() { echo "$*" | tee -a "$log"; }

# The allocator, tests, memory pools, streams, graphs and caches of test_cuda.py: what an allocator
# changes. (TestCuda's other tests are about kernels, autocast, RNG and devices.)
torch_select=${UPSTREAM_TORCH_SELECT:-"alloc or memory or mem_pool or mempool or pool or cache or stream or graph or pin or oom or empty or snapshot or fraction"}
cupy_select=${UPSTREAM_CUPY_SELECT:-}

source "$here/build_targets.sh"
build_targets "$build" libstreampool_alloc.so streampool_alloc streampool_fakecuda || exit 1
library=$build/pluggable/libstreampool_alloc.so
[[ -f $library ]] || { say "FAIL setup no $library"; exit 1; }
export PYTHONPATH=$repo/python${PYTHONPATH:+:$PYTHONPATH} STREAMPOOL_LIBRARY=$library PYTHONDONTWRITEBYTECODE=1
[[ $mode == fake ]] && export STREAMPOOL_LIBCUDA=$build/fakecuda/libcuda.so.1
unset LD_PRELOAD STREAMPOOL_UPSTREAM
versions=$("$python" - <<'EOF' 2>&1
import importlib
found = []
for name in ("torch", "cupy", "pytest", "numpy", "psutil", "expecttest"):
    try:
        found.append(f"{name} {getattr(importlib.import_module(name), '__version__', '?')}")
    except Exception as error:  # pylint: disable=broad-except
        found.append(f"{name} missing ({type(error).__name__})")
print(", ".join(found))
EOF
)
say "# upstream tests from $tests, $mode, $("$python" --version 2>&1): $versions"
say "# sources: $(sed "s/ | [^|]* | / at /; s/ | sha256 [0-9a-f]*//" "$tests/SOURCES.txt" 2>/dev/null | tr "\n" ";")"

failures=0
# run_suite NAME FRAMEWORK FILE SELECT SHARE: both runs of one suite within SHARE seconds.
run_suite() {
  local name=$1 framework=$2 file=$3 select=$4 share=$5 missing collected limit which
  if [[ ! -f $tests/$file ]]; then
    say "SKIP $name: $file is not staged in $tests (tools/gpu/stage_upstream_tests.sh --$name SRC)"
    return
  fi
  local args=(-m pytest -p no:cacheprovider --rootdir "$tests" "$tests/$file")
  [[ -n $select ]] && args+=(-k "$select")
  # What the suite needs that this Python lacks: the import errors of a collection (-q: one node
  # id a line).
  collected=$(cd "$tests" && timeout 120 env STREAMPOOL_UPSTREAM= "$python" "${args[@]}" --collect-only -q 2>&1)
  args+=(-v -rfEs --tb=short)
  missing=$(grep -oE "No module named '?[A-Za-z0-9_.]+" <<<"$collected" | sed "s/No module named '\{0,1\}//" | sort -u | tr '\n' ' ')
  if [[ -n $missing ]]; then
    say "SKIP $name: this Python lacks the module(s) $missing(pip install them to run the suite)"
    return
  fi
  if ! grep -qE '^[0-9]+ tests? collected|::' <<<"$collected"; then
    say "FAIL $name: pytest collected nothing:"
    tail -n 8 <<<"$collected" | sed 's/^/  | /' | tee -a "$log"
    failures=$((failures + 1))
    return
  fi
  say "# $name: $(grep -cE '::' <<<"$collected") tests selected from $file${select:+ (-k \"$select\")}"
  for which in native streampool; do
    limit=$((share / 2))
    left=$((start + budget - $(date +%s)))
    ((limit > left)) && limit=$left
    if ((limit < 10)); then
      say "# $name $which: not run, the time budget (UPSTREAM_BUDGET) was spent"
      : >"$out/$name-$which.log"
      continue
    fi
    local selection=""
    [[ $which == streampool ]] && selection=$framework
    (cd "$tests" && timeout -k 5 "$limit" env "STREAMPOOL_UPSTREAM=$selection" "$python" "${args[@]}") \
      >"$out/$name-$which.log" 2>&1
    local rc=$?
    [[ $rc -eq 124 || $rc -eq 137 ]] && say "# $name $which: cut short at ${limit}s (tests not reached count as not run)"
    say "# $name $which: $(grep -E '^=+ .*(passed|failed|skipped|error).* =+$' "$out/$name-$which.log" | tail -n 1 | tr -d '=' | sed 's/^ *//')"
    grep '^streampool: ' "$out/$name-$which.log" | sed "s/^/# $name $which: /" | tee -a "$log"
  done
  "$python" "$here/upstream_compare.py" "$name" "$out/$name-native.log" "$out/$name-streampool.log" >"$out/$name-compare.md"
  local verdict=$?
  tee -a "$log" <"$out/$name-compare.md"
  if [[ $verdict -ne 0 ]]; then
    failures=$((failures + 1))
    say "upstream-tests: $name: FAIL, tests fail under streampool alone (above)"
  else
    say "upstream-tests: $name: no test fails under streampool alone"
  fi
}

run_suite pytorch torch pytorch-src/test/test_cuda.py "$torch_select" $((budget * 3 / 5))
run_suite cupy cupy cupy-src/tests/cupy_tests/cuda_tests/test_memory.py "$cupy_select" $((start + budget - $(date +%s)))
say "# logs: $out ($(($(date +%s) - start))s)"
[[ $mode == fake ]] && say "# --fake: the frameworks' CUDA does not run over the fake driver: outcomes mean nothing"
[[ $failures -eq 0 ]]
