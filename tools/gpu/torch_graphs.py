"""PyTorch CUDA graphs: the patterns that broke merely by preloading streampool.

    python3 torch_graphs.py

1. fork/join: a torch.cuda.graph capture that forks work to a side stream (wait_stream), allocates
   and frees temporaries on both streams, and joins back; replayed with new inputs, each replay
   checked against the same function run eagerly. Captured in the three capture modes (global,
   thread_local, relaxed).
2. make_graphed_callables: a small MLP and a plain function, trained a few steps graphed and
   eagerly from the same weights; losses and weights checked to agree.
3. many graphs: 48 graphs captured into one shared memory pool and 16 into private pools, replayed
   in rounds and checked; half of them dropped and new ones captured in their place, replayed again.
4. memory: whether allocated bytes are back where they started once everything is dropped
   (printed, compared with the run on the driver alone, not checked).

The allocator is whatever PYTORCH_CUDA_ALLOC_CONF selects (the runner uses PyTorch's default and
backend:cudaMallocAsync). Prints only deterministic lines: check names and ok / MISMATCH, never
values that may legitimately differ between NVIDIA's driver and streampool. Exits 1 on any mismatch.
"""
import copy
import gc
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

FAILURES = []


def check(name, got, expected, rtol=1e-4, atol=1e-5):
    """Prints `name: ok` when the tensors agree, else MISMATCH (and remembers it)."""
    got = got.detach().float().cpu()
    expected = expected.detach().float().cpu()
    if got.shape == expected.shape and torch.allclose(got, expected, rtol=rtol, atol=atol):
        print("%s: ok" % name)
        return
    FAILURES.append(name)
    if got.shape != expected.shape:
        print("%s: MISMATCH shape %s != %s" % (name, tuple(got.shape), tuple(expected.shape)))
    else:
        print("%s: MISMATCH max abs error %.3g" % (name, (got - expected).abs().max().item()))


def fork_join(x, w1, w2):
    """Main stream: x @ w1. Side stream: relu(x @ w2) * 2 and a temporary. Joined and added.

    Everything the side stream allocates is freed on it before the join, and its result goes to a
    buffer made before the capture: with backend:cudaMallocAsync a side-stream tensor freed after
    the join would leave unjoined work on the side stream (the driver refuses to end the capture).
    """
    main = torch.cuda.current_stream()
    side = fork_join.side
    side.wait_stream(main)
    a = x @ w1
    with torch.cuda.stream(side):
        b = torch.relu(x @ w2)
        scratch = torch.empty_like(b).fill_(2.0)  # allocated and freed on the side stream
        torch.mul(b, scratch, out=fork_join.side_out)
        del scratch, b
    main.wait_stream(side)
    temporary = a + fork_join.side_out
    return temporary.sum(dim=1, keepdim=True) + temporary


def test_fork_join(device, mode):
    generator = torch.Generator().manual_seed(10)
    w1 = torch.randn(256, 256, generator=generator).to(device)
    w2 = torch.randn(256, 256, generator=generator).to(device)
    static_x = torch.randn(128, 256, generator=generator).to(device)
    fork_join.side = torch.cuda.Stream()
    fork_join.side_out = torch.empty(128, 256, device=device)
    # Warm up on a side stream, as PyTorch's documentation asks before a capture.
    warm = torch.cuda.Stream()
    warm.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(warm):
        for _ in range(3):
            fork_join(static_x, w1, w2)
    torch.cuda.current_stream().wait_stream(warm)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, capture_error_mode=mode):
        static_out = fork_join(static_x, w1, w2)
    for replay in range(4):
        fresh = torch.randn(128, 256, generator=generator).to(device)
        static_x.copy_(fresh)
        graph.replay()
        expected = fork_join(fresh, w1, w2)
        torch.cuda.synchronize()
        check("fork/join capture (%s mode) replay %d" % (mode, replay), static_out, expected)
    del graph, static_out
    fork_join.side_out = None
    torch.cuda.synchronize()


