"""PyTorch workloads, all in one process for one allocator (run_all.py sets the allocator through
the environment before this process starts, and starts one process per allocator and round):

  training    a Llama-style decoder LM from a config with random weights (about 320 M parameters),
              bf16 weights and AdamW, batches whose sequence length changes every step
  decode_b1   token-by-token generation with a growing KV cache (transformers' own cache, fed
  decode_b32  back each token), batch 1 and batch 32; the first generation of each (memory growing)
              reported apart from the second
  serving     requests of random prompt and output lengths joining and leaving a batch every
              iteration, each request's KV cache its own tensors, padded into one batch and
              appended to again at every iteration (the cache re-packed as the batch changes)

Prints workload_io lines (MARK / RESULT / ERROR). A workload that fails is reported and the next
one runs. Memory, per workload, from a settled start (gc, synchronise, empty the cache):
  device_peak_steps_bytes   the device's used memory (cudaMemGetInfo: total - free) at the
                            workload's step boundaries, highest, minus the start; run_all.py adds
                            the same from NVML samples every few ms (device_peak_sampled_bytes)
  torch_max_reserved_bytes  torch.cuda.max_memory_reserved(): what PyTorch's allocator says it
                            holds. Native and expandable: its segments. backend:cudaMallocAsync:
                            the pool's reserved high-water mark as the pool answers it (NVIDIA's
                            pool, or streampool's under the preload). Absent under the pluggable
                            allocator, where PyTorch keeps no statistics.

    python3 torch_workloads.py --allocator NAME [--smoke] [--scale S] [--only training,serving]
"""
import collections
import gc
import os
import random
import sys
import time

import workload_io as io

WORKLOADS = ("training", "decode_b1", "decode_b32", "serving")

# Sizes: "full" for the measurement, "smoke" to check the code runs in seconds.
SIZES = {
    "full": {
        "lm": dict(vocab_size=32000, hidden_size=1024, intermediate_size=2816, num_hidden_layers=20,
                   num_attention_heads=16, num_key_value_heads=16, max_position_embeddings=4096),
        "train_batch": 8, "train_lengths": (128, 256, 384, 512, 768, 1024), "train_steps": 40,
        "prompt": 128, "new_tokens": 128,
        "serve_model": dict(vocab=32000, hidden=1024, heads=16, layers=12, mlp=4096, positions=1024),
        "requests": 48, "prompt_range": (16, 512), "output_range": (8, 96), "max_batch": 24,
        "warmup_requests": 6,
    },
    "smoke": {
        "lm": dict(vocab_size=1024, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                   num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=512),
        "train_batch": 2, "train_lengths": (32, 64), "train_steps": 3,
        "prompt": 16, "new_tokens": 4,
        "serve_model": dict(vocab=1024, hidden=128, heads=4, layers=2, mlp=256, positions=128),
        "requests": 6, "prompt_range": (4, 32), "output_range": (2, 8), "max_batch": 4,
        "warmup_requests": 2,
    },
}


def scaled(count, scale, least):
    return max(least, int(round(count * scale)))


class Process:
    """What every workload needs from the process: torch, and how this allocator empties its
    cache and answers for its memory."""

    def __init__(self, allocator):
        self.allocator = allocator
        self.pluggable = allocator.endswith("pluggable")
        if self.pluggable:
            import streampool.torch  # pylint: disable=import-outside-toplevel
            streampool.torch.use()  # before the process's first CUDA allocation
            self.streampool_torch = streampool.torch
        import torch  # pylint: disable=import-outside-toplevel
        self.torch = torch
        torch.cuda.init()
        self.device = torch.device("cuda")

    def settle(self):
        torch = self.torch
        gc.collect()
        torch.cuda.synchronize()
        if self.pluggable:
            self.streampool_torch.empty_cache()
        else:
            torch.cuda.empty_cache()
        torch.cuda.synchronize()

    def device_used(self):
        free, total = self.torch.cuda.mem_get_info()
        return total - free

    def torch_counters(self):
        if self.pluggable:
            return {}
        torch = self.torch
        return {"torch_max_reserved_bytes": int(torch.cuda.max_memory_reserved()),
                "torch_max_allocated_bytes": int(torch.cuda.max_memory_allocated())}

    def reset_peaks(self):
        if not self.pluggable:
            try:
                self.torch.cuda.reset_peak_memory_stats()
            except RuntimeError as error:  # an allocator without peak statistics
                print("reset_peak_memory_stats: %s" % error)


