# Sourced by the scripts: picks the driver streampool forwards to. Where no NVIDIA driver is
# installed, the CPU-only fake driver built with the project stands in for it.
# Needs: build_dir. Sets: preload (libstreampool.so), driver_kind (nvidia|fake) and, for the
# fake, STREAMPOOL_LIBCUDA.
preload="$build_dir/interpose/libstreampool.so"
if [ -z "${STREAMPOOL_LIBCUDA:-}" ] && { ldconfig -p 2>/dev/null | grep -q 'libcuda.so.1 ' || [ -e /usr/local/nvidia/lib64/libcuda.so.1 ]; } \
   && ! ldconfig -p 2>/dev/null | grep 'libcuda.so.1 ' | grep -q stubs; then
  driver_kind=nvidia
else
  driver_kind=fake
  export STREAMPOOL_LIBCUDA="${STREAMPOOL_LIBCUDA:-$(cd "$build_dir/fakecuda" && pwd)/libcuda.so.1}"
fi
