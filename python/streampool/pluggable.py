"""The pluggable allocator library (libstreampool_alloc.so) for processes that cannot be started
under LD_PRELOAD: found, loaded once, and made the library the rest of the package talks to.

Where it is looked for, first found wins:
  $STREAMPOOL_LIBRARY                      the file itself
  beside this package                      streampool/libstreampool_alloc.so
  beside the streampool command            <bin>/../lib/streampool/ (an installation),
                                           <build>/pluggable/ (a build tree, bin being <build>/cli)
  the usual prefixes                       /usr/local/lib/streampool, /usr/lib/streampool
"""
import ctypes
import os
import shutil

from . import NotUsable, _state

LIBRARY_NAME = "libstreampool_alloc.so"


def _candidates():
    explicit = os.environ.get("STREAMPOOL_LIBRARY")
    if explicit:
        return [explicit]  # an explicit choice that is wrong must fail, not fall back elsewhere
    here = os.path.dirname(os.path.abspath(__file__))
    found = [os.path.join(here, LIBRARY_NAME)]
    command = os.environ.get("STREAMPOOL_COMMAND") or shutil.which("streampool")
    if command:
        bin_folder = os.path.dirname(os.path.realpath(command))
        found.append(os.path.join(bin_folder, "..", "lib", "streampool", LIBRARY_NAME))
        found.append(os.path.join(bin_folder, "..", "pluggable", LIBRARY_NAME))
    found += [os.path.join(prefix, "lib", "streampool", LIBRARY_NAME) for prefix in ("/usr/local", "/usr")]
    return found


def path():
    """The library's absolute path; NotUsable when it is not found."""
    candidates = _candidates()
    for candidate in candidates:
        if os.path.isfile(candidate):
            return os.path.realpath(candidate)
    raise NotUsable(f"{LIBRARY_NAME} was not found (looked at {', '.join(candidates)}); "
                    "set STREAMPOOL_LIBRARY to its path")


def load():
    """Loads the library (once) and returns it as a ctypes.CDLL with its entry points typed."""
    if _state["library"] is not None:
        return _state["library"]
    library = ctypes.CDLL(path())  # RTLD_LOCAL, as PyTorch opens it: nothing of it is interposed
    library.streampool_torch_alloc.restype = ctypes.c_void_p
    library.streampool_torch_alloc.argtypes = [ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]
    library.streampool_torch_free.restype = None
    library.streampool_torch_free.argtypes = [ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]
    library.streampool_cupy_malloc.restype = ctypes.c_void_p
    library.streampool_cupy_malloc.argtypes = [ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p]
    library.streampool_cupy_free.restype = None
    library.streampool_cupy_free.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
    library.streampool_empty_cache.restype = ctypes.c_int
    library.streampool_empty_cache.argtypes = [ctypes.c_int]
    _state["library"] = library
    return library


def empty_cache(device):
    """Waits for the device's work (a synchronisation streampool sees: every free so far becomes
    reusable by every stream), then gives the device pool's unused memory back. Blocks."""
    if load().streampool_empty_cache(int(device)) != 0:
        raise RuntimeError(f"streampool_empty_cache({device}) failed")


def memory_stats():
    """torch.cuda.memory_stats()-style figures from streampool's report (the pluggable allocator
    has no statistics of PyTorch's own): allocated and reserved bytes now and at the peak, and the
    allocation and free call counts."""
    from . import stats  # pylint: disable=import-outside-toplevel
    report = stats()
    totals = report.get("totals", {})
    served = report.get("served", {})
    return {
        "allocated_bytes.all.current": totals.get("used_current", 0),
        "allocated_bytes.all.peak": totals.get("used_high", 0),
        "reserved_bytes.all.current": totals.get("reserved_current", 0),
        "reserved_bytes.all.peak": totals.get("reserved_high", 0),
        "allocation.all.allocated": served.get("allocations", 0),
        "allocation.all.freed": served.get("frees", 0),
    }