class Phase:
    """One workload's span: settled start, MARK lines around it, the device's used memory at
    step boundaries (sample()), and the allocator's own counters at the end."""

    def __init__(self, process, name):
        self.process = process
        self.name = name
        self.baseline = 0
        self.highest = 0

    def __enter__(self):
        self.process.settle()
        self.process.reset_peaks()
        self.baseline = self.process.device_used()
        self.highest = self.baseline
        time.sleep(0.02)  # a few NVML samples of the settled state before the begin mark
        io.mark(self.name, "begin")
        return self

    def sample(self):
        self.highest = max(self.highest, self.process.device_used())

    def __exit__(self, kind, value, trace):
        try:
            self.process.torch.cuda.synchronize()
            self.sample()
        finally:
            io.mark(self.name, "end")
        return False

    def memory(self):
        figures = {"device_peak_steps_bytes": self.highest - self.baseline,
                   "device_baseline_bytes": self.baseline}
        figures.update(self.process.torch_counters())
        return figures


def build_lm(process, lm_config):
    """The decoder LM, random weights from a seeded generator, bf16, made on the GPU (the
    default-device context manager) so that building it takes a second, not a CPU init."""
    torch = process.torch
    from transformers import AutoModelForCausalLM, LlamaConfig  # pylint: disable=import-outside-toplevel
    config = LlamaConfig(tie_word_embeddings=False, **lm_config)
    torch.manual_seed(0)
    try:
        with process.device:
            model = AutoModelForCausalLM.from_config(config)
    except Exception as error:  # pylint: disable=broad-except; a version that cannot
        print("building on the GPU failed (%s); building on the CPU" % error)
        model = AutoModelForCausalLM.from_config(config)
    model = model.to(device=process.device, dtype=torch.bfloat16)
    parameters = sum(p.numel() for p in model.parameters())
    print("model: %d parameters, %d layers, hidden %d" % (parameters, config.num_hidden_layers, config.hidden_size))
    return model, config, parameters


def training(process, model, config, size, scale, seed):
    torch = process.torch
    rng = random.Random(seed)
    steps = scaled(size["train_steps"], scale, 3)
    lengths = [rng.choice(size["train_lengths"]) for _ in range(steps)]
    warmup = list(dict.fromkeys(lengths))  # one step of each length, in the order they first come
    batch = size["train_batch"]
    generator = torch.Generator(device=process.device).manual_seed(seed)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def step(length):
        ids = torch.randint(0, config.vocab_size, (batch, length), device=process.device, generator=generator)
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss

    try:
        with Phase(process, "training") as phase:
            started = time.perf_counter()
            for length in warmup:
                step(length)
            torch.cuda.synchronize()
            warmup_s = time.perf_counter() - started
            phase.sample()
            times = []
            for length in lengths:
                started = time.perf_counter()
                loss = step(length)
                torch.cuda.synchronize()
                times.append(time.perf_counter() - started)
                phase.sample()
            final_loss = float(loss)
    finally:  # the optimizer's state and the gradients go before the next workload, whatever happened
        optimizer.state.clear()
        model.zero_grad(set_to_none=True)
    tokens = sum(batch * length for length in lengths)
    record = {"workload": "training", "steps": steps, "batch": batch, "lengths": sorted(set(lengths)),
              "step_time_s": sum(times) / len(times), "step_time_median_s": io.median(times),
              "tokens_per_s": tokens / sum(times), "warmup_s": warmup_s, "final_loss": final_loss}
    record.update(phase.memory())
    io.result(record)


def generate(process, model, config, batch, prompt, new_tokens, generator):
    """One generation: the prefill, then new_tokens steps of one token each with the cache fed
    back. Returns (prefill seconds, seconds per generated token)."""
    torch = process.torch
    ids = torch.randint(0, config.vocab_size, (batch, prompt), device=process.device, generator=generator)
    torch.cuda.synchronize()
    started = time.perf_counter()
    output = model(input_ids=ids, use_cache=True)
    cache = output.past_key_values
    token = output.logits[:, -1:].argmax(-1)
    del output
    torch.cuda.synchronize()
    prefilled = time.perf_counter()
    for _ in range(new_tokens):
        output = model(input_ids=token, past_key_values=cache, use_cache=True)
        cache = output.past_key_values
        token = output.logits[:, -1:].argmax(-1)
        del output
    torch.cuda.synchronize()
    finished = time.perf_counter()
    del cache, token
    return prefilled - started, (finished - prefilled) / new_tokens


def decoding(process, model, config, size, scale, seed, batch):
    torch = process.torch
    name = "decode_b%d" % batch
    new_tokens = scaled(size["new_tokens"], scale, 4)
    generator = torch.Generator(device=process.device).manual_seed(seed + batch)
    model.eval()
    with torch.no_grad(), Phase(process, name) as phase:
        cold_prefill, cold_token = generate(process, model, config, batch, size["prompt"], new_tokens, generator)
        phase.sample()
        prefill, per_token = generate(process, model, config, batch, size["prompt"], new_tokens, generator)
        phase.sample()
    record = {"workload": name, "batch": batch, "prompt": size["prompt"], "new_tokens": new_tokens,
              "time_per_token_s": per_token, "prefill_s": prefill,
              "time_per_token_cold_s": cold_token, "prefill_cold_s": cold_prefill}
    record.update(phase.memory())
    io.result(record)


