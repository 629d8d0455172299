"""The GPU scripts' inputs and reports, without a GPU: every line of the cuda-samples lists parses
as the scripts read it (a program, or a left-out sample with its reason), and upstream_compare.py
sorts two pytest logs' outcomes into the classes its summary and exit status rest on. Run by ctest
(label tools): python3 -m unittest tests/tools/test_gpu_tools.py."""

import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
GPU_TOOLS = os.path.join(ROOT, "tools", "gpu")
KNOWN_OPTIONS = ("rdc", "result", "nonumbers", "alone", "shared", "nordc", "cgheaders")
KNOWN_VALUED = ("fatbin:", "ptx:", "timeout=", "drop=", "common=")


def manifest(name):
    """(programs, left out) of a list: programs as 6 fields, left-out samples as (name, folder, reason)."""
    programs, left_out = [], []
    with open(os.path.join(GPU_TOOLS, name)) as lines:
        for line in lines:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            fields = [field.strip() for field in line.lstrip("-").split("|")]
            (left_out if line.startswith("-") else programs).append(fields)
    return programs, left_out


class SampleLists(unittest.TestCase):
    def check(self, name):
        programs, left_out = manifest(name)
        self.assertTrue(programs)
        for fields in programs:
            self.assertEqual(len(fields), 6, f"{name}: {fields[0]} has {len(fields)} fields, not 6")
            program, folder, sources, _libraries, options, _arguments = fields
            self.assertTrue(folder.split("/")[0][0].isdigit(), f"{name}: {program}: folder {folder}")
            self.assertTrue(sources, f"{name}: {program} names no sources")
            for option in options.split():
                self.assertTrue(option in KNOWN_OPTIONS or option.startswith(KNOWN_VALUED),
                                f"{name}: {program}: unknown option {option}")
        for fields in left_out:
            self.assertEqual(len(fields), 3, f"{name}: left-out {fields[0]} needs a folder and a reason")
            self.assertTrue(fields[2], f"{name}: {fields[0]} is left out without a reason")
        names = [fields[0] for fields in programs + left_out]
        self.assertEqual(len(names), len(set(names)), f"{name}: a sample is named twice")
        return programs, left_out

    def test_the_runtime_list_parses(self):
        programs, left_out = self.check("cudart_samples.txt")
        libraries = {library for fields in programs for library in fields[3].split()}
        self.assertTrue({"cublas", "cufft", "curand", "cusparse", "cusolver", "egl"} <= libraries)
        self.assertIn("simpleVulkan", [fields[0] for fields in left_out])

    def test_the_preload_corpus_list_parses(self):
        self.check("cuda_samples.txt")


NATIVE = """\
t.py::A::test_ok PASSED [ 20%]
t.py::A::test_both FAILED [ 40%]
t.py::A::test_ours PASSED [ 60%]
t.py::A::test_limit PASSED [ 80%]
t.py::A::test_late PASSED [100%]
t.py::B_param_0_{a=1, b=2}::test_p PASSED [100%]
=================================== FAILURES ===================================
_________________________________ A.test_both __________________________________
E   AssertionError: the test's own
========================= 1 failed, 4 passed in 1.00s ==========================
"""
STREAMPOOL = """\
t.py::A::test_ok PASSED [ 20%]
t.py::A::test_both FAILED [ 40%]
t.py::A::test_ours FAILED [ 60%]
t.py::A::test_limit FAILED [ 80%]
t.py::B_param_0_{a=1, b=2}::test_p FAILED [100%]
=================================== FAILURES ===================================
_________________________________ A.test_both __________________________________
E   AssertionError: the test's own
_________________________________ A.test_ours __________________________________
E   RuntimeError: CUDA error: an illegal memory access was encountered
_________________________________ A.test_limit _________________________________
E   RuntimeError: CUDAPluggableAllocator does not yet support getDeviceStats.
______________________ B_param_0_{a=1, b=2}.test_p _______________________
E   AssertionError: parameterised
"""


class UpstreamCompare(unittest.TestCase):
    def compare(self, native, streampool):
        with tempfile.TemporaryDirectory() as folder:
            paths = []
            for name, text in (("native", native), ("streampool", streampool)):
                paths.append(os.path.join(folder, name + ".log"))
                with open(paths[-1], "w") as log:
                    log.write(text)
            return subprocess.run([sys.executable, os.path.join(GPU_TOOLS, "upstream_compare.py"), "suite", *paths],
                                  stdout=subprocess.PIPE, text=True, check=False)

    def test_outcomes_are_sorted_into_ours_the_pluggable_limits_and_the_tests_own(self):
        result = self.compare(NATIVE, STREAMPOOL)
        self.assertEqual(result.returncode, 1, result.stdout)
        self.assertIn("| passed | 5 | 1 |", result.stdout)
        self.assertIn("| not run | 0 | 1 |", result.stdout)  # test_late: the run was cut short
        self.assertIn("- fail under streampool only: 2\n  - t.py::A::test_ours\n    | E   RuntimeError: CUDA error",
                      result.stdout)
        # an id with blanks keeps its traceback
        self.assertIn("  - t.py::B_param_0_{a=1, b=2}::test_p\n    | E   AssertionError: parameterised", result.stdout)
        self.assertIn("pluggable allocator (PyTorch: 'does not yet support'): 1\n  - t.py::A::test_limit", result.stdout)
        self.assertIn("(the test's, not streampool's): 1\n  - t.py::A::test_both", result.stdout)

    def test_failures_at_the_pluggable_limits_alone_do_not_fail_the_comparison(self):
        streampool = STREAMPOOL.replace("t.py::A::test_ours FAILED", "t.py::A::test_ours PASSED").replace(
            "test_p FAILED", "test_p PASSED")
        result = self.compare(NATIVE, streampool)
        self.assertEqual(result.returncode, 0, result.stdout)
        self.assertIn("- fail under streampool only: 0", result.stdout)


if __name__ == "__main__":
    unittest.main()
