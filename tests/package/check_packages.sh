#!/usr/bin/env bash
# The packages cpack makes of a build (TGZ and DEB, from the build's install rules: no second
# build), each unpacked into a clean folder as a machine without streampool would have it (the .deb
# with `dpkg-deb -x`: installing it for real needs root), then from the unpacked tree alone, with
# no environment but PATH: the demo under the packaged command over the packaged fake driver, and
# a program built with the packaged pkg-config file, started with nothing set and over the fake
# driver (STREAMPOOL_LIBCUDA alone).
# Usage: check_packages.sh BUILD_DIR WORK_DIR DEMO_PROGRAM
set -euo pipefail
build_dir=$1
work=$2
demo=$3
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
mkdir -p "$work"
start=$(date +%s%N)
cpack --config "$build_dir/CPackConfig.cmake" -G "TGZ;DEB" -B "$work/out" >"$work/cpack.log" ||
  { cat "$work/cpack.log"; exit 1; }
echo "cpack: $(cd "$work/out" && ls ./*.tar.gz ./*.deb | tr '\n' ' ')($(( ($(date +%s%N) - start) / 1000000 )) ms)"
mkdir "$work/tgz" "$work/deb"
tar -xzf "$work"/out/*.tar.gz -C "$work/tgz"
dpkg-deb -x "$work"/out/*.deb "$work/deb"
echo "deb: Depends: $(dpkg-deb -f "$work"/out/*.deb Depends)"
test -n "$(dpkg-deb -f "$work"/out/*.deb Depends)"
alone=(env -i "PATH=/usr/bin:/bin")

check_tree() {  # ROOT: the folder holding bin/ and lib/
  local root=$1
  echo "--- $root"
  test -x "$root/bin/streampool"
  # ldconfig makes a link named after the SONAME of every library in the folders it scans.
  for library in "$root"/lib/*.so*; do
    [ -e "$library" ] || continue
    if readelf -d "$library" | grep -qE 'SONAME.*\[(libcuda|libcudart)\.so'; then
      echo "packages: $library would become the system's driver or runtime once ldconfig runs"
      return 1
    fi
  done
  local out
  out=$("${alone[@]}" "$root/bin/streampool" run --fake -- "$demo" 2>&1)
  grep -q "allocator: streampool 0.1.0" <<<"$out"
  grep -q "checksum of the bytes read back: 2016 (expected 2016)" <<<"$out"
  grep -q "calls served: 65 allocations, 65 frees" <<<"$out"
  # shellcheck disable=SC2046  # the flags are words
  cc -o "$work/linked" "$here/consumer/linked.c" $(PKG_CONFIG_PATH=$root/lib/pkgconfig pkg-config --cflags --libs streampool)
  "${alone[@]}" "$work/linked" 2>/dev/null | grep -q "^linked: streampool 0.1.0"
  "${alone[@]}" STREAMPOOL_LIBCUDA="$root/lib/streampool/fake/libcuda.so.1" "$work/linked" | grep "^linked: streampool 0.1.0"
}
check_tree "$(echo "$work"/tgz/streampool-*)"
check_tree "$work/deb/usr"
echo "packages: ok ($(( ($(date +%s%N) - start) / 1000000 )) ms in all)"
