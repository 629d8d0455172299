"""Probe: what cuMemPoolSetAccess / cuMemPoolGetAccess answer for a pool's own device on this
driver (issue: peer access, "setting access for the owning device is handled as the real driver
does"). Prints one line per case; run plainly and under LD_PRELOAD=libstreampool.so to compare."""
from cuda.bindings import driver as cu


def check(result):
    return result[0] if isinstance(result, tuple) else result


def main():
    check(cu.cuInit(0))
    err, dev = cu.cuDeviceGet(0)
    err, ctx = cu.cuDevicePrimaryCtxRetain(dev)
    check(cu.cuCtxSetCurrent(ctx))
    err, pool = cu.cuDeviceGetDefaultMemPool(dev)
    own = cu.CUmemLocation()
    own.type = cu.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    own.id = 0
    for name in ("CU_MEM_ACCESS_FLAGS_PROT_READWRITE", "CU_MEM_ACCESS_FLAGS_PROT_READ", "CU_MEM_ACCESS_FLAGS_PROT_NONE"):
        desc = cu.CUmemAccessDesc()
        desc.location = own
        desc.flags = getattr(cu.CUmemAccess_flags, name)
        (result,) = cu.cuMemPoolSetAccess(pool, [desc], 1)
        err, flags = cu.cuMemPoolGetAccess(pool, own)
        print(f"owner set {name}: {result.name}; get: {err.name} {flags.name if hasattr(flags, 'name') else flags}")
    other = cu.CUmemLocation()
    other.type = cu.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    other.id = 7
    desc = cu.CUmemAccessDesc()
    desc.location = other
    desc.flags = cu.CUmemAccess_flags.CU_MEM_ACCESS_FLAGS_PROT_READWRITE
    (result,) = cu.cuMemPoolSetAccess(pool, [desc], 1)
    print(f"non-existent device 7 set READWRITE: {result.name}")
    err, flags = cu.cuMemPoolGetAccess(pool, other)
    print(f"non-existent device 7 get: {err.name}")


main()
