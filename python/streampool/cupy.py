"""streampool as CuPy's allocator without LD_PRELOAD:

    import cupy, streampool.cupy
    streampool.cupy.use()
    a = cupy.arange(10)

Each allocation is made in the order of CuPy's current stream and freed in the order of that same
stream (as CuPy's stream-ordered allocator does), through libstreampool_alloc.so by ctypes."""
import threading

from . import NotUsable, pluggable

_installed = {"allocator": None}


def _cupy():
    try:
        import cupy  # pylint: disable=import-outside-toplevel
    except ImportError as error:
        raise NotUsable("streampool.cupy.use() needs CuPy (import cupy failed)") from error
    return cupy


class Allocator:
    """CuPy's PythonFunctionAllocator over streampool: remembers each pointer's stream for its free."""

    def __init__(self, cupy, library):
        self._cupy = cupy
        self._library = library
        self._streams = {}
        self._lock = threading.Lock()

    def malloc(self, size, device):
        # The stream object itself is kept with the pointer, not only its handle: a CuPy stream
        # destroyed while a block of it is live would leave the free a dead handle, which NVIDIA's
        # driver does not survive (the process ended in a segfault at exit on the GPU box). Kept,
        # the stream lives until its last block is freed.
        current = self._cupy.cuda.get_current_stream()
        stream = current.ptr
        pointer = self._library.streampool_cupy_malloc(size, device, stream)
        if not pointer:
            if size == 0:
                return 0
            raise self._cupy.cuda.memory.OutOfMemoryError(size, 0, 0)
        with self._lock:
            self._streams[pointer] = current
        return pointer

    def free(self, pointer, device):
        if not pointer:
            return
        with self._lock:
            current = self._streams.pop(pointer, None)
        self._library.streampool_cupy_free(pointer, device, current.ptr if current is not None else 0)


def use():
    """Makes streampool CuPy's allocator (cupy.cuda.set_allocator). Memory CuPy's pool already holds
    stays with it. Returns the allocator. Calling it again makes the same allocator current again:
    CuPy lets any code set another one in between (its own test suite does, and restores its pool),
    and blocks streampool gave out stay freed through the allocator that gave them."""
    cupy = _cupy()
    if _installed["allocator"] is None:
        allocator = Allocator(cupy, pluggable.load())
        function_allocator = cupy.cuda.PythonFunctionAllocator(allocator.malloc, allocator.free)
        _installed["allocator"] = (allocator, function_allocator)
    allocator, function_allocator = _installed["allocator"]
    cupy.cuda.set_allocator(function_allocator.malloc)
    return allocator


def active():
    """True while streampool is CuPy's current allocator."""
    if _installed["allocator"] is None:
        return False
    return _cupy().cuda.get_allocator() == _installed["allocator"][1].malloc


def empty_cache(device=None):
    """Synchronises the device (CuPy's current one by default) and returns streampool's unused memory."""
    if device is None:
        device = _cupy().cuda.Device().id
    pluggable.empty_cache(device)


def memory_stats():
    """torch.cuda.memory_stats()-style figures from streampool's report."""
    return pluggable.memory_stats()
