"""PyTorch with PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync on two GPUs: tensors made on one
device, moved to the other (peer copies between the two devices' pools), computed on there and
moved back, in a loop, plus a free on one device of a tensor the other device's work produced.

Prints only deterministic lines (integer results exactly, float results rounded); memory
statistics go to '#' lines, which the with/without comparison ignores. Exits 1 on a wrong result.
"""
import os
import sys

os.environ.setdefault("PYTORCH_CUDA_ALLOC_CONF", "backend:cudaMallocAsync")

import torch  # noqa: E402


def main():
    if torch.cuda.device_count() < 2:
        print("needs two GPUs, found", torch.cuda.device_count())
        return 1
    torch.backends.cuda.matmul.allow_tf32 = False
    print("allocator backend:", torch.cuda.get_allocator_backend())
    d0, d1 = torch.device("cuda:0"), torch.device("cuda:1")
    s1 = torch.cuda.Stream(device=d1)
    default1 = torch.cuda.default_stream(d1)
    failures = 0
    for round_ in range(20):
        n = 1 << (16 + round_ % 5)
        a = torch.arange(n, device=d0, dtype=torch.int64) * (round_ + 1)
        b = a.to(d1, non_blocking=True)  # device 0 -> device 1
        with torch.cuda.stream(s1):  # computed on a side stream of device 1 ...
            s1.wait_stream(default1)
            c = (b * 3 + 1) % 1000003
        default1.wait_stream(s1)
        c.record_stream(default1)  # ... used (and freed behind) device 1's default stream
        back = c.to(d0)  # device 1 -> device 0
        expected = (a * 3 + 1) % 1000003
        ok = bool(torch.equal(back, expected))
        failures += 0 if ok else 1
        print(f"round {round_}: n={n} sum={int(back.sum())} match={ok}")
        del a, b, c, back, expected
    # Float work split over the devices, gathered on device 0.
    torch.manual_seed(0)
    x = torch.randn(1024, 1024, device=d0, dtype=torch.float64)
    w = torch.randn(1024, 1024, device=d0, dtype=torch.float64)
    halves = [(x[:512].to(d0) @ w.to(d0)), (x[512:].to(d1) @ w.to(d1)).to(d0)]
    y = torch.cat(halves)
    reference = x @ w
    close = bool(torch.allclose(y, reference, rtol=1e-9, atol=1e-9))
    failures += 0 if close else 1
    print(f"split matmul matches: {close}, checksum {float(y.sum()):.6f}")
    for device in (d0, d1):
        torch.cuda.synchronize(device)
        free, total = torch.cuda.mem_get_info(device)
        print(f"# {device}: max_allocated={torch.cuda.max_memory_allocated(device)}"
              f" max_reserved={torch.cuda.max_memory_reserved(device)} used={total - free}")
        torch.cuda.empty_cache()
    print("failures:", failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
