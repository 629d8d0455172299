"""cuda-bindings 13 driver API (`from cuda.bindings import driver`), which opens libcuda.so.1 and
resolves every entry point with cuGetProcAddress_v2: default and created pools, attributes,
cuMemAllocFromPoolAsync / cuMemFreeAsync, a memset and copy back, cuMemPoolTrimTo.

Prints only deterministic lines: used bytes exactly (the pool counts the bytes asked for),
reserved bytes only where NVIDIA's driver and streampool agree (0 after a full trim) and otherwise
as comparisons.
"""
import numpy as np
from cuda.bindings import driver

MiB = 1 << 20


def check(result):
    """Unpacks a cuda.bindings result tuple, raising on an error code."""
    err = result[0]
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError("CUDA driver call failed: %s" % err)
    rest = result[1:]
    if not rest:
        return None
    return rest[0] if len(rest) == 1 else rest


def attr(pool, which):
    return int(check(driver.cuMemPoolGetAttribute(pool, which)))


A = driver.CUmemPool_attribute


def main():
    check(driver.cuInit(0))
    dev = check(driver.cuDeviceGet(0))
    ctx = check(driver.cuDevicePrimaryCtxRetain(dev))
    check(driver.cuCtxSetCurrent(ctx))
    stream = check(driver.cuStreamCreate(1))  # CU_STREAM_NON_BLOCKING

    default_pool = check(driver.cuDeviceGetDefaultMemPool(dev))
    print("default pool threshold:", attr(default_pool, A.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD))
    print("default pool reuse flags:",
          attr(default_pool, A.CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES),
          attr(default_pool, A.CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC),
          attr(default_pool, A.CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES))

    props = driver.CUmemPoolProps()
    props.allocType = driver.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
    props.handleTypes = driver.CUmemAllocationHandleType.CU_MEM_HANDLE_TYPE_NONE
    props.location.type = driver.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    props.location.id = 0
    pool = check(driver.cuMemPoolCreate(props))
    print("created pool differs from default:", int(pool) != int(default_pool))
    check(driver.cuMemPoolSetAttribute(pool, A.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                                       driver.cuuint64_t(0xFFFFFFFFFFFFFFFF)))
    print("threshold set to max:",
          attr(pool, A.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) == 0xFFFFFFFFFFFFFFFF)

    sizes = [1, 1000, 3 * MiB, 40 * MiB]
    pointers = [check(driver.cuMemAllocFromPoolAsync(n, pool, stream)) for n in sizes]
    print("used after allocations:", attr(pool, A.CU_MEMPOOL_ATTR_USED_MEM_CURRENT))
    print("reserved >= used:",
          attr(pool, A.CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) >= attr(pool, A.CU_MEMPOOL_ATTR_USED_MEM_CURRENT))

    big = pointers[3]
    check(driver.cuMemsetD8Async(big, 0x2A, 40 * MiB, stream))
    host = np.zeros(4096, dtype=np.uint8)
    check(driver.cuStreamSynchronize(stream))
    check(driver.cuMemcpyDtoH(host.ctypes.data, int(big) + 40 * MiB - 4096, 4096))
    print("memset readback:", int(host.min()), int(host.max()))

    for p in pointers:
        check(driver.cuMemFreeAsync(p, stream))
    check(driver.cuStreamSynchronize(stream))
    print("used after frees:", attr(pool, A.CU_MEMPOOL_ATTR_USED_MEM_CURRENT))
    print("used high:", attr(pool, A.CU_MEMPOOL_ATTR_USED_MEM_HIGH))
    print("pool keeps memory (threshold max):", attr(pool, A.CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) > 0)

    # Same-stream reuse: the same size right after the free gets the same block back.
    first = check(driver.cuMemAllocFromPoolAsync(3 * MiB, pool, stream))
    check(driver.cuMemFreeAsync(first, stream))
    again = check(driver.cuMemAllocFromPoolAsync(3 * MiB, pool, stream))
    print("same-stream reuse:", int(first) == int(again))
    check(driver.cuMemFreeAsync(again, stream))
    check(driver.cuStreamSynchronize(stream))

    check(driver.cuMemPoolSetAttribute(pool, A.CU_MEMPOOL_ATTR_USED_MEM_HIGH, driver.cuuint64_t(0)))
    print("used high after reset:", attr(pool, A.CU_MEMPOOL_ATTR_USED_MEM_HIGH))
    check(driver.cuMemPoolTrimTo(pool, 0))
    print("reserved after trim:", attr(pool, A.CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT))

    # The default pool through cuMemAllocAsync.
    p = check(driver.cuMemAllocAsync(12345, stream))
    print("default pool used while live:", attr(default_pool, A.CU_MEMPOOL_ATTR_USED_MEM_CURRENT))
    check(driver.cuMemFreeAsync(p, stream))
    check(driver.cuStreamSynchronize(stream))
    print("default pool used after free:", attr(default_pool, A.CU_MEMPOOL_ATTR_USED_MEM_CURRENT))

    check(driver.cuMemPoolDestroy(pool))
    check(driver.cuStreamDestroy(stream))
    check(driver.cuDevicePrimaryCtxRelease(dev))
    print("done")


if __name__ == "__main__":
    main()
