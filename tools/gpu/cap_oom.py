"""PyTorch under a process cap (STREAMPOOL_LIMIT): what mem_get_info reports, a short training
loop, then a list of tensors grown until out of memory. Prints one `key=value` line per figure
for tools/gpu/cap_check.sh to check. With --grow-batch, the training step itself is repeated with
the batch doubled until it runs out of memory instead (tools/gpu/oom_check.sh), and --oom-report
PATH writes streampool's report of the last failure there (python/streampool on PYTHONPATH).

    python3 tools/gpu/cap_oom.py [--chunk-mib N] [--max-gib N] [--grow-batch] [--oom-report PATH]
"""
import argparse
import json
import time

import torch


def gib(value):
    return value / float(1 << 30)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunk-mib", type=int, default=256)
    parser.add_argument("--max-gib", type=float, default=200.0, help="stop growing here (no OOM)")
    parser.add_argument("--grow-batch", action="store_true", help="grow the training batch, not a tensor list")
    parser.add_argument("--oom-report", help="write streampool.oom_report() here as JSON")
    args = parser.parse_args()

    torch.cuda.init()
    free, total = torch.cuda.mem_get_info()
    print(f"mem_get_info_start free={free} total={total} free_gib={gib(free):.3f} total_gib={gib(total):.3f}")
    print(f"allocator_backend={torch.cuda.get_allocator_backend()}")

    # A small training loop: a two-layer network on random data, a few hundred steps.
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 10)).cuda()
    optimiser = torch.optim.SGD(model.parameters(), lr=0.01)
    inputs = torch.randn(512, 1024, device="cuda")
    labels = torch.randint(0, 10, (512,), device="cuda")
    started = time.time()
    for _ in range(200):
        optimiser.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(inputs), labels)
        loss.backward()
        optimiser.step()
    torch.cuda.synchronize()
    print(f"training steps=200 loss={loss.item():.4f} seconds={time.time() - started:.2f}")
    free, total = torch.cuda.mem_get_info()
    print(f"mem_get_info_trained free={free} total={total} used_gib={gib(total - free):.3f}")
    assert free + (total - free) <= total

    if args.grow_batch:
        grow_batch(model, optimiser, args.max_gib)
        write_oom_report(args.oom_report)
        return

    # Grow until out of memory.
    chunk = args.chunk_mib << 20
    held = []
    outcome = "limit"
    while len(held) * chunk < args.max_gib * (1 << 30):
        try:
            held.append(torch.empty(chunk, dtype=torch.uint8, device="cuda"))
        except torch.cuda.OutOfMemoryError as error:
            outcome = "oom"
            print("oom_message=" + str(error).splitlines()[0][:300])
            break
    reached = len(held) * chunk
    print(f"grow outcome={outcome} tensors={len(held)} reached={reached} reached_gib={gib(reached):.3f} "
          f"memory_allocated_gib={gib(torch.cuda.memory_allocated()):.3f} "
          f"memory_reserved_gib={gib(torch.cuda.memory_reserved()):.3f}")
    free, total = torch.cuda.mem_get_info()
    print(f"mem_get_info_full free={free} total={total}")
    del held
    torch.cuda.synchronize()
    write_oom_report(args.oom_report)


def grow_batch(model, optimiser, max_gib):
    """One training step per batch size, the batch doubled each time until out of memory."""
    batch = 1024
    outcome = "limit"
    while batch * 4096 * 4 < max_gib * (1 << 30):
        try:
            inputs = torch.randn(batch, 1024, device="cuda")
            labels = torch.randint(0, 10, (batch,), device="cuda")
            optimiser.zero_grad(set_to_none=True)
            loss = torch.nn.functional.cross_entropy(model(inputs), labels)
            loss.backward()
            optimiser.step()
            torch.cuda.synchronize()
            print(f"batch size={batch} loss={loss.item():.4f} memory_reserved_gib={gib(torch.cuda.memory_reserved()):.3f}")
        except torch.cuda.OutOfMemoryError as error:
            outcome = "oom"
            print("oom_message=" + str(error).splitlines()[0][:300])
            break
        finally:
            inputs = labels = loss = None
        batch *= 2
    print(f"grow_batch outcome={outcome} batch={batch}")


def write_oom_report(path):
    if not path:
        return
    import streampool  # pylint: disable=import-outside-toplevel
    report = streampool.oom_report()
    with open(path, "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1)
    cause = report["cause"] if report else "none"
    failures = report["failures"] if report else 0
    print(f"oom_report cause={cause} failures={failures}")


if __name__ == "__main__":
    main()
