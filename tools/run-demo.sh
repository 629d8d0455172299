#!/usr/bin/env bash
# README's first command: set up, build, and run the demo under streampool, on the GPU when
# there is one and on the CPU-only fake driver otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
tools/setup.sh "$build_dir"
cmake --build "$build_dir" --target pool_demo streampool_preload streampool_fakecuda -j "$(nproc)"
source tools/driver-env.sh
echo "demo: running examples/pool_demo under LD_PRELOAD=$preload (driver: $driver_kind)"
LD_PRELOAD="$preload" "$build_dir/examples/pool_demo"
