"""PyTorch training that records and exports its own memory through the streampool package
(python/streampool): a few steps of tools/gpu/torch_train.py's network inside
`streampool.trace(...)`, then `streampool.export_torch_snapshot` and `export_perfetto` of that
trace, and streampool's statistics beside torch's. Run under LD_PRELOAD=libstreampool.so with
PYTHONPATH holding python/ (tools/gpu/export_check.sh does).

usage: torch_export_train.py OUT_DIR"""
import os
import sys

os.environ.setdefault("PYTORCH_ALLOC_CONF", "backend:cudaMallocAsync")
os.environ.setdefault("PYTORCH_CUDA_ALLOC_CONF", "backend:cudaMallocAsync")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import streampool  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_train import model  # noqa: E402


def main(out):
    print(f"streampool active: {streampool.active()}, version {streampool.version()}")
    print(f"torch allocator backend: {torch.cuda.memory.get_allocator_backend()}")
    device = torch.device("cuda")
    net = model(device)
    optimizer = torch.optim.AdamW(net.parameters(), lr=1e-3)
    generator = torch.Generator(device=device).manual_seed(1)
    with streampool.trace(os.path.join(out, "package_train.trace")) as recording:
        for batch in (64, 256, 128):
            for _ in range(10):
                images = torch.randn(batch, 3, 32, 32, device=device, generator=generator)
                labels = torch.randint(0, 10, (batch,), device=device, generator=generator)
                loss = F.cross_entropy(net(images), labels)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
            print(f"batch {batch} loss {loss.item():.3f}")
        torch.cuda.synchronize()
        # While the trace still records: the export flushes what every thread buffered first.
        streampool.export_torch_snapshot(os.path.join(out, "package_train_during.pickle"))
    streampool.export_torch_snapshot(os.path.join(out, "package_train.pickle"), trace=recording.path)
    streampool.export_perfetto(os.path.join(out, "package_train.json"), trace=recording.path)
    totals = streampool.stats()["totals"]
    stats = torch.cuda.memory_stats()
    print(f"streampool totals: {totals}")
    print(f"torch: reserved {torch.cuda.memory_reserved()} allocated {torch.cuda.memory_allocated()} "
          f"peak allocated {stats.get('allocated_bytes.all.peak', 0)}")
    print(f"oom_report: {streampool.oom_report()}")


if __name__ == "__main__":
    main(sys.argv[1])
