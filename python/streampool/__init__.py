"""streampool from Python: pure Python over streampool's C interface (<streampool/streampool.h>)
with ctypes, no compiled extension.

The functions find streampool in the running process (LD_PRELOAD=libstreampool.so, or `streampool
run`), or the pluggable allocator library once streampool.torch.use() or streampool.cupy.use() (or
streampool.pluggable.load()) loaded it; without either, active() is False and the others raise
NotLoaded.

    import streampool
    if streampool.active():
        print(streampool.stats()["totals"])
    with streampool.trace("train.trace") as t:    # record this part of the program
        train_step()
    streampool.export_torch_snapshot("snap.pickle", trace=t.path)  # for torch.cuda._memory_viz
"""
import contextlib
import ctypes
import errno
import json
import os
import shutil
import subprocess

__all__ = ["NotLoaded", "NotUsable", "active", "version", "stats", "trace", "trace_flush", "current_trace",
           "export_torch_snapshot", "export_perfetto", "oom_report"]


class NotLoaded(RuntimeError):
    """streampool does not serve this process (libstreampool.so is not loaded)."""


class NotUsable(RuntimeError):
    """streampool's pluggable allocator cannot be installed here (streampool.torch.use(),
    streampool.cupy.use()): the library was not found, or the framework already allocated."""


_state = {"trace": None,    # the path of the trace trace() started, while it records
          "library": None}  # the pluggable allocator library (a ctypes.CDLL), once loaded


def _symbol(name):
    """A function of streampool's C interface: the pluggable library's once loaded (PyTorch and
    ctypes open it RTLD_LOCAL, out of the global scope), else the process's global scope; or None."""
    scopes = [] if _state["library"] is None else [_state["library"]]
    scopes.append(ctypes.CDLL(None))
    for scope in scopes:
        try:
            return getattr(scope, name)
        except AttributeError:
            continue
    return None


def _need(name, restype, argtypes):
    function = _symbol(name)
    if function is None:
        raise NotLoaded(f"streampool is not loaded in this process (no {name}); run the program with "
                        "LD_PRELOAD=libstreampool.so or under `streampool run`")
    function.restype = restype
    function.argtypes = argtypes
    return function


def active():
    """True when streampool serves this process's stream-ordered allocations."""
    function = _symbol("streampool_active")
    if function is None:
        return False
    function.restype = ctypes.c_int
    function.argtypes = []
    return function() == 1


def version():
    """The library's version, "MAJOR.MINOR.PATCH"."""
    return _need("streampool_version", ctypes.c_char_p, [])().decode()


def _json_report(name):
    """A JSON report of the C interface (snprintf's contract: the length asked with no buffer, then
    filled) as a dict."""
    report = _need(name, ctypes.c_int, [ctypes.c_char_p, ctypes.c_size_t])
    for _ in range(4):  # the report may grow between the two calls
        length = report(None, 0)
        if length < 0:
            raise RuntimeError(f"{name} failed")
        buffer = ctypes.create_string_buffer(length + 256)
        written = report(buffer, len(buffer))
        if 0 <= written < len(buffer):
            return json.loads(buffer.value.decode())
    raise RuntimeError(f"{name}: the report kept growing")


def stats():
    """The statistics report (the JSON STREAMPOOL_STATS writes at exit) as a dict: "pools" (each
    pool's reserved and used bytes, now and at the peak), "totals", "calls", "served"."""
    return _json_report("streampool_stats_json")


def leaks():
    """The leak report (STREAMPOOL_LEAKS=1) as a dict, from streampool_leak_report: "live" (allocations,
    bytes, sites), "sites" (live allocations grouped by call site, most bytes first, each with its
    "frames"), "other_sites", "bad_frees" (counted by kind) and "bad_free_events". "enabled" is False
    when the mode is off."""
    return _json_report("streampool_leak_report")


def _expand(path):
    """The trace path as the recorder names the file: %p the process id, %% a percent sign."""
    out = []
    i = 0
    while i < len(path):
        if path[i] == "%" and i + 1 < len(path) and path[i + 1] in "p%":
            out.append(str(os.getpid()) if path[i + 1] == "p" else "%")
            i += 2
        else:
            out.append(path[i])
            i += 1
    return "".join(out)


class Trace:
    """A trace trace() records: `path` is the file (with %p expanded)."""

    def __init__(self, path):
        self.path = path

    def export_torch_snapshot(self, output):
        return export_torch_snapshot(output, trace=self.path)

    def export_perfetto(self, output):
        return export_perfetto(output, trace=self.path)


