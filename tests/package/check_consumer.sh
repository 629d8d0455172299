#!/usr/bin/env bash
# Installs a build into a fresh prefix, then configures, builds and runs tests/package/consumer
# against that prefix alone (find_package and pkg-config), as another project would.
# Usage: check_consumer.sh BUILD_DIR WORK_DIR [FAKE_DRIVER]
set -euo pipefail
build_dir=$1
work=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
prefix=$work/prefix
cmake --install "$build_dir" --prefix "$prefix" >/dev/null
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S "$here/consumer" -B "$work/build" "${generator[@]}" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/build" >/dev/null

libdir=$(dirname "$(cat "$work/build/preload.txt")")
fake=$libdir/streampool/fake/libcuda.so.1
echo "--- without streampool"
"$work/build/consumer_lookup" | grep -x "streampool: absent"
echo "--- preloaded over the installed fake driver"
LD_PRELOAD=$(cat "$work/build/preload.txt") STREAMPOOL_LIBCUDA=$fake "$work/build/consumer_lookup" |
  grep -x "streampool 0.1.0 (header 0.1.0): active"
echo "--- linked"
LD_LIBRARY_PATH=$libdir/streampool STREAMPOOL_LIBCUDA=$fake "$work/build/consumer_linked" | grep "^linked: streampool 0.1.0"
echo "--- the engine"
"$work/build/consumer_engine" | grep "same-stream reuse yes"
echo "--- the installed command"
"$prefix/bin/streampool" run --fake --quiet -- "$work/build/consumer_lookup" | grep -x "streampool 0.1.0 (header 0.1.0): active"
if command -v pkg-config >/dev/null; then
  echo "--- pkg-config"
  export PKG_CONFIG_PATH=$libdir/pkgconfig
  test "$(pkg-config --modversion streampool)" = 0.1.0
  cc $(pkg-config --cflags streampool) -o "$work/lookup-pc" "$here/consumer/lookup.c" -ldl
  c++ $(pkg-config --cflags streampool-core) -o "$work/engine-pc" "$here/consumer/engine.cpp" $(pkg-config --libs streampool-core)
  "$work/engine-pc" | grep "same-stream reuse yes"
fi
echo "package: ok"
