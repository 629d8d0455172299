#!/usr/bin/env bash
# The engine's tests under ASan+UBSan and under TSan (CI runs this after the main tests).
# Usage: tools/run-sanitizers.sh [address|thread ...]
set -euo pipefail
cd "$(dirname "$0")/.."
kinds=("$@")
[ ${#kinds[@]} -gt 0 ] || kinds=(address thread)
for kind in "${kinds[@]}"; do
  build_dir=build-$kind
  echo "== $kind sanitizer build"
  tools/setup.sh "$build_dir" -DSTREAMPOOL_SANITIZE="$kind" -DSTREAMPOOL_ONLY_CORE=ON -DSTREAMPOOL_BUILD_BENCH=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo
  cmake --build "$build_dir" -j "$(nproc)"
  STREAMPOOL_MODEL_PROGRAMS=${STREAMPOOL_SANITIZER_MODEL_PROGRAMS:-1000} \
    ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)" --timeout 900
done