@contextlib.contextmanager
def trace(path):
    """Records every allocator and ordering call into `path` while the block runs
    (streampool_trace_start / streampool_trace_stop). Raises OSError when a trace is already
    recording (EBUSY: STREAMPOOL_TRACE starts one at the first CUDA call) or the file cannot be
    written."""
    start = _need("streampool_trace_start", ctypes.c_int, [ctypes.c_char_p])
    stop = _need("streampool_trace_stop", ctypes.c_int, [])
    result = start(os.fsencode(path))
    if result != 0:
        raise OSError(result, f"streampool_trace_start: {os.strerror(result)}", path)
    recording = Trace(_expand(path))
    _state["trace"] = recording.path
    try:
        yield recording
    finally:
        _state["trace"] = None
        stop()


def trace_flush():
    """Writes every thread's buffered trace events to the file; False when no trace is recording."""
    return _need("streampool_trace_flush", ctypes.c_int, [])() == 0


def current_trace():
    """The path of the trace being recorded (by trace() or STREAMPOOL_TRACE), or None."""
    if _state["trace"] is not None:
        return _state["trace"]
    path = stats().get("served", {}).get("trace", "")
    return path or None


def _library_path():
    """Where the loaded libstreampool.so lives (dladdr of one of its functions)."""
    function = _symbol("streampool_version")
    if function is None:
        return None

    class DlInfo(ctypes.Structure):
        _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                    ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]

    info = DlInfo()
    dladdr = _symbol("dladdr")
    if dladdr is None or dladdr(ctypes.cast(function, ctypes.c_void_p), ctypes.byref(info)) == 0 or not info.dli_fname:
        return None
    return os.path.realpath(os.fsdecode(info.dli_fname))


def _command():
    """The streampool command: $STREAMPOOL_COMMAND, beside the library (a build tree's bin/, an
    installation's bin/), or on PATH."""
    explicit = os.environ.get("STREAMPOOL_COMMAND")
    if explicit:
        return explicit
    library = _library_path()
    if library:
        folder = os.path.dirname(library)
        for candidate in (os.path.join(folder, "..", "bin", "streampool"),
                          os.path.join(folder, "..", "..", "bin", "streampool")):
            if os.access(candidate, os.X_OK):
                return os.path.normpath(candidate)
    found = shutil.which("streampool")
    if found:
        return found
    raise FileNotFoundError(errno.ENOENT, "the streampool command was not found (set STREAMPOOL_COMMAND)")


def _export(output, fmt, trace_path):
    source = trace_path or current_trace()
    if source is None:
        raise RuntimeError("no trace: record one with streampool.trace(path) or STREAMPOOL_TRACE, or pass trace=")
    if _symbol("streampool_trace_flush") is not None:
        trace_flush()  # what the threads have buffered so far goes into the file first
    result = subprocess.run([_command(), "export", source, "--format", fmt, "-o", os.fspath(output)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(result.stderr.strip() or f"streampool export exited with {result.returncode}")
    return os.fspath(output)


def export_torch_snapshot(output, trace=None):  # pylint: disable=redefined-outer-name
    """Writes the trace (by default the one recording now) as PyTorch's memory snapshot, for
    `python -m torch.cuda._memory_viz trace_plot OUTPUT -o out.html`. Returns `output`."""
    return _export(output, "torch-snapshot", trace)


def export_perfetto(output, trace=None):  # pylint: disable=redefined-outer-name
    """Writes the trace as a Perfetto / Chrome JSON trace (ui.perfetto.dev). Returns `output`."""
    return _export(output, "perfetto", trace)


def oom_report():
    """The report of the last allocation that failed for lack of memory, as a dict (the JSON of
    streampool_oom_report: the request, the cap, the device's free memory, each pool's figures,
    the largest live allocations, "cause" and "explanation"), or None while no allocation has
    failed (or where the loaded streampool is older than this function)."""
    report = _symbol("streampool_oom_report")
    if report is None:
        if _symbol("streampool_active") is None:
            raise NotLoaded("streampool is not loaded in this process")
        return None
    report.restype = ctypes.c_int
    report.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    length = report(None, 0)
    if length <= 0:
        return None
    buffer = ctypes.create_string_buffer(length + 1)
    report(buffer, len(buffer))
    return json.loads(buffer.value.decode()) if buffer.value else None
