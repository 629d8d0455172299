"""The Python package (python/streampool) over the fake driver: the test process itself runs
under LD_PRELOAD=libstreampool.so (tests/python/CMakeLists.txt sets it), allocating through
ctypes (cuda_calls.py). Standard library only."""
import errno
import json
import os
import pickle
import subprocess
import sys
import tempfile
import unittest

import cuda_calls
import streampool

MiB = 1 << 20


def without_streampool():
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    return env


class WithoutStreampool(unittest.TestCase):
    def run_python(self, code):
        return subprocess.run([sys.executable, "-c", code], env=without_streampool(), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, check=False)

    def test_active_is_false_and_the_rest_raise_not_loaded(self):
        result = self.run_python(
            "import streampool\n"
            "print(streampool.active())\n"
            "for f in (streampool.stats, streampool.oom_report, streampool.version):\n"
            "    try:\n"
            "        f(); print('no error')\n"
            "    except streampool.NotLoaded:\n"
            "        print('NotLoaded')\n")
        self.assertEqual(result.stdout.split(), ["False", "NotLoaded", "NotLoaded", "NotLoaded"])

    def test_module_says_it_is_not_loaded_and_fails(self):
        result = subprocess.run([sys.executable, "-m", "streampool"], env=without_streampool(),
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
        self.assertEqual(result.returncode, 1)
        self.assertIn("not loaded in this process", result.stdout)


class UnderStreampool(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cuda = cuda_calls.Driver()
        cls.stream = cls.cuda.stream()
        cls.folder = tempfile.TemporaryDirectory()

    @classmethod
    def tearDownClass(cls):
        cls.folder.cleanup()

    def test_active_and_version(self):
        self.assertTrue(streampool.active())
        self.assertRegex(streampool.version(), r"^\d+\.\d+\.\d+$")

    def test_stats_count_an_allocation_made_through_the_driver(self):
        before = streampool.stats()["totals"]["used_current"]
        pointer = self.cuda.alloc(3 * MiB, self.stream)
        during = streampool.stats()["totals"]["used_current"]
        self.cuda.free(pointer, self.stream)
        self.cuda.synchronize(self.stream)
        self.assertEqual(during - before, 3 * MiB)
        self.assertEqual(streampool.stats()["totals"]["used_current"], before)

    def test_trace_records_the_block_and_exports_as_a_torch_snapshot(self):
        path = os.path.join(self.folder.name, "block%p.trace")
        with streampool.trace(path) as recording:
            self.assertEqual(streampool.current_trace(), recording.path)
            pointers = [self.cuda.alloc(MiB, self.stream) for _ in range(3)]
            for pointer in pointers:
                self.cuda.free(pointer, self.stream)
            snapshot = streampool.export_torch_snapshot(os.path.join(self.folder.name, "during.pickle"))
        self.assertIsNone(streampool.current_trace())
        self.assertEqual(recording.path, os.path.join(self.folder.name, f"block{os.getpid()}.trace"))
        after = recording.export_torch_snapshot(os.path.join(self.folder.name, "after.pickle"))
        for exported in (snapshot, after):
            with open(exported, "rb") as f:
                data = pickle.load(f)
            actions = [e["action"] for e in data["device_traces"][0]]
            self.assertEqual(actions.count("alloc"), 3, exported)
            self.assertEqual(actions.count("free_completed"), 3, exported)

    def test_a_second_trace_while_one_records_is_refused_with_ebusy(self):
        with streampool.trace(os.path.join(self.folder.name, "first.trace")):
            with self.assertRaises(OSError) as refused:
                with streampool.trace(os.path.join(self.folder.name, "second.trace")):
                    pass
        self.assertEqual(refused.exception.errno, errno.EBUSY)

    def test_export_without_a_trace_says_so(self):
        with self.assertRaisesRegex(RuntimeError, "no trace"):
            streampool.export_perfetto(os.path.join(self.folder.name, "none.json"))

    def test_oom_report_is_none_before_any_failure_or_without_reports(self):
        # None where the library has no streampool_oom_report, and where it has one while
        # nothing has failed in this process yet.
        self.assertIsNone(streampool.oom_report())

    def test_oom_report_is_the_last_failures_report_as_a_dict(self):
        # In a process of its own: the failure is its first, and this one's stays without any.
        code = ("import json, cuda_calls, streampool\n"
                "cuda = cuda_calls.Driver()\n"
                "stream = cuda.stream()\n"
                "assert cuda.alloc(1 << 50, stream) == -cuda_calls.CUDA_ERROR_OUT_OF_MEMORY\n"
                "print(json.dumps(streampool.oom_report()))\n")
        env = dict(os.environ, STREAMPOOL_LOG="off")
        result = subprocess.run([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, check=False)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stderr, "")  # STREAMPOOL_LOG=off: no report on stderr
        report = json.loads(result.stdout)
        self.assertEqual(report["bytes"], 1 << 50)
        self.assertEqual(report["failures"], 1)
        self.assertEqual(report["device"], 0)
        self.assertIn(report["cause"], ("device_full", "held_outside", "pool_limit"))
        self.assertTrue(report["explanation"])
        self.assertEqual(report["pools"][0]["handle"], report["pool"])

    def test_leaks_reports_the_live_allocations_by_call_site_in_the_leak_mode(self):
        # Off in this process: nothing recorded. A child with STREAMPOOL_LEAKS=1: its one live block.
        self.assertFalse(streampool.leaks()["enabled"])
        code = ("import cuda_calls, streampool\n"
                "cuda = cuda_calls.Driver()\n"
                "pointer = cuda.alloc(1 << 20, cuda.stream())\n"
                "report = streampool.leaks()\n"
                "print(report['enabled'], report['live']['allocations'], report['live']['bytes'],"
                " len(report['sites']), report['sites'][0]['bytes'])\n")
        result = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, STREAMPOOL_LEAKS="1"),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=False)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.split(), ["True", "1", str(MiB), "1", str(MiB)])
        self.assertIn("streampool: leaks: 1 allocations (1048576 bytes) still live at exit", result.stderr)

    def test_module_prints_the_pools(self):
        pointer = self.cuda.alloc(MiB, self.stream)
        result = subprocess.run([sys.executable, "-m", "streampool"], stdout=subprocess.PIPE, text=True, check=False)
        self.cuda.free(pointer, self.stream)
        # A fresh process: served, with no pool used yet.
        self.assertEqual(result.returncode, 0)
        self.assertIn("serving this process", result.stdout)
        self.assertIn("calls served: 0 allocations", result.stdout)


if __name__ == "__main__":
    unittest.main()
