#!/usr/bin/env bash
# Fuzzes streampool's hooked API for a bounded time (tests/fuzz/fuzz_hooks.cpp: random programs of
# the pool family over the fake driver, two threads, under ASan+UBSan, with libFuzzer), then the
# command's readers for a shorter one each (fuzz_trace.cpp: a trace file and its replay,
# fuzz_report.cpp: a report and its table, fuzz_args.cpp: the arguments).
#   1. the fake driver from a plain build (BUILD_DIR, default build: CI has just built it there);
#   2. the harness in build-fuzz, with clang (tools/setup.sh installs clang and libFuzzer's runtime
#      where they are missing);
#   3. every input of the committed corpus (tests/fuzz/corpus) once, then new inputs for SECONDS
#      (default 60), starting from a copy of the corpus so that the repository is left untouched;
#   4. the same for each reader's harness over its corpus (tests/fuzz/corpus_trace, corpus_json,
#      corpus_args), for READER_SECONDS each (default 20).
# A crash, a sanitizer report, a failed check or a hang fails the script; the input that did it is
# left in build-fuzz/artifacts/ (and printed in base64 when small). Reproduce with
#   STREAMPOOL_LIBCUDA=<build>/fakecuda/libcuda.so.1 STREAMPOOL_FAKE_MEMORY=1G \
#     build-fuzz/tests/fuzz/streampool_fuzz_hooks <artifact>
# Usage: tools/run-fuzz.sh [SECONDS [READER_SECONDS]]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
reader_seconds=${2:-20}
driver_build=${BUILD_DIR:-build}
fuzz_build=build-fuzz

tools/setup.sh "$driver_build"
cmake --build "$driver_build" -j "$(nproc)" --target streampool_fakecuda
CC=clang CXX=clang++ tools/setup.sh "$fuzz_build" -DSTREAMPOOL_SANITIZE=fuzz -DSTREAMPOOL_BUILD_BENCH=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG"
cmake --build "$fuzz_build" -j "$(nproc)" --target streampool_fuzz_hooks streampool_fuzz_trace streampool_fuzz_report \
  streampool_fuzz_args

harness=$fuzz_build/tests/fuzz/streampool_fuzz_hooks
export STREAMPOOL_LIBCUDA=$PWD/$driver_build/fakecuda/libcuda.so.1
export STREAMPOOL_FAKE_MEMORY=${STREAMPOOL_FAKE_MEMORY:-1G}  # small: huge requests fail fast, reservations stay small
export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
artifacts=$PWD/$fuzz_build/artifacts
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$artifacts"
cp tests/fuzz/corpus/* "$work"/

options=(-max_len=1024 -timeout=30 -rss_limit_mb=4096 -artifact_prefix="$artifacts/")
echo "== fuzz: the committed corpus ($(ls tests/fuzz/corpus | wc -l) inputs)"
"$harness" "${options[@]}" -runs=0 tests/fuzz/corpus
echo "== fuzz: new inputs for ${seconds} s"
"$harness" "${options[@]}" -max_total_time="$seconds" -print_final_stats=1 "$work"

# The readers: no driver. Their inputs are files, so longer ones are allowed; the memory limit is
# what catches a reader that allocates for what the input claims rather than what it holds.
for reader in trace:corpus_trace report:corpus_json args:corpus_args; do
  name=${reader%%:*}
  corpus=tests/fuzz/${reader#*:}
  mkdir -p "$work/$name"
  cp "$corpus"/* "$work/$name"/
  reader_options=(-max_len=65536 -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$artifacts/$name-")
  echo "== fuzz $name: the committed corpus ($(ls "$corpus" | wc -l) inputs)"
  "$fuzz_build/tests/fuzz/streampool_fuzz_$name" "${reader_options[@]}" -runs=0 "$corpus"
  echo "== fuzz $name: new inputs for ${reader_seconds} s"
  "$fuzz_build/tests/fuzz/streampool_fuzz_$name" "${reader_options[@]}" -max_total_time="$reader_seconds" \
    -print_final_stats=1 "$work/$name"
done
