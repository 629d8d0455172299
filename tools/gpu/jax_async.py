"""JAX with XLA's cuda_async allocator (cuMemAllocFromPoolAsync / cuMemFreeAsync on a pool XLA
configures through the driver API it looks up in libcuda.so.1 itself): jitted computations in a
loop so that buffers are allocated and freed many times.

Prints only deterministic lines: integer results exactly, float results at 3 decimals with the
highest matmul precision (no TF32).
"""
import os

os.environ["XLA_PYTHON_CLIENT_ALLOCATOR"] = "cuda_async"
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

jax.config.update("jax_default_matmul_precision", "highest")


@jax.jit
def integer_step(x):
    y = (x * 7 + 3) % 1009
    return y, jnp.sum(y)


@jax.jit
def float_step(a, b):
    return jnp.tanh(a @ b) * 0.5 + 0.25


def main():
    print("backend:", jax.default_backend())
    print("allocator:", os.environ["XLA_PYTHON_CLIENT_ALLOCATOR"])

    x = jnp.arange(1 << 20, dtype=jnp.int32)
    sums = []
    for _ in range(20):
        x, total = integer_step(x)
        sums.append(int(total))
    print("integer sums:", " ".join(str(s) for s in sums))

    a = (jnp.arange(512 * 512, dtype=jnp.float32).reshape(512, 512) % 13) / 13.0
    b = (jnp.arange(512 * 512, dtype=jnp.float32).reshape(512, 512) % 7) / 70.0
    for _ in range(5):
        a = float_step(a, b)
    a.block_until_ready()
    print("float mean: %.3f" % float(jnp.mean(a)))
    print("float corner: %.3f %.3f" % (float(a[0, 0]), float(a[-1, -1])))

    # Many short-lived buffers of varied sizes.
    checks = []
    for n in (1 << 10, 1 << 14, 1 << 18, 1 << 22):
        v = jnp.ones((n,), dtype=jnp.int32)
        checks.append(int(jnp.sum(v * 2)))
        del v
    print("buffer sums:", " ".join(str(c) for c in checks))
    print("done")


if __name__ == "__main__":
    main()
