"""tools/cudart_imports.py and cudart_coverage.py --needed-by: the symbol listing the PyTorch trial
(tools/gpu/torch_cudart_trial.sh) runs on the GPU box, checked here on ELF files of this build.
RUNTIME_TESTS: a program linked to the runtime; RUNTIME_LIBRARY: libstreampool_cudart.so."""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import cudart_coverage  # noqa: E402
import cudart_imports  # noqa: E402

PROGRAM = os.environ.get("RUNTIME_TESTS", "")
LIBRARY = os.environ.get("RUNTIME_LIBRARY", "")


class ParsingTest(unittest.TestCase):
    def test_only_cuda_names_are_taken_with_their_version(self):
        listing = ("                 U cudaFree@libcudart.so.13\n"
                   "                 U __cudaRegisterFatBinary@@libcudart.so.13\n"
                   "                 U malloc@GLIBC_2.2.5\n"
                   "                 U cuInit\n"
                   "                 w cudaProfilerStart\n")
        self.assertEqual(cudart_imports.parse_undefined(listing),
                         {"cudaFree": "libcudart.so.13", "__cudaRegisterFatBinary": "libcudart.so.13",
                          "cudaProfilerStart": ""})

    def test_needed_rpath_and_runpath_are_read_from_the_dynamic_section(self):
        dynamic = (" 0x0000000000000001 (NEEDED)             Shared library: [libcudart.so.13]\n"
                   " 0x0000000000000001 (NEEDED)             Shared library: [libc.so.6]\n"
                   " 0x000000000000001d (RUNPATH)            Library runpath: [$ORIGIN/../../nvidia/cu13/lib]\n")
        self.assertEqual(cudart_imports.parse_dynamic(dynamic),
                         (["libcudart.so.13", "libc.so.6"], "", "$ORIGIN/../../nvidia/cu13/lib"))


class ElfTest(unittest.TestCase):
    def setUp(self):
        # Never a skip counted as a pass: without the ELF files these tests fail.
        self.assertTrue(os.path.isfile(PROGRAM) and os.path.isfile(LIBRARY), "set RUNTIME_TESTS and RUNTIME_LIBRARY")

    def test_a_program_linked_to_the_runtime_imports_its_cudart_names_only(self):
        names, (needed, _, runpath) = cudart_imports.cudart_imports(PROGRAM)
        self.assertIn("cudaMallocAsync", names)
        self.assertIn("cudaGetLastError", names)
        self.assertNotIn("cuInit", names)
        self.assertTrue(all(name.startswith(("cuda", "__cuda")) for name in names))
        self.assertIn("libcudart.so.13", needed)
        self.assertNotEqual(runpath, "")

    def test_names_a_runtime_lacks_are_listed_as_missing_with_their_importer(self):
        names, _ = cudart_imports.cudart_imports(PROGRAM)
        ours = cudart_imports.exported(LIBRARY) - {"cudaMallocAsync"}
        table = cudart_imports.missing_table({name: {"runtime_tests"} for name in names}, ours, "t")
        self.assertIn("**1 are missing**", table)
        self.assertIn("| `cudaMallocAsync` | runtime_tests |", table)

    def test_coverage_marks_what_a_consumer_imports_and_what_it_lacks(self):
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as handle:
            handle.write("cudaMallocAsync\ncudaGraphicsMapResources\n")
        label, needed = cudart_coverage.read_needed(f"PyTorch={handle.name}")
        os.unlink(handle.name)
        ours = cudart_coverage.exported(LIBRARY) - {"cudaGraphicsMapResources"}
        nvidia = ours | {"cudaGraphicsMapResources"}
        lines, _, _ = cudart_coverage.coverage_lines(nvidia, ours, [(label, needed)])
        self.assertIn("**PyTorch** imports 2 functions of `libcudart.so.13`; streampool exports 1, "
                      "**1 are missing**: `cudaGraphicsMapResources`.", lines)
        self.assertIn("| `cudaGraphicsMapResources` | — | yes |", lines)
        self.assertIn("| `cudaMallocAsync` | yes | yes |", lines)
        self.assertIn("| `cudaFree` | yes |  |", lines)

    def test_coverage_marks_functions_without_a_driver_counterpart_as_not_supported(self):
        ours = cudart_coverage.exported(LIBRARY)
        nvidia = set(ours)
        lines, _, _ = cudart_coverage.coverage_lines(nvidia, ours, [], {"cudaFree"})
        self.assertIn("| `cudaFree` | not supported (no driver counterpart) |", lines)
        self.assertIn("| `cudaMallocAsync` | yes |", lines)
        self.assertTrue(any("1 of them only answer `cudaErrorNotSupported`" in line for line in lines))

    def test_the_not_supported_list_names_only_functions_the_runtime_exports(self):
        listed = cudart_coverage.read_names(cudart_coverage.NOT_SUPPORTED)
        self.assertEqual(sorted(listed - cudart_coverage.exported(LIBRARY)), [])


if __name__ == "__main__":
    unittest.main()
