"""libstreampool_alloc.so as PyTorch and CuPy load it: with ctypes (RTLD_LOCAL), in a process whose
driver is the fake one loaded as NVIDIA's would be (not streampool: no LD_PRELOAD), through
python/streampool. torch and cupy are stand-ins here that take the calls the real ones make
(tools/gpu/pluggable_check.sh runs the real ones). Standard library only; STREAMPOOL_LIBCUDA names
the fake driver and STREAMPOOL_LIBRARY the library (CMakeLists.txt)."""
import ctypes
import os
import subprocess
import sys
import types
import unittest

import streampool
import streampool.cupy
import streampool.pluggable
import streampool.torch

MiB = 1 << 20


class FakeDriver:
    """The program's own driver calls, made on the driver the process loaded (never through streampool)."""

    def __init__(self):
        self.lib = ctypes.CDLL(os.environ["STREAMPOOL_LIBCUDA"])
        self.check(self.lib.cuInit(0), "cuInit")
        device = ctypes.c_int()
        self.check(self.lib.cuDeviceGet(ctypes.byref(device), 0), "cuDeviceGet")
        context = ctypes.c_void_p()
        self.check(self.lib.cuDevicePrimaryCtxRetain(ctypes.byref(context), device), "cuDevicePrimaryCtxRetain")
        self.check(self.lib.cuCtxSetCurrent(context), "cuCtxSetCurrent")

    @staticmethod
    def check(result, what):
        if result != 0:
            raise RuntimeError(f"{what}: CUresult {result}")

    def stream(self):
        stream = ctypes.c_void_p()
        self.check(self.lib.cuStreamCreate(ctypes.byref(stream), 1), "cuStreamCreate")
        return stream.value


def entry_point(library, name, restype, argtypes):
    """The function as PyTorch's CUDAPluggableAllocator takes it: an address, called through a prototype."""
    address = ctypes.cast(getattr(library, name), ctypes.c_void_p).value
    return ctypes.CFUNCTYPE(restype, *argtypes)(address)


class FakeTorch:
    """torch.cuda.memory's pluggable-allocator calls, recording what streampool.torch.use() asks."""

    def __init__(self, initialized=False):
        self.made = []
        self.current = None
        self.initialized = initialized
        memory = types.SimpleNamespace(CUDAPluggableAllocator=self.make, change_current_allocator=self.change)
        self.module = types.SimpleNamespace(cuda=types.SimpleNamespace(memory=memory, current_device=lambda: 0))

    def make(self, path, alloc_name, free_name):
        library = ctypes.CDLL(path)
        allocator = types.SimpleNamespace(
            path=path,
            alloc=entry_point(library, alloc_name, ctypes.c_void_p, [ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]),
            free=entry_point(library, free_name, None, [ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]))
        self.made.append(allocator)
        return allocator

    def change(self, allocator):
        if self.initialized:
            raise RuntimeError("Can't swap an already initialized allocator")
        self.current = allocator


class FakeCupy:
    """cupy.cuda's allocator calls: set_allocator, PythonFunctionAllocator, the current stream."""

    def __init__(self, stream):
        self.allocator = None
        self.stream = stream

        class OutOfMemoryError(Exception):
            pass

        class PythonFunctionAllocator:  # pylint: disable=too-few-public-methods
            def __init__(self, malloc_func, free_func):
                self.malloc_func = malloc_func
                self.free_func = free_func

            def malloc(self, size):
                return self.malloc_func(size, 0)

        memory = types.SimpleNamespace(OutOfMemoryError=OutOfMemoryError)
        cuda = types.SimpleNamespace(PythonFunctionAllocator=PythonFunctionAllocator, memory=memory,
                                     set_allocator=self.set_allocator, get_allocator=lambda: self.allocator,
                                     get_current_stream=lambda: types.SimpleNamespace(ptr=self.stream))
        self.module = types.SimpleNamespace(cuda=cuda)

    def set_allocator(self, allocator):
        self.allocator = allocator


