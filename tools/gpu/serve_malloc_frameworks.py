"""CuPy's default memory pool and JAX's default BFC allocator, both of which get their device memory
from cudaMalloc / cuMemAlloc, running a small computation: for tools/gpu/serve_malloc_check.sh under
STREAMPOOL_SERVE_MALLOC=1. Prints `key=value` lines; exit status 0 when the result is right.

    python3 tools/gpu/serve_malloc_frameworks.py cupy|jax
"""
import sys


def run_cupy():
    import cupy as cp  # pylint: disable=import-outside-toplevel
    import numpy as np  # pylint: disable=import-outside-toplevel

    free, total = cp.cuda.runtime.memGetInfo()
    print(f"mem_get_info free={free} total={total}")
    pool = cp.get_default_memory_pool()
    a = cp.arange(1 << 22, dtype=cp.float64)
    b = cp.sqrt(a) * 2.0 + 1.0
    matrix = cp.random.default_rng(0).standard_normal((1024, 1024), dtype=cp.float32)
    product = matrix @ matrix.T
    host = np.arange(1 << 22, dtype=np.float64)
    ok = np.allclose(cp.asnumpy(b), np.sqrt(host) * 2.0 + 1.0) and bool(cp.allclose(product, product.T, atol=1e-3))
    cp.cuda.Device().synchronize()
    print(f"cupy ok={int(ok)} pool_used={pool.used_bytes()} pool_total={pool.total_bytes()}")
    return ok


def run_jax():
    import jax  # pylint: disable=import-outside-toplevel
    import jax.numpy as jnp  # pylint: disable=import-outside-toplevel

    device = jax.devices()[0]
    print(f"jax device={device.platform}:{device.id}")

    @jax.jit
    def step(x, w):
        return jnp.tanh(x @ w).sum()

    x = jnp.ones((2048, 2048), dtype=jnp.float32)
    w = jnp.eye(2048, dtype=jnp.float32) * 0.5
    value = float(step(x, w).block_until_ready())
    expected = 2048 * 2048 * float(jnp.tanh(jnp.float32(0.5)))  # every entry of x @ w is 0.5
    ok = abs(value - expected) <= 1e-3 * abs(expected)
    stats = device.memory_stats() or {}
    print(f"jax ok={int(ok)} value={value:.3f} expected={expected:.3f} "
          f"bytes_limit={stats.get('bytes_limit', -1)} bytes_reserved={stats.get('bytes_reserved', -1)}")
    return ok


def main():
    which = sys.argv[1] if len(sys.argv) > 1 else ""
    if which == "cupy":
        return 0 if run_cupy() else 1
    if which == "jax":
        return 0 if run_jax() else 1
    print(__doc__.strip(), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
