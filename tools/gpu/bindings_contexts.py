"""cuda-bindings driver API (`from cuda.bindings import driver`): stream-ordered allocation across
the context paths a program can take.

    python3 bindings_contexts.py

1. a created context (cuCtxCreate: bindings 13 take (ctxCreateParams, flags, dev), bindings 12
   (flags, dev); both are handled): cuMemAllocAsync on its stream, a memset read back, the free;
2. a created pool used from a created context: cuMemAllocFromPoolAsync, used bytes, trim;
3. two created contexts and push/pop: allocations made in each while the other is pushed or
   popped, freed after switching back, current context checked after every switch;
4. a context destroyed with allocations still outstanding, then a new context that allocates;
5. the primary context: retain, allocate, reset (cuDevicePrimaryCtxReset) with an allocation left
   outstanding, retain again and allocate after the reset, release;
6. 40 create/allocate/free/destroy cycles, every other one destroying the context with an
   allocation outstanding;
7. four threads, each with its own created context, allocating and freeing in a loop.

Prints only deterministic lines (check names, ok, exact used bytes of created pools, and for a
few calls whose outcome the driver decides, the CUresult name, compared with the run on the
driver alone). Exits 1 on the first unexpected error.
"""
import sys
import threading

import numpy as np
from cuda.bindings import driver

MiB = 1 << 20
SUCCESS = driver.CUresult.CUDA_SUCCESS
A = driver.CUmemPool_attribute


class DriverError(RuntimeError):
    pass


def name_of(err):
    return getattr(err, "name", str(err))


def check(result, what="call"):
    """Unpacks a cuda.bindings result tuple, raising on an error code."""
    err = result[0]
    if err != SUCCESS:
        raise DriverError("%s failed: %s" % (what, name_of(err)))
    rest = result[1:]
    if not rest:
        return None
    return rest[0] if len(rest) == 1 else rest


def ctx_create(dev, flags=0):
    """cuCtxCreate in the signature of the installed bindings (13: params first; 12: none)."""
    try:
        return check(driver.cuCtxCreate(None, flags, dev), "cuCtxCreate")
    except TypeError:
        return check(driver.cuCtxCreate(flags, dev), "cuCtxCreate")


def current():
    return int(check(driver.cuCtxGetCurrent(), "cuCtxGetCurrent"))


def fill_and_read(ptr, count, value, stream):
    """Fills count 32-bit words with value on stream, reads back the first and last 1024."""
    check(driver.cuMemsetD32Async(ptr, value, count, stream), "cuMemsetD32Async")
    check(driver.cuStreamSynchronize(stream), "cuStreamSynchronize")
    head = np.zeros(min(count, 1024), dtype=np.uint32)
    tail = np.zeros(min(count, 1024), dtype=np.uint32)
    check(driver.cuMemcpyDtoH(head.ctypes.data, ptr, head.nbytes), "cuMemcpyDtoH")
    check(driver.cuMemcpyDtoH(tail.ctypes.data, int(ptr) + (count - tail.size) * 4, tail.nbytes), "cuMemcpyDtoH")
    return bool((head == value).all() and (tail == value).all())


def ok(label, condition):
    if not condition:
        raise DriverError("%s: wrong result" % label)
    print("%s: ok" % label)


def created_context(dev):
    ctx = ctx_create(dev)
    ok("cuCtxCreate makes the new context current", current() == int(ctx))
    stream = check(driver.cuStreamCreate(1), "cuStreamCreate")
    ptr = check(driver.cuMemAllocAsync(4 * MiB, stream), "cuMemAllocAsync")
    ok("created context: cuMemAllocAsync, memset, read back", fill_and_read(ptr, MiB, 0x1234, stream))
    check(driver.cuMemFreeAsync(ptr, stream), "cuMemFreeAsync")
    check(driver.cuStreamSynchronize(stream), "cuStreamSynchronize")
    check(driver.cuStreamDestroy(stream), "cuStreamDestroy")
    check(driver.cuCtxDestroy(ctx), "cuCtxDestroy")
    ok("created context destroyed", True)


