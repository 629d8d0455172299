"""The allocators compared, and the environment each workload process starts with.

Every process starts from the caller's environment with every setting below removed, then gets
exactly its allocator's settings: nothing one configuration sets leaks into another.

PyTorch (torch_workloads.py):
  native            PyTorch's caching allocator, no PYTORCH_CUDA_ALLOC_CONF
  expandable        PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
  nvidia-pool       PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync (NVIDIA's stream-ordered pool)
  streampool        the same, with LD_PRELOAD=libstreampool.so serving the pool
  streampool-pluggable  (only with --pluggable) streampool.torch.use(): libstreampool_alloc.so
                    as PyTorch's pluggable allocator, no preload
JAX (jax_workloads.py), all with XLA_PYTHON_CLIENT_PREALLOCATE=false (no up-front 75% of the
device for BFC, and no preallocated pool for cuda_async: each grows as the program asks) and no
memory fraction set:
  bfc               XLA's default BFC allocator (XLA_PYTHON_CLIENT_ALLOCATOR unset)
  cuda_async        XLA_PYTHON_CLIENT_ALLOCATOR=cuda_async (cuMemAllocFromPoolAsync on NVIDIA's pool)
  streampool        the same, with LD_PRELOAD=libstreampool.so
"""
import collections
import os

Allocator = collections.namedtuple("Allocator", "framework name settings preload pluggable")

# Removed from every process's environment before its own settings are added.
CLEARED = ("LD_PRELOAD", "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF", "XLA_PYTHON_CLIENT_ALLOCATOR",
           "XLA_PYTHON_CLIENT_PREALLOCATE", "XLA_PYTHON_CLIENT_MEM_FRACTION", "XLA_CLIENT_MEM_FRACTION",
           "STREAMPOOL_LIBRARY")
CLEARED_PREFIX = "STREAMPOOL_"

_ASYNC_BACKEND = {"PYTORCH_CUDA_ALLOC_CONF": "backend:cudaMallocAsync"}
_JAX_COMMON = {"XLA_PYTHON_CLIENT_PREALLOCATE": "false"}

TORCH = (
    Allocator("torch", "native", {}, False, False),
    Allocator("torch", "expandable", {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}, False, False),
    Allocator("torch", "nvidia-pool", _ASYNC_BACKEND, False, False),
    Allocator("torch", "streampool", _ASYNC_BACKEND, True, False),
)
TORCH_PLUGGABLE = Allocator("torch", "streampool-pluggable", {}, False, True)
JAX = (
    Allocator("jax", "bfc", _JAX_COMMON, False, False),
    Allocator("jax", "cuda_async", dict(_JAX_COMMON, XLA_PYTHON_CLIENT_ALLOCATOR="cuda_async"), False, False),
    Allocator("jax", "streampool", dict(_JAX_COMMON, XLA_PYTHON_CLIENT_ALLOCATOR="cuda_async"), True, False),
)


def torch_allocators(pluggable):
    return TORCH + ((TORCH_PLUGGABLE,) if pluggable else ())


def rotated(allocators, round_index):
    """Round r starts with the r-th allocator (A B C D, then B C D A, ...), so that no allocator
    always runs first on a cold machine or last on a warm one."""
    shift = round_index % len(allocators)
    return tuple(allocators[shift:]) + tuple(allocators[:shift])


class Paths(collections.namedtuple("Paths", "preload pluggable python_package fake_driver")):
    """preload: libstreampool.so; pluggable: libstreampool_alloc.so; python_package: the folder
    holding the streampool package; fake_driver: the fake libcuda.so.1 to put under the preload
    (a dry run without a GPU), or None for NVIDIA's driver."""


def environment(allocator, paths, base, stats_path=None, trace_path=None, streampool_settings=None):
    """The environment of one workload process; streampool_settings (a dict, e.g.
    {"STREAMPOOL_RELEASE": "auto"}) go to streampool's configurations alone."""
    env = {key: value for key, value in base.items()
           if key not in CLEARED and not key.startswith(CLEARED_PREFIX)}
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # nothing written into the source tree
    env.update(allocator.settings)
    if allocator.preload:
        env["LD_PRELOAD"] = paths.preload
        if paths.fake_driver:
            env["STREAMPOOL_LIBCUDA"] = paths.fake_driver
        if stats_path:
            env["STREAMPOOL_STATS"] = stats_path
        if trace_path:
            env["STREAMPOOL_TRACE"] = trace_path
    if allocator.preload or allocator.pluggable:
        env.update(streampool_settings or {})
    if allocator.pluggable:
        env["STREAMPOOL_LIBRARY"] = paths.pluggable
        env["PYTHONPATH"] = os.pathsep.join(p for p in (paths.python_package, base.get("PYTHONPATH")) if p)
    return env


def described(allocator):
    """What a reader needs to know of a configuration, as one line."""
    parts = ["%s=%s" % item for item in sorted(allocator.settings.items())]
    if allocator.preload:
        parts.append("LD_PRELOAD=libstreampool.so")
    if allocator.pluggable:
        parts.append("streampool.torch.use() (libstreampool_alloc.so)")
    return " ".join(parts) or "(nothing set)"
