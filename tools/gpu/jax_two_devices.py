"""JAX over two GPUs with XLA's cuda_async allocator: pmap and shard_map of the same computations
across both devices, results gathered on the host.

Prints only deterministic lines: integer results exactly, float results at 4 decimals with the
highest matmul precision. Exits 1 if fewer than two devices or a result is wrong.
"""
import os
import sys

os.environ["XLA_PYTHON_CLIENT_ALLOCATOR"] = "cuda_async"
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

jax.config.update("jax_default_matmul_precision", "highest")


def main():
    devices = jax.devices()
    print("backend:", jax.default_backend(), "devices:", len(devices))
    print("allocator:", os.environ["XLA_PYTHON_CLIENT_ALLOCATOR"])
    if len(devices) < 2:
        return 1
    devices = devices[:2]
    failures = 0

    @jax.pmap
    def integer_step(x):
        y = (x * 7 + 3) % 1009
        return y, jnp.sum(y)

    x = jnp.arange(2 * (1 << 20), dtype=jnp.int32).reshape(2, -1)  # pmap splits the leading axis
    expected = np.arange(2 * (1 << 20), dtype=np.int64).reshape(2, -1)
    for round_ in range(20):
        x, sums = integer_step(x)
        expected = (expected * 7 + 3) % 1009
        got = [int(s) for s in sums]
        want = [int(expected[0].sum()), int(expected[1].sum())]
        failures += 0 if got == want else 1
        print(f"pmap round {round_}: sums {got[0]} {got[1]} match={got == want}")

    mean_across = jax.pmap(lambda v: jax.lax.pmean(v, axis_name="d"), axis_name="d")
    values = jnp.stack([jnp.full((1024,), 1.0), jnp.full((1024,), 3.0)])
    mean = np.asarray(mean_across(values))
    ok = bool(np.all(mean == 2.0))
    failures += 0 if ok else 1
    print(f"pmean across the two devices is 2.0: {ok}")

    from jax.sharding import Mesh, PartitionSpec as P
    try:
        from jax import shard_map
    except ImportError:  # older JAX
        from jax.experimental.shard_map import shard_map
    mesh = Mesh(np.array(devices), ("d",))

    def local_matmul(a, b):
        return jnp.tanh(a @ b) * 0.5 + 0.25

    sharded = jax.jit(shard_map(local_matmul, mesh=mesh, in_specs=(P("d", None), P(None, None)),
                                out_specs=P("d", None)))
    key = jax.random.PRNGKey(0)
    a = jax.random.normal(key, (2048, 512), dtype=jnp.float32)
    b = jax.random.normal(jax.random.PRNGKey(1), (512, 512), dtype=jnp.float32)
    for round_ in range(10):
        out = sharded(a, b)
        reference = local_matmul(jax.device_put(a, devices[0]), jax.device_put(b, devices[0]))
        close = bool(np.allclose(np.asarray(out), np.asarray(reference), atol=1e-5))
        failures += 0 if close else 1
        print(f"shard_map round {round_}: checksum {float(jnp.sum(out)):.4f} matches one device: {close}")
        a = a * 0.99
    print("failures:", failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