def test_graphed_callables(device):
    torch.manual_seed(3)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 8)).to(device)
    eager_model = copy.deepcopy(model)

    def scale_shift(t):
        return t * 0.5 + 1.0

    generator = torch.Generator().manual_seed(4)
    sample = torch.randn(32, 64, generator=generator).to(device).requires_grad_(False)
    sample_t = torch.randn(32, 8, generator=generator).to(device).requires_grad_(True)
    graphed_model, graphed_fn = torch.cuda.make_graphed_callables((model, scale_shift), ((sample,), (sample_t,)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    eager_optimizer = torch.optim.SGD(eager_model.parameters(), lr=0.05)
    graphed_losses = []
    eager_losses = []
    for step in range(6):
        x = torch.randn(32, 64, generator=generator).to(device)
        y = torch.randn(32, 8, generator=generator).to(device)
        for net, fn, opt, losses in ((graphed_model, graphed_fn, optimizer, graphed_losses),
                                     (eager_model, scale_shift, eager_optimizer, eager_losses)):
            opt.zero_grad(set_to_none=True)
            loss = F.mse_loss(fn(net(x)), y)
            loss.backward()
            opt.step()
            losses.append(loss.detach())
    torch.cuda.synchronize()
    check("make_graphed_callables losses (6 steps)", torch.stack(graphed_losses), torch.stack(eager_losses))
    for index, (p, q) in enumerate(zip(model.parameters(), eager_model.parameters())):
        check("make_graphed_callables parameter %d after training" % index, p, q)


def step_function(k):
    """A different small computation for each graph k, with temporaries of different sizes."""
    def run(x):
        t = torch.empty(1024 * (k % 7 + 1), device=x.device).fill_(float(k))
        u = x * (k + 1) + t[: x.numel()].view_as(x)
        return u.cumsum(0) if k % 2 else u.flip(0)
    return run


def test_many_graphs(device):
    generator = torch.Generator().manual_seed(5)
    shared_pool = torch.cuda.graph_pool_handle()
    graphs = {}

    def capture(k):
        fn = step_function(k)
        x = torch.randn(1024, generator=generator).to(device)
        fn(x)  # warm-up outside the capture
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        pool = shared_pool if k < 48 else None
        with torch.cuda.graph(graph, pool=pool):
            out = fn(x)
        graphs[k] = (graph, fn, x, out)

    for k in range(64):
        capture(k)
    print("captured graphs: %d" % len(graphs))

    def replay_all(label):
        bad = []
        for k in sorted(graphs):
            graph, fn, x, out = graphs[k]
            x.copy_(torch.randn(1024, generator=generator).to(device))
            graph.replay()
        torch.cuda.synchronize()
        for k in sorted(graphs):
            graph, fn, x, out = graphs[k]
            if not torch.allclose(out, fn(x), rtol=1e-5, atol=1e-5):
                bad.append(k)
        torch.cuda.synchronize()
        if bad:
            FAILURES.append(label)
            print("%s: MISMATCH in graphs %s" % (label, " ".join(str(k) for k in bad)))
        else:
            print("%s: ok (%d graphs)" % (label, len(graphs)))

    for round_index in range(3):
        replay_all("many graphs replay round %d" % round_index)
    # Drop every second graph (the private-pool ones free their pools), capture new ones in place.
    for k in range(0, 64, 2):
        del graphs[k]
    torch.cuda.synchronize()
    for k in range(64, 96):
        capture(k)
    replay_all("many graphs after dropping half and capturing 32 more")
    graphs.clear()
    torch.cuda.synchronize()


def main():
    if not torch.cuda.is_available():
        print("no CUDA device")
        return 1
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = torch.device("cuda")
    print("allocator backend:", torch.cuda.get_allocator_backend())
    torch.cuda.synchronize()
    baseline = torch.cuda.memory_allocated()

    for mode in ("global", "thread_local", "relaxed"):
        test_fork_join(device, mode)
    test_graphed_callables(device)
    test_many_graphs(device)

    gc.collect()  # make_graphed_callables leaves reference cycles that hold static tensors
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    after = torch.cuda.memory_allocated()
    # Compared with the run on the driver alone, not checked here: what PyTorch keeps after the
    # graphs are gone is its business, but it must not change under streampool.
    print("allocated bytes back to the start: %s" % ("yes" if after == baseline else "no"))
    print("torch graphs: %d checks failed" % len(FAILURES))
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
