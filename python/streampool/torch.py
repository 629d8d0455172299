"""streampool as PyTorch's CUDA allocator without LD_PRELOAD (a notebook, a managed launcher):

    import torch, streampool.torch
    streampool.torch.use()          # before the first CUDA allocation of the process
    x = torch.randn(1024, device="cuda")
    streampool.torch.memory_stats()  # torch.cuda.memory_stats() raises under a pluggable allocator

PyTorch reaches the library through torch.cuda.memory.CUDAPluggableAllocator with two functions,
allocation and free; its other hooks (record_stream, empty_cache, memory fraction, statistics) are
set only from C++, so from Python: torch.cuda.empty_cache() does nothing, use empty_cache() here;
Tensor.record_stream() protects nothing (docs/pluggable.md says what that means)."""
from . import NotUsable, pluggable

_installed = {"allocator": None}


def _torch():
    try:
        import torch  # pylint: disable=import-outside-toplevel
    except ImportError as error:
        raise NotUsable("streampool.torch.use() needs PyTorch (import torch failed)") from error
    return torch


def use():
    """Makes streampool PyTorch's CUDA allocator: builds a CUDAPluggableAllocator over
    libstreampool_alloc.so and makes it current. Must run before the process's first CUDA
    allocation (PyTorch's rule); raises NotUsable when the library is not found or PyTorch's own
    allocator already served. Calling it again after it succeeded does nothing. Returns the
    allocator."""
    if _installed["allocator"] is not None:
        return _installed["allocator"]
    torch = _torch()
    pluggable.load()
    memory = torch.cuda.memory
    allocator = memory.CUDAPluggableAllocator(pluggable.path(), "streampool_torch_alloc", "streampool_torch_free")
    try:
        memory.change_current_allocator(allocator)
    except RuntimeError as error:
        raise NotUsable("PyTorch's CUDA allocator was already initialised in this process (a CUDA "
                        "tensor was allocated before streampool.torch.use()); call use() before the "
                        f"first CUDA allocation, or start the process under streampool run ({error})") from error
    _installed["allocator"] = allocator
    return allocator


def active():
    """True once use() made streampool PyTorch's allocator in this process."""
    return _installed["allocator"] is not None


def memory_stats():
    """torch.cuda.memory_stats()-style figures from streampool's report."""
    return pluggable.memory_stats()


def empty_cache(device=None):
    """Synchronises the device (PyTorch's current one by default) and returns streampool's unused
    memory to the driver; torch.cuda.empty_cache() cannot reach the pluggable allocator."""
    if device is None:
        device = _torch().cuda.current_device()
    pluggable.empty_cache(device)
