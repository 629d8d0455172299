"""Per-tensor cost of PyTorch allocations on the default (legacy) stream, with and without a blocking
stream in the process: what the marker streampool's legacy stream takes before reusing its own free
costs a real program (docs/DESIGN.md, "The legacy stream reuses its own frees behind a marker").

    python3 tools/gpu/torch_legacy_pairs.py [--blocking-stream] [--iterations N]

Run it plain and under LD_PRELOAD=libstreampool.so, with PYTORCH_ALLOC_CONF=backend:cudaMallocAsync
(or PyTorch's own allocator for reference). Prints one line: "legacy pairs: <ns> ns per tensor
(blocking stream: yes|no, allocator: <backend>)", the median of five timed rounds.
"""

import argparse
import os
import statistics
import time

import torch


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--blocking-stream", action="store_true",
                        help="create a blocking stream first (cudaStreamCreate with default flags)")
    parser.add_argument("--iterations", type=int, default=20000)
    args = parser.parse_args()
    torch.cuda.init()
    blocking = None
    if args.blocking_stream:
        from cuda.bindings import runtime  # cudaStreamCreate: default flags, a blocking stream
        error, blocking = runtime.cudaStreamCreate()
        if error != runtime.cudaError_t.cudaSuccess:
            raise SystemExit(f"cudaStreamCreate: {error}")
    sizes = (1 << 20, 1 << 16, 1 << 12)  # elements of float32: 4 MiB, 256 KiB, 16 KiB
    for size in sizes:  # warm up: the pool holds each size once
        torch.empty(size, device="cuda")
    torch.cuda.synchronize()
    rounds = []
    for _ in range(5):
        started = time.perf_counter_ns()
        for i in range(args.iterations):
            tensor = torch.empty(sizes[i % len(sizes)], device="cuda")
            del tensor
        torch.cuda.synchronize()
        rounds.append((time.perf_counter_ns() - started) / args.iterations)
    backend = torch.cuda.memory.get_allocator_backend()
    print(f"legacy pairs: {statistics.median(rounds):.0f} ns per tensor (blocking stream: "
          f"{'yes' if blocking is not None else 'no'}, allocator: {backend}, "
          f"preload: {'streampool' if 'libstreampool' in os.environ.get('LD_PRELOAD', '') else 'none'})")


if __name__ == "__main__":
    main()
