#!/usr/bin/env bash
# The packages on the GPU box: cpack's TGZ and DEB of a build, each unpacked into a clean folder
# (the .deb with dpkg-deb -x, no root needed), then from the unpacked tree alone and with no
# environment but PATH, on NVIDIA's driver: the demo under the packaged `streampool run`, a program
# linked with the packaged streampool.pc (libstreampool.so as its libcuda.so.1), and one linked with
# streampool-cudart.pc (streampool's runtime as its libcudart.so.13), each of which must start
# with nothing set and find NVIDIA's driver itself.
#
#   tools/gpu/package_check.sh OUT_DIR [--fake] [BUILD_DIR]
#
# --fake: no GPU; the fake driver of the package stands in (`run --fake`, STREAMPOOL_LIBCUDA).
# Writes OUT_DIR/package_check.log (and prints it). Exits 1 if a step failed.
set -u
export OUT=${1:?usage: package_check.sh OUT_DIR [--fake] [BUILD_DIR]}
shift
source "$(dirname "${BASH_SOURCE[0]}")/script_log.sh" package_check.log . "$@"
[ -e "$build_dir/build.ninja" ] || run tools/setup.sh "$build_dir" -DSTREAMPOOL_BUILD_BENCH=OFF
run cmake --build "$build_dir" -j"$(nproc)" --target streampool_preload streampool_cudart streampool_fakecuda \
  streampool_cli streampool_core pool_demo || { say "package_check: FAIL (build)"; exit 1; }
work=$out/packages
rm -rf "$work"
mkdir -p "$work/tgz" "$work/deb"
run cpack --config "$build_dir/CPackConfig.cmake" -G "TGZ;DEB" -B "$work/out" || { say "package_check: FAIL (cpack)"; exit 1; }
run tar -xzf "$work"/out/streampool-*.tar.gz -C "$work/tgz"
run dpkg-deb -x "$work"/out/streampool_*.deb "$work/deb"
say "deb: Depends: $(dpkg-deb -f "$work"/out/streampool_*.deb Depends)"
cuda_include=${CUDA_HOME:-/usr/local/cuda}/include
demo=$repo/$build_dir/examples/pool_demo

# `expect PATTERN COMMAND...`: runs the command (output in the log), and fails the step unless it
# exits 0 with PATTERN in its output.
expect() {
  local pattern=$1
  shift
  say "\$ $*"
  local output rc
  output=$("$@" 2>&1)
  rc=$?
  echo "$output" >>"$log"
  if [ $rc -eq 0 ] && grep -q -- "$pattern" <<<"$output"; then say "  -> ok: $(grep -m1 -- "$pattern" <<<"$output")"
  else say "  -> FAIL (exit $rc, no '$pattern')"; status=1; fi
}

for root in "$(echo "$work"/tgz/streampool-*)" "$work/deb/usr"; do
  say "== $root"
  alone=(env -i "PATH=/usr/bin:/bin")
  [ $fake -eq 1 ] && alone+=("STREAMPOOL_LIBCUDA=$root/lib/streampool/fake/libcuda.so.1")
  run_options=()
  [ $fake -eq 1 ] && run_options=(--fake)
  expect "checksum of the bytes read back: 2016 (expected 2016)" "${alone[@]}" "$root/bin/streampool" run "${run_options[@]}" -- "$demo"
  export PKG_CONFIG_PATH=$root/lib/pkgconfig
  # shellcheck disable=SC2046  # the flags are words
  run cc -o "$work/linked" tests/package/consumer/linked.c $(pkg-config --cflags --libs streampool)
  expect "^linked: streampool 0.1.0" "${alone[@]}" "$work/linked"
  # shellcheck disable=SC2046
  run cc -isystem "$cuda_include" -o "$work/runtime" tests/package/consumer/runtime.c $(pkg-config --cflags --libs streampool-cudart)
  expect "same-stream reuse yes" "${alone[@]}" "$work/runtime"
  say "  runtime's libraries: $(ldd "$work/runtime" | grep -E 'cudart|libcuda' | tr -s ' \t' ' ' | tr '\n' ';')"
done
say "package_check: $([ $status -eq 0 ] && echo PASS || echo FAIL)"
exit $status
