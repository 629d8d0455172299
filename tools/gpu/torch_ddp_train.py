"""Two-process torch.distributed (NCCL) data-parallel training on two GPUs with
PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync: a small MLP on fixed synthetic data, fixed seeds,
deterministic algorithms, STEPS steps (default 300). Launched with mp.spawn on 127.0.0.1 (no network).

Standard output (compared between the run without and the run with streampool): rank 0's loss of
every step, exactly (repr of the float). '#' lines: one JSON object per rank with the mean and
median step time, torch.cuda.max_memory_allocated / max_memory_reserved and the device memory in
use (cudaMemGetInfo), for the comparison of the two runs.

  python3 torch_ddp_train.py [STEPS]
  python3 torch_ddp_train.py --compare A.out B.out   losses equal or within 1e-6: exit 0
"""
import json
import os
import statistics
import sys
import time

os.environ.setdefault("PYTORCH_CUDA_ALLOC_CONF", "backend:cudaMallocAsync")
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")


def losses_of(path):
    with open(path) as f:
        return [float(line.split()[3]) for line in f if line.startswith("step ")]


def compare(a_path, b_path):
    a, b = losses_of(a_path), losses_of(b_path)
    if not a or len(a) != len(b):
        print(f"loss counts differ or are zero: {len(a)} vs {len(b)}")
        return 1
    worst = max(abs(x - y) for x, y in zip(a, b))
    identical = sum(1 for x, y in zip(a, b) if x == y)
    print(f"losses: {len(a)} steps, {identical} identical, largest difference {worst:.3e}")
    return 0 if worst <= 1e-6 else 1


def worker(rank, world, steps, port):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device("cuda", rank))
    torch.manual_seed(1234)
    torch.use_deterministic_algorithms(True)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = torch.device("cuda", rank)
    model = torch.nn.Sequential(
        torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 10)).to(device)
    model = DDP(model, device_ids=[rank])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    generator = torch.Generator().manual_seed(99 + rank)
    inputs = torch.randn(32, 512, 256, generator=generator).to(device)
    targets = torch.randint(0, 10, (32, 512), generator=generator).to(device)
    loss_fn = torch.nn.CrossEntropyLoss()
    times = []
    for step in range(steps):
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        # A new activation tensor each step: allocations and frees through the pool every step.
        loss = loss_fn(model(inputs[step % 32]), targets[step % 32])
        loss.backward()
        optimizer.step()
        reduced = loss.detach().clone()
        dist.all_reduce(reduced)
        value = reduced.item() / world
        times.append((time.perf_counter() - start) * 1000.0)
        if rank == 0:
            print(f"step {step} loss {value!r}", flush=True)
    torch.cuda.synchronize(device)
    free, total = torch.cuda.mem_get_info(device)
    report = {
        "rank": rank, "steps": steps,
        "step_ms_mean": round(statistics.mean(times[10:] or times), 4),
        "step_ms_median": round(statistics.median(times[10:] or times), 4),
        "max_memory_allocated": torch.cuda.max_memory_allocated(device),
        "max_memory_reserved": torch.cuda.max_memory_reserved(device),
        "mem_get_info_used": total - free,
        "allocator_backend": torch.cuda.get_allocator_backend(),
    }
    print("# " + json.dumps(report), flush=True)
    dist.barrier()
    dist.destroy_process_group()


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--compare":
        return compare(sys.argv[2], sys.argv[3])
    import torch
    import torch.multiprocessing as mp

    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    if torch.cuda.device_count() < 2:
        print("needs two GPUs, found", torch.cuda.device_count())
        return 1
    port = 29500 + os.getpid() % 1000
    mp.spawn(worker, args=(2, steps, port), nprocs=2, join=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
