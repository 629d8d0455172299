#!/usr/bin/env bash
# README's second command: set up, build everything, and run every test (the engine, the fake
# driver, the interposer, and the driver-API conformance suite under streampool over the fake
# driver). Exits non-zero if anything fails.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
tools/setup.sh "$build_dir"
cmake --build "$build_dir" -j "$(nproc)"
ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)" --timeout 600
