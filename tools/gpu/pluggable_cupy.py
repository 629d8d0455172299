"""CuPy with streampool as its allocator through libstreampool_alloc.so (streampool.cupy.use(), no
LD_PRELOAD), for tools/gpu/pluggable_check.sh: array operations checked against NumPy, on the null
stream and on a created one, and streampool's statistics. "PASS name" / "FAIL name: why" lines."""
import sys

import numpy
import streampool
import streampool.cupy

failures = []


def check(name, condition, why=""):
    print(f"PASS {name}" if condition else f"FAIL {name}: {why}", flush=True)
    if not condition:
        failures.append(name)


def main():
    import cupy  # pylint: disable=import-outside-toplevel
    streampool.cupy.use()
    rng = numpy.random.default_rng(7)
    host = rng.standard_normal((512, 512))
    device = cupy.asarray(host)
    check("matmul", numpy.allclose(cupy.asnumpy(device @ device), host @ host), "differs from NumPy")
    check("reduce", numpy.isclose(float(cupy.sum(device * 2.0)), float(numpy.sum(host * 2.0))), "differs")
    with cupy.cuda.Stream(non_blocking=True) as stream:
        values = cupy.arange(1 << 20, dtype=cupy.float32)
        squared = cupy.sort(values[::-1] ** 2)
        stream.synchronize()
    expected = numpy.sort(numpy.arange(1 << 20, dtype=numpy.float32)[::-1] ** 2)
    check("stream-sort", numpy.array_equal(cupy.asnumpy(squared), expected), "differs from NumPy")
    for _ in range(50):  # churn: freed blocks come back on their own stream
        temporary = cupy.ones((1024, 1024), dtype=cupy.float64) * 3
        check_sum = float(temporary.sum())
        del temporary
    check("churn", check_sum == 3.0 * 1024 * 1024, str(check_sum))
    # A block outliving the program's last reference to its stream: freed after that, it must not
    # hand the driver a destroyed stream.
    side = cupy.cuda.Stream(non_blocking=True)
    with side:
        outliving = cupy.ones(1 << 16, dtype=cupy.float32)
    del side
    total = float(outliving.sum())
    del outliving
    cupy.cuda.Device().synchronize()
    check("block-outlives-its-stream", total == float(1 << 16), str(total))
    stats = streampool.cupy.memory_stats()
    print("stats " + " ".join(f"{key}={value}" for key, value in sorted(stats.items())), flush=True)
    check("served", streampool.active() and stats["allocation.all.allocated"] >= 50, str(stats))
    check("pool-not-cupys", cupy.get_default_memory_pool().used_bytes() == 0,
          f"CuPy's own pool holds {cupy.get_default_memory_pool().used_bytes()} bytes")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
