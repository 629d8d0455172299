"""PyTorch with streampool as its pluggable allocator (libstreampool_alloc.so, no LD_PRELOAD), for
tools/gpu/pluggable_check.sh. One step per run, chosen by the first argument:

  train native|streampool   a small transformer trained on random data (fixed seed), one
                            "loss STEP HEX" line per step (float.hex, for an exact comparison) and,
                            under streampool, its statistics
  notebook                  a notebook's order: import torch, CPU work, then use(), then CUDA
  late                      use() after a CUDA tensor exists: must raise streampool.NotUsable
  checks                    allocator checks in the spirit of PyTorch's test_cuda ones that run
                            under a pluggable allocator: memory_stats-like numbers, empty_cache,
                            side streams, CUDA graph capture and replay
Each prints "PASS name" or "FAIL name: why" lines and exits non-zero on a failure."""
import sys

import streampool
import streampool.torch

MiB = 1 << 20
failures = []


def check(name, condition, why=""):
    print(f"PASS {name}" if condition else f"FAIL {name}: {why}", flush=True)
    if not condition:
        failures.append(name)


def train(allocator):
    import torch  # pylint: disable=import-outside-toplevel
    if allocator == "streampool":
        streampool.torch.use()
    torch.manual_seed(1234)
    torch.backends.cudnn.deterministic = True
    torch.backends.cuda.matmul.allow_tf32 = False
    device = torch.device("cuda")
    layer = torch.nn.TransformerEncoderLayer(d_model=128, nhead=4, dim_feedforward=512, dropout=0.0,
                                             batch_first=True)
    model = torch.nn.Sequential(torch.nn.TransformerEncoder(layer, num_layers=2), torch.nn.Linear(128, 10)).to(device)
    optimiser = torch.optim.Adam(model.parameters(), lr=1e-3)
    generator = torch.Generator(device="cpu").manual_seed(99)
    inputs = torch.randn(40, 32, 64, 128, generator=generator)
    labels = torch.randint(0, 10, (40, 32, 64), generator=generator)
    for step in range(40):
        x = inputs[step].to(device, non_blocking=True)
        y = labels[step].to(device, non_blocking=True)
        optimiser.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x).reshape(-1, 10), y.reshape(-1))
        loss.backward()
        optimiser.step()
        print(f"loss {step} {loss.item().hex()}", flush=True)
    torch.cuda.synchronize()
    if allocator == "streampool":
        stats = streampool.torch.memory_stats()
        print("stats " + " ".join(f"{key}={value}" for key, value in sorted(stats.items())), flush=True)
        check("train-served", stats["allocation.all.allocated"] > 0 and stats["allocated_bytes.all.peak"] > 0,
              f"streampool served nothing: {stats}")


def notebook():
    import torch  # pylint: disable=import-outside-toplevel  # cell 1: import, CPU work
    cpu = torch.arange(10.0).sum().item()
    streampool.torch.use()  # cell 2: before the first CUDA allocation
    x = torch.randn(1024, 1024, device="cuda")  # cell 3
    y = (x @ x).sum().item()
    stats = streampool.torch.memory_stats()
    check("notebook-cpu-first", cpu == 45.0, str(cpu))
    check("notebook-served", stats["allocated_bytes.all.current"] >= 4 * MiB and streampool.active(), str(stats))
    check("notebook-result", y == y, "NaN")  # a finite answer from memory streampool gave
    print("stats " + " ".join(f"{key}={value}" for key, value in sorted(stats.items())), flush=True)


def late():
    import torch  # pylint: disable=import-outside-toplevel
    torch.zeros(1, device="cuda")
    try:
        streampool.torch.use()
    except streampool.NotUsable as error:
        check("late-raises", "before the first CUDA allocation" in str(error), str(error))
        print(f"message: {error}", flush=True)
        return
    check("late-raises", False, "use() succeeded after a CUDA allocation")


def checks():
    import torch  # pylint: disable=import-outside-toplevel
    streampool.torch.use()
    base = streampool.torch.memory_stats()
    a = torch.empty(8 * MiB, dtype=torch.uint8, device="cuda")
    now = streampool.torch.memory_stats()
    check("stats-allocated", now["allocated_bytes.all.current"] - base["allocated_bytes.all.current"] == 8 * MiB,
          f"{base} -> {now}")
    check("stats-reserved", now["reserved_bytes.all.current"] >= now["allocated_bytes.all.current"], str(now))
    address = a.data_ptr()
    del a
    b = torch.empty(8 * MiB, dtype=torch.uint8, device="cuda")
    check("same-stream-reuse", b.data_ptr() == address, f"{b.data_ptr():#x} != {address:#x}")
    del b
    after = streampool.torch.memory_stats()
    check("stats-freed", after["allocated_bytes.all.current"] == base["allocated_bytes.all.current"], str(after))
    check("stats-peak", after["allocated_bytes.all.peak"] >= 8 * MiB, str(after))

    # A producer on a side stream, a consumer on the default one: correct values through reuse.
    side = torch.cuda.Stream()
    total = 0.0
    for step in range(20):
        with torch.cuda.stream(side):
            t = torch.full((MiB,), float(step), device="cuda")
        torch.cuda.current_stream().wait_stream(side)
        t.record_stream(torch.cuda.current_stream())  # a no-op under a pluggable allocator (documented)
        total += t.sum().item()
        del t
    check("side-stream-values", total == sum(float(step) * MiB for step in range(20)), str(total))

    torch.cuda.synchronize()
    streampool.torch.empty_cache()
    emptied = streampool.torch.memory_stats()
    check("empty-cache", emptied["reserved_bytes.all.current"] <= after["reserved_bytes.all.current"], str(emptied))

    # CUDA graphs: allocations during capture go through the same functions, on the capturing
    # stream, and reach the driver as graph memory.
    static_in = torch.randn(256, 256, device="cuda")
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(2):
            (static_in @ static_in).relu()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph):
            static_out = (static_in @ static_in).relu()
        static_in.copy_(torch.ones(256, 256, device="cuda"))
        graph.replay()
        torch.cuda.synchronize()
        check("graph-replay", bool((static_out == 256.0).all().item()), str(static_out[0, :4]))
    except RuntimeError as error:  # the capture itself must not be broken by streampool
        check("graph-replay", False, str(error).splitlines()[0])
    print("stats " + " ".join(f"{key}={value}" for key, value in sorted(streampool.torch.memory_stats().items())))


def main(argv):
    step = argv[1] if len(argv) > 1 else ""
    if step == "train" and len(argv) == 3 and argv[2] in ("native", "streampool"):
        train(argv[2])
    elif step in ("notebook", "late", "checks") and len(argv) == 2:
        {"notebook": notebook, "late": late, "checks": checks}[step]()
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
