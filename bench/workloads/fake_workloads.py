"""Stands in for torch_workloads.py and jax_workloads.py where there is no GPU (run_all.py
--fake): the same MARK / RESULT lines with made-up figures, so that the orchestration, the
environments, the sampler's bookkeeping and the summary can be checked on any machine. Under the
preload (over the fake driver) it also allocates and frees through the driver API, so the
streampool configurations leave a stats report showing that streampool served them. The figures
mean nothing.

    python3 fake_workloads.py --framework torch|jax --allocator NAME [--smoke] [--scale S]
"""
import ctypes
import os
import sys
import time

import workload_io as io

WORKLOADS = {"torch": ("training", "decode_b1", "decode_b32", "serving"), "jax": ("jax_training",)}


def allocate_through_the_driver():
    """A few pool allocations and frees through whatever libcuda.so.1 the process has (the
    preload, carrying that name). Returns how many pairs were made."""
    cuda = ctypes.CDLL("libcuda.so.1")
    context = ctypes.c_void_p()
    device = ctypes.c_int()
    if (cuda.cuInit(0) or cuda.cuDeviceGet(ctypes.byref(device), 0)
            or cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device) or cuda.cuCtxSetCurrent(context)):
        raise RuntimeError("the fake driver did not start")
    pairs = 0
    for size in (1 << 10, 1 << 20, 3 << 20):
        pointer = ctypes.c_uint64()
        if cuda.cuMemAllocAsync(ctypes.byref(pointer), ctypes.c_size_t(size), None) == 0:
            cuda.cuMemFreeAsync(pointer, None)
            pairs += 1
    cuda.cuCtxSynchronize()
    return pairs


def figures(allocator, workload):
    """Made-up but stable figures: each allocator a fixed factor off the first."""
    factor = 1.0 + (sum(map(ord, allocator)) % 7) / 10.0
    return {"step_time_s": 0.05 * factor, "tokens_per_s": 1000.0 / factor, "time_per_token_s": 0.01 * factor,
            "p99_iteration_s": 0.02 * factor, "device_peak_steps_bytes": int((1 << 28) * factor),
            "workload": workload}


def main(argv):
    parser = io.arguments(__doc__)
    parser.add_argument("--framework", choices=sorted(WORKLOADS), required=True)
    args = parser.parse_args(argv)
    io.result({"workload": "process", "init_s": 0.0, "fake": True})
    if "libstreampool" in os.environ.get("LD_PRELOAD", ""):
        try:
            io.result({"workload": "driver_calls", "pairs": allocate_through_the_driver()})
        except (OSError, RuntimeError) as error:
            io.error("driver_calls", error)
    for workload in WORKLOADS[args.framework]:
        io.mark(workload, "begin")
        time.sleep(0.01)
        io.mark(workload, "end")
        io.result(figures(args.allocator, workload))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
