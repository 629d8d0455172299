"""CuPy 14 with MemoryAsyncPool (cudaMallocAsync through CuPy's static cudart): array math on the
null stream and on a second stream, the pool's used/total bytes, free_all_blocks.

Prints only deterministic lines: integer results, float results rounded, used bytes (exact: the
pool counts the bytes asked for) and, for total bytes, which legitimately differ between NVIDIA's
driver (32 MiB chunks) and streampool (2 MiB granules), only comparisons.
"""
import cupy as cp


def main():
    pool = cp.cuda.MemoryAsyncPool()
    cp.cuda.set_allocator(pool.malloc)
    print("allocator: MemoryAsyncPool")

    x = cp.arange(1_000_000, dtype=cp.int64)
    y = (x * 3 + 7) % 1000
    print("sum:", int(y.sum()))
    print("max:", int(y.max()), "argmax:", int(y.argmax()))

    m = (cp.arange(256 * 256, dtype=cp.float64).reshape(256, 256) % 17) / 16.0
    product = m @ m.T
    print("trace:", "%.6f" % float(cp.trace(product)))
    print("frobenius^2:", "%.6f" % float((product * product).sum()))

    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        z = cp.ones((512, 1024), dtype=cp.int32) * 5
        column_sums = z.sum(axis=0)
        print("stream column sum:", int(column_sums[0]), "total:", int(column_sums.sum()))
        del z, column_sums
    stream.synchronize()

    live = [cp.full((1 << 18,), i, dtype=cp.int32) for i in range(16)]
    cp.cuda.Device().synchronize()
    used_live = pool.used_bytes()
    print("live arrays:", len(live), "values:", sum(int(a[0]) for a in live))
    print("used >= live bytes:", used_live >= sum(a.nbytes for a in live))
    print("total >= used:", pool.total_bytes() >= used_live)
    del live
    cp.cuda.Device().synchronize()
    print("used dropped after del:", pool.used_bytes() < used_live)

    del x, y, m, product
    cp.cuda.Device().synchronize()
    used_before_trim = pool.used_bytes()
    pool.free_all_blocks()
    cp.cuda.Device().synchronize()
    print("used unchanged by free_all_blocks:", pool.used_bytes() == used_before_trim)
    print("total >= used after free_all_blocks:", pool.total_bytes() >= pool.used_bytes())
    print("free bytes after free_all_blocks small:", pool.free_bytes() < (64 << 20))
    print("done")


if __name__ == "__main__":
    main()
