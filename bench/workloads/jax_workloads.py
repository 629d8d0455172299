"""JAX training with shapes that change every step, in one process for one allocator (run_all.py
sets XLA_PYTHON_CLIENT_ALLOCATOR, XLA_PYTHON_CLIENT_PREALLOCATE and LD_PRELOAD before it starts).

A small decoder-only transformer written in jax.numpy (no flax or optax: fewer moving parts),
float32, Adam written out, trained on random tokens whose sequence length is drawn every step
from a seeded list, so that XLA runs a different executable with different buffer sizes from one
step to the next. The step function does not donate its inputs: every step then allocates new
parameter and optimizer buffers and frees the old ones, the allocator traffic being compared.

Every length is run once first (compiling it, or loading it from the persistent compilation
cache when --compile-cache names one; run_all.py fills that cache in an unmeasured process first,
so that no measured process pays for compilation or autotuning): compile_s, reported apart. Then
the timed steps, each waited for (block_until_ready). Memory: the device's used memory (NVML) at
step boundaries minus the start (device_peak_steps_bytes; run_all.py adds NVML samples every few
ms, device_peak_sampled_bytes), and what jax's memory_stats() reports (jax_*).

    python3 jax_workloads.py --allocator NAME [--smoke] [--scale S] [--compile-cache DIR]
"""
import os
import random
import sys
import time

import device_memory
import workload_io as io

SIZES = {
    "full": {"vocab": 8192, "hidden": 512, "heads": 8, "layers": 6, "mlp": 2048, "batch": 16,
             "lengths": (64, 128, 192, 256, 384, 512), "steps": 60},
    "smoke": {"vocab": 256, "hidden": 64, "heads": 4, "layers": 2, "mlp": 128, "batch": 2,
              "lengths": (16, 32), "steps": 4},
}


def configure(compile_cache):
    import jax  # pylint: disable=import-outside-toplevel
    if compile_cache:
        for option, value in (("jax_compilation_cache_dir", compile_cache),
                              ("jax_persistent_cache_min_compile_time_secs", 0.0),
                              ("jax_persistent_cache_min_entry_size_bytes", -1)):
            try:
                jax.config.update(option, value)
            except (AttributeError, KeyError, ValueError) as error:
                print("jax.config %s: %s" % (option, error))
    return jax


def model_functions(jax, size):
    jnp = jax.numpy
    hidden, heads = size["hidden"], size["heads"]
    head_dim = hidden // heads

    def init(key):
        keys = iter(jax.random.split(key, 4 + 4 * size["layers"]))

        def dense(shape):
            return jax.random.normal(next(keys), shape, jnp.float32) * (shape[0] ** -0.5)

        params = {"tokens": dense((size["vocab"], hidden)), "positions": dense((max(size["lengths"]), hidden)),
                  "norm": jnp.ones((hidden,), jnp.float32), "blocks": []}
        for _ in range(size["layers"]):
            params["blocks"].append({"qkv": dense((hidden, 3 * hidden)), "out": dense((hidden, hidden)),
                                     "up": dense((hidden, size["mlp"])), "down": dense((size["mlp"], hidden)),
                                     "attention_norm": jnp.ones((hidden,), jnp.float32),
                                     "mlp_norm": jnp.ones((hidden,), jnp.float32)})
        return params

    def rms_norm(x, weight):
        return x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + 1e-6) * weight

    def loss(params, ids):
        batch, length = ids.shape
        x = params["tokens"][ids] + params["positions"][:length]
        causal = jnp.tril(jnp.ones((length, length), bool))
        for block in params["blocks"]:
            qkv = rms_norm(x, block["attention_norm"]) @ block["qkv"]
            q, k, v = jnp.split(qkv.reshape(batch, length, 3 * heads, head_dim).transpose(0, 2, 1, 3), 3, axis=1)
            scores = jnp.where(causal, (q @ k.transpose(0, 1, 3, 2)) * head_dim ** -0.5, -1e9)
            attention = (jax.nn.softmax(scores, axis=-1) @ v).transpose(0, 2, 1, 3).reshape(batch, length, hidden)
            x = x + attention @ block["out"]
            x = x + jax.nn.gelu(rms_norm(x, block["mlp_norm"]) @ block["up"]) @ block["down"]
        logits = rms_norm(x, params["norm"]) @ params["tokens"].T
        targets = jnp.roll(ids, -1, axis=1)
        picked = jnp.take_along_axis(jax.nn.log_softmax(logits), targets[..., None], axis=-1)
        return -jnp.mean(picked)

    def train_step(params, first, second, step, ids):
        value, grads = jax.value_and_grad(loss)(params, ids)
        tree = jax.tree_util
        first = tree.tree_map(lambda m, g: 0.9 * m + 0.1 * g, first, grads)
        second = tree.tree_map(lambda s, g: 0.999 * s + 0.001 * g * g, second, grads)
        scale = 1e-3 * jnp.sqrt(1 - 0.999 ** step) / (1 - 0.9 ** step)
        params = tree.tree_map(lambda p, m, s: p - scale * m / (jnp.sqrt(s) + 1e-8), params, first, second)
        return params, first, second, value

    return init, jax.jit(train_step)


