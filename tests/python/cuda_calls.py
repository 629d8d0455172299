"""Driver calls through ctypes, for tests that need a program allocating through streampool: run
under LD_PRELOAD=libstreampool.so with STREAMPOOL_LIBCUDA naming the fake driver. Standard library
only.

As a program (`python3 cuda_calls.py`): two streams handing blocks over with an event, a failed
allocation (more than the device has), a trim, and two allocations still live at exit, the
pattern the exporters' tests read back. `python3 cuda_calls.py many`: 3000 allocations of sizes
from 512 B to 24 MiB on three streams after a quiet start, for looking at plots. `python3
cuda_calls.py reuse`: 20 MiB freed on one stream, then asked for on another with no event between
(replayed at a 32 MiB cap, the engine can only serve it by making the second stream wait)."""
import ctypes
import random
import sys
import time

GiB = 1 << 30
MiB = 1 << 20
CUDA_ERROR_OUT_OF_MEMORY = 2


class Driver:
    def __init__(self):
        self.lib = ctypes.CDLL("libcuda.so.1")  # the preload library: it carries that SONAME
        self.check(self.lib.cuInit(0), "cuInit")
        device = ctypes.c_int()
        self.check(self.lib.cuDeviceGet(ctypes.byref(device), 0), "cuDeviceGet")
        context = ctypes.c_void_p()
        self.check(self.lib.cuDevicePrimaryCtxRetain(ctypes.byref(context), device), "cuDevicePrimaryCtxRetain")
        self.check(self.lib.cuCtxSetCurrent(context), "cuCtxSetCurrent")
        self.device = device

    @staticmethod
    def check(result, what):
        if result != 0:
            raise RuntimeError(f"{what}: CUresult {result}")

    def stream(self):
        stream = ctypes.c_void_p()
        self.check(self.lib.cuStreamCreate(ctypes.byref(stream), 1), "cuStreamCreate")
        return stream

    def alloc(self, size, stream):
        pointer = ctypes.c_uint64()
        result = self.lib.cuMemAllocAsync(ctypes.byref(pointer), ctypes.c_size_t(size), stream)
        return pointer.value if result == 0 else -result

    def free(self, pointer, stream):
        self.check(self.lib.cuMemFreeAsync(ctypes.c_uint64(pointer), stream), "cuMemFreeAsync")

    def event(self):
        event = ctypes.c_void_p()
        self.check(self.lib.cuEventCreate(ctypes.byref(event), 0), "cuEventCreate")
        return event

    def synchronize(self, stream):
        self.check(self.lib.cuStreamSynchronize(stream), "cuStreamSynchronize")

    def default_pool(self):
        pool = ctypes.c_void_p()
        self.check(self.lib.cuDeviceGetDefaultMemPool(ctypes.byref(pool), self.device), "cuDeviceGetDefaultMemPool")
        return pool


def handover_program():
    cuda = Driver()
    producer, consumer = cuda.stream(), cuda.stream()
    blocks = [cuda.alloc(3 * MiB + 100, producer) for _ in range(4)]
    handed_over = cuda.event()
    cuda.check(cuda.lib.cuEventRecord(handed_over, producer), "cuEventRecord")
    cuda.check(cuda.lib.cuStreamWaitEvent(consumer, handed_over, 0), "cuStreamWaitEvent")
    for pointer in blocks:
        cuda.free(pointer, consumer)
    too_large = cuda.alloc(1 << 50, consumer)
    assert too_large == -CUDA_ERROR_OUT_OF_MEMORY, too_large
    cuda.synchronize(consumer)
    cuda.check(cuda.lib.cuMemPoolTrimTo(cuda.default_pool(), ctypes.c_size_t(0)), "cuMemPoolTrimTo")
    kept = [cuda.alloc(5 * MiB, producer), cuda.alloc(700, consumer)]  # live at exit
    assert all(pointer > 0 for pointer in kept), kept
    cuda.synchronize(producer)
    cuda.synchronize(consumer)


def many_program():
    cuda = Driver()
    streams = [cuda.stream() for _ in range(3)]
    rng = random.Random(3)
    live = []
    time.sleep(0.05)  # a quiet start, as a program's set-up has
    for step in range(3000):
        stream = streams[step % 3] if step % 7 else streams[0]
        size = rng.choice([512, 4096, 65536, MiB, 3 * MiB, 8 * MiB, 24 * MiB])
        live.append((cuda.alloc(size, stream), stream))
        if len(live) > 40 or rng.random() < 0.45:
            pointer, owner = live.pop(rng.randrange(len(live)))
            cuda.free(pointer, owner)
        if step % 500 == 499:
            for each in streams:
                cuda.synchronize(each)
    for pointer, owner in live[:-5]:
        cuda.free(pointer, owner)
    for each in streams:
        cuda.synchronize(each)
    time.sleep(0.05)


def reuse_program():
    cuda = Driver()
    first, second = cuda.stream(), cuda.stream()
    pointer = cuda.alloc(20 * MiB, first)
    cuda.free(pointer, first)
    again = cuda.alloc(20 * MiB, second)
    cuda.free(again, second)
    cuda.synchronize(first)
    cuda.synchronize(second)


def late_program():
    # One allocation at start-up, then a long quiet stretch, then the work: as a framework's
    # initialisation, seconds before its training loop, looks in a trace.
    cuda = Driver()
    stream = cuda.stream()
    kept = cuda.alloc(MiB, stream)
    time.sleep(0.4)
    for step in range(200):
        pointer = cuda.alloc((1 + step % 5) * MiB, stream)
        cuda.free(pointer, stream)
    cuda.free(kept, stream)
    cuda.synchronize(stream)


if __name__ == "__main__":
    programs = {"many": many_program, "reuse": reuse_program, "late": late_program}
    programs.get(" ".join(sys.argv[1:]), handover_program)()
    sys.exit(0)