def pool_in_created_context(dev):
    ctx = ctx_create(dev)
    stream = check(driver.cuStreamCreate(1), "cuStreamCreate")
    props = driver.CUmemPoolProps()
    props.allocType = driver.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
    props.handleTypes = driver.CUmemAllocationHandleType.CU_MEM_HANDLE_TYPE_NONE
    props.location.type = driver.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    props.location.id = 0
    pool = check(driver.cuMemPoolCreate(props), "cuMemPoolCreate")
    sizes = [1000, 3 * MiB, 17 * MiB]
    pointers = [check(driver.cuMemAllocFromPoolAsync(n, pool, stream), "cuMemAllocFromPoolAsync") for n in sizes]
    used = int(check(driver.cuMemPoolGetAttribute(pool, A.CU_MEMPOOL_ATTR_USED_MEM_CURRENT), "get used"))
    print("created pool in a created context, used bytes:", used)
    ok("created pool: memset, read back", fill_and_read(pointers[2], (17 * MiB) // 4, 0xABCD, stream))
    for p in pointers:
        check(driver.cuMemFreeAsync(p, stream), "cuMemFreeAsync")
    check(driver.cuStreamSynchronize(stream), "cuStreamSynchronize")
    used = int(check(driver.cuMemPoolGetAttribute(pool, A.CU_MEMPOOL_ATTR_USED_MEM_CURRENT), "get used"))
    print("created pool after frees, used bytes:", used)
    check(driver.cuMemPoolTrimTo(pool, 0), "cuMemPoolTrimTo")
    reserved = int(check(driver.cuMemPoolGetAttribute(pool, A.CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), "get reserved"))
    print("created pool after trim, reserved bytes:", reserved)
    check(driver.cuMemPoolDestroy(pool), "cuMemPoolDestroy")
    check(driver.cuStreamDestroy(stream), "cuStreamDestroy")
    check(driver.cuCtxDestroy(ctx), "cuCtxDestroy")
    ok("created pool destroyed, then its context", True)


def push_pop(dev):
    ctx_a = ctx_create(dev)
    stream_a = check(driver.cuStreamCreate(1), "cuStreamCreate")
    ptr_a = check(driver.cuMemAllocAsync(2 * MiB, stream_a), "cuMemAllocAsync")
    ctx_b = ctx_create(dev)  # pushed on top of A: B is current, A below it
    stream_b = check(driver.cuStreamCreate(1), "cuStreamCreate")
    ptr_b = check(driver.cuMemAllocAsync(2 * MiB, stream_b), "cuMemAllocAsync")
    ok("second created context is current", current() == int(ctx_b))
    check(driver.cuCtxPushCurrent(ctx_a), "cuCtxPushCurrent")
    ok("push A: A is current", current() == int(ctx_a))
    ok("push A: A's allocation readable", fill_and_read(ptr_a, (2 * MiB) // 4, 7, stream_a))
    ptr_a2 = check(driver.cuMemAllocAsync(MiB, stream_a), "cuMemAllocAsync")
    popped = check(driver.cuCtxPopCurrent(), "cuCtxPopCurrent")
    ok("pop returns A, B is current again", int(popped) == int(ctx_a) and current() == int(ctx_b))
    ok("after pop: B's allocation readable", fill_and_read(ptr_b, (2 * MiB) // 4, 9, stream_b))
    # A's allocations freed on A's stream while B is current.
    result = driver.cuMemFreeAsync(ptr_a2, stream_a)
    print("free on A's stream while B is current:", name_of(result[0]))
    if result[0] != SUCCESS:
        check(driver.cuCtxPushCurrent(ctx_a), "cuCtxPushCurrent")
        check(driver.cuMemFreeAsync(ptr_a2, stream_a), "cuMemFreeAsync")
        check(driver.cuCtxPopCurrent(), "cuCtxPopCurrent")
    check(driver.cuMemFreeAsync(ptr_b, stream_b), "cuMemFreeAsync")
    check(driver.cuStreamSynchronize(stream_b), "cuStreamSynchronize")
    check(driver.cuCtxPushCurrent(ctx_a), "cuCtxPushCurrent")
    check(driver.cuMemFreeAsync(ptr_a, stream_a), "cuMemFreeAsync")
    check(driver.cuStreamSynchronize(stream_a), "cuStreamSynchronize")
    check(driver.cuStreamDestroy(stream_a), "cuStreamDestroy")
    popped = check(driver.cuCtxPopCurrent(), "cuCtxPopCurrent")
    ok("second pop returns A", int(popped) == int(ctx_a))
    check(driver.cuStreamDestroy(stream_b), "cuStreamDestroy")
    # B is current: destroying it pops it and makes A current, which is destroyed next.
    check(driver.cuCtxDestroy(ctx_b), "cuCtxDestroy")
    ok("destroying B makes A current", current() == int(ctx_a))
    check(driver.cuCtxDestroy(ctx_a), "cuCtxDestroy")
    ok("push/pop contexts destroyed", True)


def destroy_with_outstanding(dev):
    ctx = ctx_create(dev)
    stream = check(driver.cuStreamCreate(1), "cuStreamCreate")
    for size in (MiB, 5 * MiB, 64 * MiB):
        ptr = check(driver.cuMemAllocAsync(size, stream), "cuMemAllocAsync")
        check(driver.cuMemsetD8Async(ptr, 1, size, stream), "cuMemsetD8Async")
    check(driver.cuStreamSynchronize(stream), "cuStreamSynchronize")
    check(driver.cuStreamDestroy(stream), "cuStreamDestroy")
    check(driver.cuCtxDestroy(ctx), "cuCtxDestroy")
    ok("context destroyed with 3 allocations outstanding", True)
    ctx = ctx_create(dev)
    stream = check(driver.cuStreamCreate(1), "cuStreamCreate")
    ptr = check(driver.cuMemAllocAsync(64 * MiB, stream), "cuMemAllocAsync")
    ok("next context allocates and writes", fill_and_read(ptr, (64 * MiB) // 4, 0x55, stream))
    check(driver.cuMemFreeAsync(ptr, stream), "cuMemFreeAsync")
    check(driver.cuStreamSynchronize(stream), "cuStreamSynchronize")
    check(driver.cuStreamDestroy(stream), "cuStreamDestroy")
    check(driver.cuCtxDestroy(ctx), "cuCtxDestroy")


def primary_context(dev):
    ctx = check(driver.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
    check(driver.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    stream = check(driver.cuStreamCreate(1), "cuStreamCreate")
    ptr = check(driver.cuMemAllocAsync(8 * MiB, stream), "cuMemAllocAsync")
    ok("primary context: allocate, memset, read back", fill_and_read(ptr, (8 * MiB) // 4, 3, stream))
    check(driver.cuMemFreeAsync(ptr, stream), "cuMemFreeAsync")
    leaked = check(driver.cuMemAllocAsync(3 * MiB, stream), "cuMemAllocAsync")
    check(driver.cuMemsetD8Async(leaked, 2, 3 * MiB, stream), "cuMemsetD8Async")
    check(driver.cuStreamSynchronize(stream), "cuStreamSynchronize")
    check(driver.cuStreamDestroy(stream), "cuStreamDestroy")
    check(driver.cuDevicePrimaryCtxRelease(dev), "cuDevicePrimaryCtxRelease")
    check(driver.cuDevicePrimaryCtxReset(dev), "cuDevicePrimaryCtxReset")
    ok("primary context reset with an allocation outstanding", True)

    # Use after reset: the primary context is retained again and must allocate as if new.
    ctx = check(driver.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain after reset")
    check(driver.cuCtxSetCurrent(ctx), "cuCtxSetCurrent after reset")
    state = check(driver.cuDevicePrimaryCtxGetState(dev), "cuDevicePrimaryCtxGetState")
    print("primary context active after retain:", int(state[1]))
    stream = check(driver.cuStreamCreate(1), "cuStreamCreate after reset")
    pool = check(driver.cuDeviceGetDefaultMemPool(dev), "cuDeviceGetDefaultMemPool after reset")
    used = int(check(driver.cuMemPoolGetAttribute(pool, A.CU_MEMPOOL_ATTR_USED_MEM_CURRENT), "get used"))
    print("default pool used bytes after reset:", used)
    pointers = [check(driver.cuMemAllocAsync(n, stream), "cuMemAllocAsync after reset") for n in (3 * MiB, MiB, 40 * MiB)]
    ok("after reset: allocations distinct", len({int(p) for p in pointers}) == 3)
    ok("after reset: memset, read back", all(fill_and_read(p, MiB // 4, 11 + i, stream) for i, p in enumerate(pointers)))
    for p in pointers:
        check(driver.cuMemFreeAsync(p, stream), "cuMemFreeAsync after reset")
    check(driver.cuStreamSynchronize(stream), "cuStreamSynchronize after reset")
    used = int(check(driver.cuMemPoolGetAttribute(pool, A.CU_MEMPOOL_ATTR_USED_MEM_CURRENT), "get used"))
    print("default pool used bytes after the frees:", used)
    # The legacy default stream of the new primary context too.
    ptr = check(driver.cuMemAllocAsync(MiB, 0), "cuMemAllocAsync on stream 0 after reset")
    check(driver.cuMemFreeAsync(ptr, 0), "cuMemFreeAsync on stream 0 after reset")
    check(driver.cuCtxSynchronize(), "cuCtxSynchronize after reset")
    ok("after reset: legacy default stream", True)
    check(driver.cuStreamDestroy(stream), "cuStreamDestroy after reset")
    check(driver.cuDevicePrimaryCtxRelease(dev), "cuDevicePrimaryCtxRelease after reset")
    # A second reset with nothing outstanding, and the primary context once more.
    check(driver.cuDevicePrimaryCtxReset(dev), "second cuDevicePrimaryCtxReset")
    ctx = check(driver.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain after second reset")
    check(driver.cuCtxSetCurrent(ctx), "cuCtxSetCurrent after second reset")
    ptr = check(driver.cuMemAllocAsync(2 * MiB, 0), "cuMemAllocAsync after second reset")
    ok("after second reset: allocate, memset, read back", fill_and_read(ptr, (2 * MiB) // 4, 21, 0))
    check(driver.cuMemFreeAsync(ptr, 0), "cuMemFreeAsync after second reset")
    check(driver.cuCtxSynchronize(), "cuCtxSynchronize after second reset")
    check(driver.cuCtxSetCurrent(driver.CUcontext(0)), "cuCtxSetCurrent(NULL)")
    check(driver.cuDevicePrimaryCtxRelease(dev), "cuDevicePrimaryCtxRelease after second reset")


def cycles(dev, count=40):
    for i in range(count):
        ctx = ctx_create(dev)
        stream = check(driver.cuStreamCreate(1), "cuStreamCreate in cycle %d" % i)
        pointers = [check(driver.cuMemAllocAsync(n, stream), "cuMemAllocAsync in cycle %d" % i)
                    for n in (4096, MiB + 512 * i, 9 * MiB)]
        if not fill_and_read(pointers[1], (MiB + 512 * i) // 4, i, stream):
            raise DriverError("cycle %d: wrong read back" % i)
        keep = pointers[2] if i % 2 else None  # odd cycles leave one allocation to the destroy
        for p in pointers:
            if p is not keep:
                check(driver.cuMemFreeAsync(p, stream), "cuMemFreeAsync in cycle %d" % i)
        check(driver.cuStreamSynchronize(stream), "cuStreamSynchronize in cycle %d" % i)
        check(driver.cuStreamDestroy(stream), "cuStreamDestroy in cycle %d" % i)
        check(driver.cuCtxDestroy(ctx), "cuCtxDestroy in cycle %d" % i)
    ok("%d create/allocate/free/destroy cycles (half with an allocation outstanding)" % count, True)


def threads(dev, count=4, rounds=25):
    errors = []

    def work(index):
        try:
            ctx = ctx_create(dev)
            stream = check(driver.cuStreamCreate(1), "cuStreamCreate in thread")
            for r in range(rounds):
                ptr = check(driver.cuMemAllocAsync(MiB * (1 + (r + index) % 4), stream), "cuMemAllocAsync in thread")
                if r % 5 == 0 and not fill_and_read(ptr, 1024, index * 100 + r, stream):
                    raise DriverError("thread %d round %d: wrong read back" % (index, r))
                check(driver.cuMemFreeAsync(ptr, stream), "cuMemFreeAsync in thread")
            check(driver.cuStreamSynchronize(stream), "cuStreamSynchronize in thread")
            check(driver.cuStreamDestroy(stream), "cuStreamDestroy in thread")
            check(driver.cuCtxDestroy(ctx), "cuCtxDestroy in thread")
        except Exception as error:  # reported by the main thread
            errors.append("thread %d: %s" % (index, error))

    workers = [threading.Thread(target=work, args=(i,)) for i in range(count)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    if errors:
        raise DriverError("; ".join(sorted(errors)))
    ok("%d threads, each with its own created context, %d allocations each" % (count, rounds), True)


def main():
    try:
        check(driver.cuInit(0), "cuInit")
        dev = check(driver.cuDeviceGet(0), "cuDeviceGet")
        created_context(dev)
        pool_in_created_context(dev)
        push_pop(dev)
        destroy_with_outstanding(dev)
        primary_context(dev)
        cycles(dev)
        threads(dev)
    except DriverError as error:
        print("FAILED: %s" % error)
        return 1
    print("bindings contexts: done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