def serve_model(torch, spec, device):
    """A small decoder written out here, so that the serving loop owns its KV caches: embeddings,
    blocks of RMSNorm, attention (PyTorch's scaled_dot_product_attention) and a SiLU MLP."""
    nn = torch.nn
    functional = torch.nn.functional
    hidden, heads = spec["hidden"], spec["heads"]
    head_dim = hidden // heads

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.attention_norm = nn.RMSNorm(hidden)
            self.qkv = nn.Linear(hidden, 3 * hidden, bias=False)
            self.out = nn.Linear(hidden, hidden, bias=False)
            self.mlp_norm = nn.RMSNorm(hidden)
            self.up = nn.Linear(hidden, spec["mlp"], bias=False)
            self.down = nn.Linear(spec["mlp"], hidden, bias=False)

        def project(self, x):
            """q, k, v, each [batch, heads, tokens, head_dim]."""
            batch, tokens, _ = x.shape
            qkv = self.qkv(self.attention_norm(x)).view(batch, tokens, 3, heads, head_dim)
            return qkv.permute(2, 0, 3, 1, 4).unbind(0)

        def finish(self, x, attention):
            batch, _, tokens, _ = attention.shape
            x = x + self.out(attention.transpose(1, 2).reshape(batch, tokens, hidden))
            return x + self.down(functional.silu(self.up(self.mlp_norm(x))))

    class Decoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.tokens = nn.Embedding(spec["vocab"], hidden)
            self.positions = nn.Embedding(spec["positions"], hidden)
            self.blocks = nn.ModuleList(Block() for _ in range(spec["layers"]))
            self.norm = nn.RMSNorm(hidden)
            self.head = nn.Linear(hidden, spec["vocab"], bias=False)

    torch.manual_seed(1)
    with device:
        model = Decoder()
    return model.to(dtype=torch.bfloat16).eval()


class Request:
    def __init__(self, index, arrival, prompt, output):
        self.index, self.arrival, self.prompt, self.output = index, arrival, prompt, output
        self.keys, self.values = [], []  # per layer [length, heads, head_dim]
        self.length = 0
        self.generated = 0
        self.next_token = 0


def request_stream(seed, count, prompt_range, output_range):
    """The same requests for every allocator: arrival iteration, prompt and output lengths."""
    rng = random.Random(seed)
    arrival = 0
    stream = []
    for index in range(count):
        arrival += rng.choice((0, 0, 1, 1, 2, 3))
        stream.append(Request(index, arrival, rng.randint(*prompt_range), rng.randint(*output_range)))
    return stream


def prefill(torch, model, request, generator, device):
    functional = torch.nn.functional
    ids = torch.randint(0, model.tokens.num_embeddings, (1, request.prompt), device=device, generator=generator)
    x = model.tokens(ids) + model.positions(torch.arange(request.prompt, device=device)[None])
    for block in model.blocks:
        q, k, v = block.project(x)
        x = block.finish(x, functional.scaled_dot_product_attention(q, k, v, is_causal=True))
        request.keys.append(k[0].transpose(0, 1).contiguous())
        request.values.append(v[0].transpose(0, 1).contiguous())
    request.next_token = int(model.head(model.norm(x[:, -1])).argmax(-1))
    request.length = request.prompt
    request.generated = 1


def decode_step(torch, model, active, device):
    """One token for every active request: each layer pads the requests' caches into one batch,
    attends with a mask over the padding, and appends the new key and value to each request's
    own cache. Returns the next tokens (synchronises: a server hands them out every iteration)."""
    functional = torch.nn.functional
    pad = torch.nn.utils.rnn.pad_sequence
    lengths = torch.tensor([r.length for r in active], device=device)
    longest = max(r.length for r in active)
    tokens = torch.tensor([[r.next_token] for r in active], device=device)
    x = model.tokens(tokens) + model.positions(lengths[:, None])
    slots = torch.arange(longest + 1, device=device)[None, :]
    mask = ((slots < lengths[:, None]) | (slots == longest))[:, None, None, :]
    for layer, block in enumerate(model.blocks):
        q, k, v = block.project(x)
        keys = torch.cat([pad([r.keys[layer] for r in active], batch_first=True).transpose(1, 2), k], dim=2)
        values = torch.cat([pad([r.values[layer] for r in active], batch_first=True).transpose(1, 2), v], dim=2)
        x = block.finish(x, functional.scaled_dot_product_attention(q, keys, values, attn_mask=mask))
        del keys, values
        new_keys, new_values = k[:, :, 0], v[:, :, 0]  # [batch, heads, head_dim]
        for i, r in enumerate(active):
            r.keys[layer] = torch.cat([r.keys[layer], new_keys[i:i + 1]])
            r.values[layer] = torch.cat([r.values[layer], new_values[i:i + 1]])
    return model.head(model.norm(x[:, -1])).argmax(-1).tolist()


