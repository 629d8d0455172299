#!/usr/bin/env bash
# The engine's and the interposer's tests under ASan+UBSan and under TSan (CI runs this after the
# main tests). Builds only what those tests need: the engine's tests, libstreampool.so, the fake
# driver it runs over, the interposer's test programs (with their mini drivers), and the tests of
# the public interface and of traces.
# Usage: tools/run-sanitizers.sh [address|thread ...]
set -euo pipefail
cd "$(dirname "$0")/.."
kinds=("$@")
[ ${#kinds[@]} -gt 0 ] || kinds=(address thread)
# Any report fails its test: stop at the first one with a non-zero exit (UBSan already aborts,
# -fno-sanitize-recover). The caller's own settings win.
export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
# Reports in glibc's own TLS teardown are silenced by name, whatever else the caller set.
export TSAN_OPTIONS="$TSAN_OPTIONS:suppressions=$PWD/tools/tsan.supp"
for kind in "${kinds[@]}"; do
  build_dir=build-san-$kind
  echo "== $kind sanitizer build"
  # -O1 -g1: a quarter to half the compile time of RelWithDebInfo's -O2 -g (a sanitized gtest file
  # takes 30 s at -O2 -g on CI's cores, 7 s at -O1 -g1), and reports still name file and line.
  tools/setup.sh "$build_dir" -DSTREAMPOOL_SANITIZE="$kind" -DSTREAMPOOL_ONLY_CORE=OFF -DSTREAMPOOL_BUILD_BENCH=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG"
  cmake --build "$build_dir" -j "$(nproc)" --target core_tests streampool_preload streampool_fakecuda interpose_tests fakedriver_tests \
    api_public_test api_c_header_test trace_format_test trace_recording_test
  STREAMPOOL_MODEL_PROGRAMS=${STREAMPOOL_SANITIZER_MODEL_PROGRAMS:-1000} \
    ctest --test-dir "$build_dir" -L 'core|interpose|fakedriver|api|trace' --output-on-failure -j "$(nproc)" --timeout 900
done