def jax_memory_stats(jax):
    try:
        stats = jax.local_devices()[0].memory_stats() or {}
    except Exception as error:  # pylint: disable=broad-except; not every backend has them
        print("memory_stats: %s" % error)
        return {}
    return {"jax_" + key: int(value) for key, value in stats.items() if isinstance(value, int)}


def training(jax, size, scale, seed, nvml):
    jnp = jax.numpy
    rng = random.Random(seed)
    steps = max(3, int(round(size["steps"] * scale)))
    lengths = [rng.choice(size["lengths"]) for _ in range(steps)]
    jnp.zeros((1,)).block_until_ready()  # the backend up before the start is read
    baseline = nvml.used()
    highest = baseline
    time.sleep(0.02)
    io.mark("jax_training", "begin")
    try:
        init, train_step = model_functions(jax, size)
        params = init(jax.random.PRNGKey(seed))
        first = jax.tree_util.tree_map(jnp.zeros_like, params)
        second = jax.tree_util.tree_map(jnp.zeros_like, params)
        keys = jax.random.split(jax.random.PRNGKey(seed + 1), steps + len(size["lengths"]))
        started = time.perf_counter()
        step = 1
        for index, length in enumerate(dict.fromkeys(lengths)):  # compile (or load) each length
            ids = jax.random.randint(keys[index], (size["batch"], length), 0, size["vocab"])
            params, first, second, value = train_step(params, first, second, float(step), ids)
            value.block_until_ready()
            step += 1
        compile_s = time.perf_counter() - started
        times = []
        for index, length in enumerate(lengths):
            ids = jax.random.randint(keys[len(size["lengths"]) + index], (size["batch"], length), 0, size["vocab"])
            ids.block_until_ready()
            started = time.perf_counter()
            params, first, second, value = train_step(params, first, second, float(step), ids)
            value.block_until_ready()
            times.append(time.perf_counter() - started)
            step += 1
            used = nvml.used()
            if used is not None and highest is not None:
                highest = max(highest, used)
        final_loss = float(value)
    finally:
        io.mark("jax_training", "end")
    tokens = sum(size["batch"] * length for length in lengths)
    record = {"workload": "jax_training", "steps": steps, "batch": size["batch"], "lengths": sorted(set(lengths)),
              "step_time_s": sum(times) / len(times), "step_time_median_s": io.median(times),
              "tokens_per_s": tokens / sum(times), "compile_s": compile_s, "final_loss": final_loss,
              "device_peak_steps_bytes": None if baseline is None else highest - baseline,
              "device_baseline_bytes": baseline}
    record.update(jax_memory_stats(jax))
    io.result(record)


def main(argv):
    args = io.arguments(__doc__).parse_args(argv)
    started = time.perf_counter()
    try:
        jax = configure(args.compile_cache)
        backend = jax.default_backend()
    except Exception as error:  # pylint: disable=broad-except; no jax, no GPU
        io.error("process", error)
        return 1
    print("jax %s, backend %s, XLA_PYTHON_CLIENT_ALLOCATOR=%s, XLA_PYTHON_CLIENT_PREALLOCATE=%s, LD_PRELOAD=%s" % (
        jax.__version__, backend, os.environ.get("XLA_PYTHON_CLIENT_ALLOCATOR", "(unset: BFC)"),
        os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE", "(unset)"), os.environ.get("LD_PRELOAD", "(unset)")))
    io.result({"workload": "process", "init_s": time.perf_counter() - started, "jax": jax.__version__})
    nvml = device_memory.Nvml()
    if nvml.device is None:
        print("NVML: %s" % nvml.error)
    try:
        training(jax, SIZES["smoke" if args.smoke else "full"], args.scale, args.seed, nvml)
    except Exception as error:  # pylint: disable=broad-except
        io.error("jax_training", error)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
