#!/usr/bin/env bash
# Installs a build into a fresh prefix, then, against that prefix alone, as another project would:
# compiles every installed header on its own, configures, builds and runs tests/package/consumer
# (find_package: streampool::headers, ::preload, ::core, ::cudart) and programs built with each
# .pc file. A linked program runs with no environment at all, or with STREAMPOOL_LIBCUDA alone
# naming the installed fake driver.
# Usage: check_consumer.sh BUILD_DIR WORK_DIR CUDA_INCLUDE_DIR
set -euo pipefail
build_dir=$1
work=$2
cuda_include=$3
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
prefix=$work/prefix
cmake --install "$build_dir" --prefix "$prefix" >/dev/null
libdir=$prefix/lib
fake=$libdir/streampool/fake/libcuda.so.1
# Only the fake driver named: nothing else of the caller's environment reaches the programs.
alone=(env -i "PATH=/usr/bin:/bin")
over_fake=("${alone[@]}" "STREAMPOOL_LIBCUDA=$fake")

echo "--- every installed header compiles on its own"
headers=$(cd "$prefix/include" && find . -type f \( -name '*.h' -o -name '*.hpp' \) | sed 's|^\./||' | sort)
test -n "$headers"
for header in $headers; do
  echo "#include <$header>" >"$work/header.cpp"
  c++ -std=c++20 -Wall -Wextra -Werror -fsyntax-only -I"$prefix/include" "$work/header.cpp" ||
    { echo "package: <$header> does not compile on its own against the installed tree"; exit 1; }
  case $header in *.h)
    echo "#include <$header>" >"$work/header.c"
    cc -std=c99 -Wall -Wextra -Werror -fsyntax-only -I"$prefix/include" "$work/header.c" ||
      { echo "package: <$header> does not compile as C on its own"; exit 1; } ;;
  esac
done
echo "$(echo "$headers" | wc -l) headers"

echo "--- nothing with a driver's or runtime's SONAME where ldconfig looks (lib/)"
for library in "$libdir"/*.so*; do
  [ -e "$library" ] || continue
  if readelf -d "$library" | grep -E 'SONAME.*\[(libcuda|libcudart)\.so'; then
    echo "package: $library would become the system's $(readelf -d "$library" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')"
    exit 1
  fi
done

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S "$here/consumer" -B "$work/build" "${generator[@]}" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCUDA_INCLUDE_DIR="$cuda_include" >/dev/null
cmake --build "$work/build" >/dev/null
echo "--- without streampool"
"$work/build/consumer_lookup" | grep -x "streampool: absent"
echo "--- preloaded over the installed fake driver"
"${over_fake[@]}" LD_PRELOAD="$(cat "$work/build/preload.txt")" "$work/build/consumer_lookup" |
  grep -x "streampool 0.1.0 (header 0.1.0): active"
echo "--- linked (streampool::preload): starts with no environment, and over the fake driver"
"${alone[@]}" "$work/build/consumer_linked" 2>/dev/null | grep "^linked: streampool 0.1.0"
"${over_fake[@]}" "$work/build/consumer_linked" | grep "^linked: streampool 0.1.0"
echo "--- the engine (streampool::core)"
"$work/build/consumer_engine" | grep "same-stream reuse yes"
echo "--- the runtime (streampool::cudart) over the fake driver"
"${over_fake[@]}" "$work/build/consumer_runtime" | grep -x "runtime: 1 device(s), same-stream reuse yes"
echo "--- the installed command"
"${alone[@]}" "$prefix/bin/streampool" run --fake --quiet -- "$work/build/consumer_lookup" |
  grep -x "streampool 0.1.0 (header 0.1.0): active"

echo "--- pkg-config: each .pc file builds a program that runs"
export PKG_CONFIG_PATH=$libdir/pkgconfig
test "$(pkg-config --modversion streampool)" = 0.1.0
# shellcheck disable=SC2046  # the flags are words
cc -o "$work/linked-pc" "$here/consumer/linked.c" $(pkg-config --cflags --libs streampool)
"${alone[@]}" "$work/linked-pc" 2>/dev/null | grep "^linked: streampool 0.1.0"
"${over_fake[@]}" "$work/linked-pc" | grep "^linked: streampool 0.1.0"
# shellcheck disable=SC2046
c++ -o "$work/engine-pc" "$here/consumer/engine.cpp" $(pkg-config --cflags --libs streampool-core)
"$work/engine-pc" | grep "same-stream reuse yes"
# shellcheck disable=SC2046
cc -isystem "$cuda_include" -o "$work/runtime-pc" "$here/consumer/runtime.c" $(pkg-config --cflags --libs streampool-cudart)
"${over_fake[@]}" "$work/runtime-pc" | grep -x "runtime: 1 device(s), same-stream reuse yes"
echo "package: ok"
