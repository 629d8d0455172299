"""PyTorch with the cudaMallocAsync backend: two small models trained on two streams, a tensor made
on one stream and consumed (and freed) on the other, then empty_cache().

Prints only deterministic lines (losses rounded, integer sums, which memory_stats keys the async
backend fills, exact allocated bytes), so the output is identical on NVIDIA's driver and under
LD_PRELOAD=libstreampool.so. Reserved bytes legitimately differ (streampool maps 2 MiB granules,
the driver 32 MiB chunks), so only "reserved >= allocated" is printed for them.
"""
import os

os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "backend:cudaMallocAsync"
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402


def make_model(device):
    torch.manual_seed(2)
    return torch.nn.Sequential(
        torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 1)
    ).to(device)


def main():
    torch.use_deterministic_algorithms(True)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = torch.device("cuda")
    print("allocator backend:", torch.cuda.get_allocator_backend())

    generator = torch.Generator().manual_seed(1)
    inputs = torch.randn(4096, 64, generator=generator)
    truth = torch.randn(64, 1, generator=generator)
    targets = inputs @ truth + 0.1 * torch.randn(4096, 1, generator=generator)

    models = [make_model(device), make_model(device)]
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.01) for m in models]
    streams = [torch.cuda.Stream(), torch.cuda.Stream()]
    torch.cuda.synchronize()  # parameters were made on the default stream

    losses = [[], []]
    cross_sums = []
    for step in range(30):
        start = (step * 256) % 4096
        for k in range(2):
            with torch.cuda.stream(streams[k]):
                # Model 1 sees the batch in reverse order: the two streams do different work.
                rows = slice(start, start + 256)
                x = inputs[rows].to(device)
                y = targets[rows].to(device)
                if k == 1:
                    x, y = x.flip(0), y.flip(0)
                optimizers[k].zero_grad(set_to_none=True)
                loss = F.mse_loss(models[k](x), y)
                loss.backward()
                optimizers[k].step()
                losses[k].append(loss.detach())
        # Made on stream 0, consumed on stream 1, freed while stream 1 may still use it: PyTorch
        # orders the free with an event (record_stream), the cross-stream case of the allocator.
        with torch.cuda.stream(streams[0]):
            made = torch.full((1 << 20,), step + 1, dtype=torch.int64, device=device)
        streams[1].wait_stream(streams[0])
        with torch.cuda.stream(streams[1]):
            made.record_stream(streams[1])
            cross_sums.append((made * 3).sum())
        del made
    torch.cuda.synchronize()

    for k in range(2):
        print("model %d losses: %s" % (k, " ".join("%.4f" % v.item() for v in losses[k])))
    print("cross-stream sums:", " ".join(str(int(v.item())) for v in cross_sums))

    del losses, cross_sums
    torch.cuda.synchronize()
    stats = torch.cuda.memory_stats()
    filled = sorted(key for key, value in stats.items() if value)
    print("memory_stats keys filled:", " ".join(filled))
    allocated = stats.get("allocated_bytes.all.current", -1)
    print("allocated bytes (parameters and optimizer state):", allocated)
    print("allocated == memory_allocated():", allocated == torch.cuda.memory_allocated())
    print("peak >= current:", stats.get("allocated_bytes.all.peak", -1) >= allocated)
    print("reserved >= allocated:", stats.get("reserved_bytes.all.current", -1) >= allocated)

    torch.cuda.empty_cache()
    after = torch.cuda.memory_stats()
    print("after empty_cache allocated bytes:", after.get("allocated_bytes.all.current", -1))
    print("after empty_cache reserved >= allocated:",
          after.get("reserved_bytes.all.current", -1) >= after.get("allocated_bytes.all.current", 0))
    print("after empty_cache reserved <= before:",
          after.get("reserved_bytes.all.current", -1) <= stats.get("reserved_bytes.all.current", -1))

    del models, optimizers
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    print("after deleting the models allocated bytes:", torch.cuda.memory_allocated())
    print("done")


if __name__ == "__main__":
    main()
