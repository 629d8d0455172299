"""The device's used memory as NVML counts it (total - free: every allocation of every process on
the device, whichever allocator made it), through ctypes on the driver's libnvidia-ml.so.1, so
that no package is needed and no CUDA context is made. run_all.py samples it from outside the
workload processes (Sampler); jax_workloads.py reads it at step boundaries, where PyTorch has
torch.cuda.mem_get_info. Every function answers None where NVML cannot be used (no driver, a
sandbox without it), and the callers then go without the figure."""
import ctypes
import os
import threading
import time


class _Memory(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]


class Nvml:
    """One device's memory through NVML; index: the NVML index of CUDA's first visible device."""

    def __init__(self, index=None):
        self.device = None
        self.error = None
        try:
            self.library = ctypes.CDLL("libnvidia-ml.so.1")
            if self.library.nvmlInit_v2() != 0:
                raise OSError("nvmlInit_v2 failed")
            handle = ctypes.c_void_p()
            if self.library.nvmlDeviceGetHandleByIndex_v2(ctypes.c_uint(_first_visible(index)), ctypes.byref(handle)) != 0:
                raise OSError("nvmlDeviceGetHandleByIndex_v2 failed")
            self.device = handle
            if self.used() is None:
                raise OSError("nvmlDeviceGetMemoryInfo failed")
        except (OSError, AttributeError) as error:
            self.device = None
            self.error = str(error)

    def used(self):
        if self.device is None:
            return None
        memory = _Memory()
        if self.library.nvmlDeviceGetMemoryInfo(self.device, ctypes.byref(memory)) != 0:
            return None
        return memory.total - memory.free


def _first_visible(index):
    if index is not None:
        return index
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    return int(visible) if visible.isdigit() else 0


class Sampler:
    """A thread sampling used memory every interval_s into (time.monotonic(), bytes) pairs; the
    workload processes mark their phases on the same clock. peak(begin, end) is the highest
    sample inside the span minus the last sample before it (the settled start)."""

    def __init__(self, nvml, interval_s=0.002):
        self.nvml = nvml
        self.interval_s = interval_s
        self.samples = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.thread = None

    def start(self):
        if self.nvml.device is None or self.thread is not None:
            return
        self.thread = threading.Thread(target=self._run, name="nvml-sampler", daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stopping.is_set():
            used = self.nvml.used()
            if used is not None:
                with self.lock:
                    self.samples.append((time.monotonic(), used))
            self.stopping.wait(self.interval_s)

    def stop(self):
        self.stopping.set()
        if self.thread is not None:
            self.thread.join()
            self.thread = None

    def take(self):
        """The samples so far, which are then forgotten (one process's worth at a time)."""
        with self.lock:
            samples, self.samples = self.samples, []
        return samples


def peak_in(samples, begin, end):
    """(peak - start, number of samples inside) for a span, or (None, 0) without samples both
    before and inside it."""
    before = [used for t, used in samples if t < begin]
    inside = [used for t, used in samples if begin <= t <= end]
    if not before or not inside:
        return None, len(inside)
    return max(inside) - before[-1], len(inside)