def serve(torch, model, stream, max_batch, device, generator, phase=None):
    """Runs a request stream to the end. Returns (iteration latencies, tokens generated)."""
    pending = collections.deque(stream)
    active = []
    latencies = []
    generated = 0
    iteration = 0
    while pending or active:
        if not active and pending[0].arrival > iteration:
            iteration = pending[0].arrival  # nothing to do until the next request comes
        started = time.perf_counter()
        while pending and pending[0].arrival <= iteration and len(active) < max_batch:
            request = pending.popleft()
            prefill(torch, model, request, generator, device)
            active.append(request)
        next_tokens = decode_step(torch, model, active, device)
        for request, token in zip(active, next_tokens):
            request.next_token = token
            request.length += 1
            request.generated += 1
        finished = [r for r in active if r.generated >= r.output]
        generated += len(active)
        active = [r for r in active if r.generated < r.output]
        for request in finished:
            request.keys.clear()
            request.values.clear()
        latencies.append(time.perf_counter() - started)
        if phase is not None:
            phase.sample()
        iteration += 1
    return latencies, generated


def serving(process, size, scale, seed):
    torch = process.torch
    model = serve_model(torch, size["serve_model"], process.device)
    count = scaled(size["requests"], scale, 4)
    stream = request_stream(seed, count, size["prompt_range"], size["output_range"])
    generator = torch.Generator(device=process.device).manual_seed(seed)
    try:
        with torch.no_grad(), Phase(process, "serving") as phase:
            # A few other requests first, so kernels are loaded; the allocator starts as it is.
            warmup = request_stream(seed + 1, size["warmup_requests"], size["prompt_range"], size["output_range"])
            serve(torch, model, warmup, size["max_batch"], process.device, generator)
            latencies, generated = serve(torch, model, stream, size["max_batch"], process.device, generator, phase)
    finally:
        del model
    busy = sum(latencies)
    record = {"workload": "serving", "requests": count, "iterations": len(latencies),
              "tokens": generated + count, "tokens_per_s": (generated + count) / busy,
              "p99_iteration_s": io.percentile(latencies, 0.99), "p50_iteration_s": io.percentile(latencies, 0.5),
              "max_batch": size["max_batch"]}
    record.update(phase.memory())
    io.result(record)


def main(argv):
    parser = io.arguments(__doc__)
    parser.add_argument("--only", default=",".join(WORKLOADS), help="comma list of workloads")
    args = parser.parse_args(argv)
    size = SIZES["smoke" if args.smoke else "full"]
    wanted = [w for w in args.only.split(",") if w]
    unknown = sorted(set(wanted) - set(WORKLOADS))
    if unknown:
        parser.error("unknown workloads: %s" % ", ".join(unknown))
    started = time.perf_counter()
    try:
        process = Process(args.allocator)
    except Exception as error:  # pylint: disable=broad-except; no torch, no GPU, use() refused
        io.error("process", error)
        return 1
    torch = process.torch
    print("torch %s, %s, PYTORCH_CUDA_ALLOC_CONF=%s, LD_PRELOAD=%s" % (
        torch.__version__, torch.cuda.get_device_name(), os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "(unset)"),
        os.environ.get("LD_PRELOAD", "(unset)")))
    io.result({"workload": "process", "init_s": time.perf_counter() - started, "torch": torch.__version__})
    model = config = None
    if any(w != "serving" for w in wanted):
        try:
            model, config, parameters = build_lm(process, size["lm"])
            io.result({"workload": "model", "parameters": parameters})
        except Exception as error:  # pylint: disable=broad-except
            io.error("model", error)
    for workload in wanted:
        try:
            if workload == "serving":
                serving(process, size, args.scale, args.seed)
            elif model is None:
                continue  # its model could not be built: reported above
            elif workload == "training":
                training(process, model, config, size, args.scale, args.seed)
            else:
                decoding(process, model, config, size, args.scale, args.seed, int(workload[len("decode_b"):]))
        except Exception as error:  # pylint: disable=broad-except
            io.error(workload, error)
            try:
                process.settle()
            except Exception as settle_error:  # pylint: disable=broad-except
                io.error(workload + "/settle", settle_error)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