class Pluggable(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.driver = FakeDriver()
        cls.library = streampool.pluggable.load()

    def setUp(self):
        streampool.torch._installed["allocator"] = None  # pylint: disable=protected-access
        streampool.cupy._installed["allocator"] = None  # pylint: disable=protected-access

    def tearDown(self):
        sys.modules.pop("torch", None)
        sys.modules.pop("cupy", None)

    def test_the_package_talks_to_the_loaded_library(self):
        self.assertTrue(streampool.active())
        self.assertRegex(streampool.version(), r"^\d+\.\d+\.\d+$")
        self.assertIn("totals", streampool.stats())

    def test_library_interposes_nothing(self):
        for name in ("cuMemAllocAsync", "cuMemFreeAsync", "cuInit", "cudaMallocAsync"):
            self.assertFalse(hasattr(self.library, name), name)
            self.assertFalse(hasattr(ctypes.CDLL(None), name), name)

    def test_torch_entry_points_allocate_reuse_and_count(self):
        stream = self.driver.stream()
        alloc = entry_point(self.library, "streampool_torch_alloc", ctypes.c_void_p,
                            [ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p])
        free = entry_point(self.library, "streampool_torch_free", None,
                           [ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p])
        before = streampool.pluggable.memory_stats()
        block = alloc(3 * MiB, 0, stream)
        self.assertTrue(block)
        during = streampool.pluggable.memory_stats()
        self.assertEqual(during["allocated_bytes.all.current"] - before["allocated_bytes.all.current"], 3 * MiB)
        self.assertGreaterEqual(during["reserved_bytes.all.current"], 3 * MiB)
        self.assertEqual(during["allocation.all.allocated"] - before["allocation.all.allocated"], 1)
        free(block, 3 * MiB, 0, stream)
        self.assertEqual(alloc(3 * MiB, 0, stream), block)  # same stream: at once
        free(block, 3 * MiB, 0, stream)
        after = streampool.pluggable.memory_stats()
        self.assertEqual(after["allocated_bytes.all.current"], before["allocated_bytes.all.current"])
        self.assertEqual(after["allocation.all.freed"] - before["allocation.all.freed"], 2)

    def test_torch_use_builds_the_pluggable_allocator_and_makes_it_current(self):
        torch = FakeTorch()
        sys.modules["torch"] = torch.module
        allocator = streampool.torch.use()
        self.assertIs(torch.current, allocator)
        self.assertEqual(allocator.path, os.path.realpath(os.environ["STREAMPOOL_LIBRARY"]))
        self.assertTrue(streampool.torch.active())
        self.assertIs(streampool.torch.use(), allocator)  # once only
        self.assertEqual(len(torch.made), 1)
        stream = self.driver.stream()
        block = allocator.alloc(MiB, 0, stream)
        self.assertTrue(block)
        allocator.free(block, MiB, 0, stream)

    def test_torch_use_after_cuda_allocated_raises_a_clear_error(self):
        sys.modules["torch"] = FakeTorch(initialized=True).module
        with self.assertRaisesRegex(streampool.NotUsable, "before the first CUDA allocation"):
            streampool.torch.use()
        self.assertFalse(streampool.torch.active())

    def test_cupy_use_allocates_on_the_current_stream_and_frees_there(self):
        stream = self.driver.stream()
        cupy = FakeCupy(stream)
        sys.modules["cupy"] = cupy.module
        allocator = streampool.cupy.use()
        self.assertIsNotNone(cupy.allocator)
        before = streampool.pluggable.memory_stats()["allocated_bytes.all.current"]
        pointer = allocator.malloc(2 * MiB, 0)
        self.assertTrue(pointer)
        self.assertEqual(streampool.pluggable.memory_stats()["allocated_bytes.all.current"] - before, 2 * MiB)
        cupy.stream = self.driver.stream()  # the current stream changed: the free still goes to the first
        allocator.free(pointer, 0)
        self.assertEqual(streampool.pluggable.memory_stats()["allocated_bytes.all.current"], before)
        cupy.stream = stream
        self.assertEqual(allocator.malloc(2 * MiB, 0), pointer)  # freed on `stream`: reused there at once
        allocator.free(pointer, 0)

    def test_cupy_use_again_makes_streampool_current_again(self):
        cupy = FakeCupy(self.driver.stream())
        sys.modules["cupy"] = cupy.module
        allocator = streampool.cupy.use()
        self.assertTrue(streampool.cupy.active())
        cupy.set_allocator(lambda size: 0)  # a program (or CuPy's tests) selects another allocator
        self.assertFalse(streampool.cupy.active())
        self.assertIs(streampool.cupy.use(), allocator)
        self.assertTrue(streampool.cupy.active())
        pointer = cupy.allocator(MiB)  # CuPy's allocations reach streampool again
        self.assertTrue(pointer)
        allocator.free(pointer, 0)

    def test_empty_cache_returns_unused_memory(self):
        stream = self.driver.stream()
        block = self.library.streampool_torch_alloc(MiB, 0, stream)
        self.library.streampool_torch_free(block, MiB, 0, stream)
        streampool.pluggable.empty_cache(0)
        self.assertEqual(streampool.pluggable.memory_stats()["reserved_bytes.all.current"], 0)
        with self.assertRaises(RuntimeError):
            streampool.pluggable.empty_cache(5)


class Finding(unittest.TestCase):
    def run_python(self, code, **changes):
        env = dict(os.environ)
        env.update(changes)
        return subprocess.run([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, check=False)

    def test_a_wrong_streampool_library_is_an_error_naming_the_setting(self):
        result = self.run_python("import streampool.pluggable as p\n"
                                 "try:\n    p.load()\nexcept Exception as e:\n    print(type(e).__name__, e)\n",
                                 STREAMPOOL_LIBRARY="/nonexistent/libstreampool_alloc.so")
        self.assertIn("NotUsable", result.stdout)
        self.assertIn("STREAMPOOL_LIBRARY", result.stdout)

    def test_without_torch_use_says_what_it_needs(self):
        result = self.run_python("import sys; sys.modules['torch'] = None\n"
                                 "import streampool.torch\n"
                                 "try:\n    streampool.torch.use()\nexcept Exception as e:\n    print(type(e).__name__, e)\n")
        self.assertIn("NotUsable streampool.torch.use() needs PyTorch", result.stdout)

    def test_importing_the_package_imports_neither_framework(self):
        result = self.run_python("import sys, streampool, streampool.torch, streampool.cupy\n"
                                 "print('torch' in sys.modules, 'cupy' in sys.modules)\n")
        self.assertEqual(result.stdout.split(), ["False", "False"])


if __name__ == "__main__":
    unittest.main()
