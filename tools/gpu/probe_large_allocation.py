"""Probe: how long one very large stream-ordered allocation takes (XLA's preallocation asks for
75% of the device at start-up), plainly and under LD_PRELOAD=libstreampool.so."""
import time

from cuda.bindings import driver as cu


def main():
    cu.cuInit(0)
    _, dev = cu.cuDeviceGet(0)
    _, ctx = cu.cuDevicePrimaryCtxRetain(dev)
    cu.cuCtxSetCurrent(ctx)
    _, stream = cu.cuStreamCreate(1)
    _, free, total = cu.cuMemGetInfo()
    for fraction in (0.05, 0.75):
        size = int(total * fraction) // (2 << 20) * (2 << 20)
        start = time.perf_counter()
        err, ptr = cu.cuMemAllocAsync(size, stream)
        cu.cuStreamSynchronize(stream)
        allocated = time.perf_counter()
        cu.cuMemFreeAsync(ptr, stream)
        cu.cuStreamSynchronize(stream)
        freed = time.perf_counter()
        print(f"{fraction:.0%} of the device ({size / 2**30:.1f} GiB): {err.name}, "
              f"alloc {1e3 * (allocated - start):.1f} ms, free+sync {1e3 * (freed - allocated):.1f} ms")


main()
