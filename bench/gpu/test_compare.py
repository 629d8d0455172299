"""compare.py on the hand-made runs in testdata/ (figures close to driver-behaviour.md's NVIDIA
numbers, made-up streampool numbers; one missed target and one failed benchmark on purpose)."""

import contextlib
import io
import json
import os
import shutil
import tempfile
import unittest

import compare

TESTDATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "testdata")
RUN_FILES = ("runtime-nvidia.json", "runtime-streampool.json", "driver-nvidia.json", "driver-streampool.json")


def table_row(summary, section, label):
    """The cells of the row whose first cell is label, inside the section that starts with section."""
    part = summary[summary.index(section):]
    for line in part.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if cells and cells[0] == label:
            return cells
    raise AssertionError(f"no row {label!r} under {section!r}")


class SampleRunsTest(unittest.TestCase):
    def setUp(self):
        self.outdir = tempfile.mkdtemp(prefix="gpu-bench-compare-")
        for name in RUN_FILES:
            shutil.copy(os.path.join(TESTDATA, name), self.outdir)

    def tearDown(self):
        shutil.rmtree(self.outdir)

    def run_compare(self, *extra):
        with contextlib.redirect_stdout(io.StringIO()):
            status = compare.main([self.outdir, *extra])
        with open(os.path.join(self.outdir, compare.SUMMARY_NAME), encoding="utf-8") as handle:
            return status, handle.read()

    def rewrite(self, name, edit):
        path = os.path.join(self.outdir, name)
        with open(path, encoding="utf-8") as handle:
            document = json.load(handle)
        edit(document)
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(document, handle, indent=2)

    def test_one_mib_pair_shows_both_times_the_speedup_and_a_met_target(self):
        _, summary = self.run_compare()
        row = table_row(summary, "## Runtime API", "1 MiB alloc+free, one stream")
        self.assertEqual(row[1:], ["900 ns", "60.0 ns", "15.0x faster", ">= 10x faster", "yes"])

    def test_random_sizes_peak_reserved_is_streampool_over_nvidia_against_three_quarters(self):
        _, summary = self.run_compare()
        row = table_row(summary, "## Runtime API", "random sizes: peak reserved (RESERVED_MEM_HIGH)")
        self.assertEqual(row[1:], ["1,040 MB", "700 MB", "0.67x NVIDIA's", "<= 0.75x NVIDIA's", "yes"])

    def test_sixteen_thread_row_compares_aggregate_pairs_per_second(self):
        _, summary = self.run_compare()
        row = table_row(summary, "## Runtime API", "16 host threads, own streams: aggregate alloc+free pairs/s")
        self.assertEqual(row[1:], ["0.36 M/s", "25 M/s", "69.4x faster", ">= 50x faster", "yes"])

    def test_cross_stream_above_a_third_of_nvidias_time_is_a_missed_target(self):
        _, summary = self.run_compare()
        row = table_row(summary, "## Runtime API", "alloc s1, event record s1, wait s2, free s2")
        self.assertEqual(row[3:], ["0.44x the time (2.3x faster)", "<= 1/3 of the time", "NO"])

    def test_times_in_microseconds_are_converted_to_nanoseconds(self):
        _, summary = self.run_compare()
        row = table_row(summary, "## Driver API", "alloc s1, event record s1, wait s2, free s2")
        self.assertEqual(row[1:3], ["3,300 ns", "1,000 ns"])
        self.assertEqual(row[5], "yes")

    def test_a_failed_benchmark_shows_its_error_instead_of_a_time(self):
        _, summary = self.run_compare()
        row = table_row(summary, "## Driver API", "256 B alloc+free, one stream")
        self.assertEqual(row[2:4], ["error: alloc: CUDA_ERROR_OUT_OF_MEMORY (2)", "n/a"])
        self.assertIn("**WARNING** driver-streampool.json: 1 benchmark(s) reported an error", summary)

    def test_thread_scaling_table_has_every_thread_count(self):
        _, summary = self.run_compare()
        for threads, ratio in ((1, "52.6x"), (2, "133.3x"), (16, "69.4x")):
            row = table_row(summary, "### Thread scaling (runtime)", str(threads))
            self.assertEqual(row[3], ratio)

    def test_header_holds_the_meta_lines_and_the_tally_counts_targets(self):
        status, summary = self.run_compare("--meta", "commit=0123abc", "--meta", "driver=580.159.04")
        self.assertEqual(status, 0)
        self.assertIn("- commit: 0123abc\n- driver: 580.159.04\n", summary)
        self.assertIn("Targets met: 9 of 10 (1 missed, 0 unmeasured)", summary)

    def test_strict_mode_fails_when_a_target_is_missed(self):
        status, _ = self.run_compare("--strict")
        self.assertEqual(status, 3)

    def test_a_missing_run_leaves_its_targets_unmeasured_and_is_reported(self):
        os.remove(os.path.join(self.outdir, "driver-streampool.json"))
        _, summary = self.run_compare()
        row = table_row(summary, "## Driver API", "1 MiB alloc+free, one stream")
        self.assertEqual(row[2:], ["missing", "n/a", ">= 10x faster", "unmeasured"])
        self.assertIn("**WARNING** driver-streampool.json: missing", summary)

    def test_a_run_cut_short_by_a_crash_keeps_its_finished_benchmarks(self):
        path = os.path.join(self.outdir, "runtime-streampool.json")
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text[:text.index('"name": "pair_256B')])
        _, summary = self.run_compare()
        self.assertEqual(table_row(summary, "## Runtime API", "1 MiB alloc+free, one stream")[2], "60.0 ns")
        self.assertEqual(table_row(summary, "## Runtime API", "256 B alloc+free, one stream")[2], "missing")
        self.assertIn("runtime-streampool.json: partial", summary)

    def test_a_preloaded_run_that_did_not_see_streampool_is_flagged(self):
        self.rewrite("runtime-streampool.json", lambda document: document["context"].update(allocator="nvidia"))
        _, summary = self.run_compare()
        self.assertIn("**WARNING** runtime-streampool.json ran with allocator=nvidia, expected streampool", summary)


    def test_the_threads_rate_comes_from_the_pairs_per_second_counter_when_present(self):
        def add_counter(document):
            for entry in document["benchmarks"]:
                if entry["name"] == "threads_pair_1MiB/real_time/threads:16":
                    entry["pairs_per_second"] = 0.18e6  # half of what 1e9 / real_time would say
        self.rewrite("runtime-nvidia.json", add_counter)
        _, summary = self.run_compare()
        row = table_row(summary, "## Runtime API", "16 host threads, own streams: aggregate alloc+free pairs/s")
        self.assertEqual(row[1:4], ["0.18 M/s", "25 M/s", "138.9x faster"])

    def test_growth_rows_compare_nanoseconds_per_gib_and_appear_only_where_a_run_has_them(self):
        _, summary = self.run_compare()
        self.assertNotIn("grow 1 GiB in 2 MiB pieces", summary)  # the sample runs predate the workload

        def add_growth(grow_ns, release_ns):
            def edit(document):
                document["benchmarks"].append({
                    "name": "grow_release_1GiB_2MiB/real_time", "run_name": "grow_release_1GiB_2MiB/real_time",
                    "run_type": "iteration", "threads": 1, "real_time": grow_ns + release_ns, "time_unit": "ns",
                    "grow_ns": grow_ns, "release_ns": release_ns})
            return edit
        self.rewrite("driver-nvidia.json", add_growth(4.0e6, 2.0e6))
        self.rewrite("driver-streampool.json", add_growth(6.0e6, 1.0e6))
        status, summary = self.run_compare("--strict")
        row = table_row(summary, "## Driver API", "grow 1 GiB in 2 MiB pieces: mapping (ns per GiB)")
        self.assertEqual(row[1:], ["4.00 ms", "6.00 ms", "1.50x NVIDIA's time", "<= 1x NVIDIA's", "NO"])
        row = table_row(summary, "## Driver API", "the same: free, synchronize, trim to 0 (ns per GiB)")
        self.assertEqual(row[1:], ["2.00 ms", "1.00 ms", "0.50x NVIDIA's time", "-", "-"])
        self.assertEqual(status, 3)
        # The runtime binaries have no growth entries: no rows there.
        runtime = summary[summary.index("## Runtime API"):summary.index("## Driver API")]
        self.assertNotIn("grow 1 GiB", runtime)



class IndexResultsTest(unittest.TestCase):
    def test_the_median_of_repetitions_is_used_over_single_repetitions(self):
        def run(run_type, real_time, aggregate_name=None):
            entry = {"name": "pair_1MiB/real_time", "run_name": "pair_1MiB/real_time", "run_type": run_type,
                     "threads": 1, "real_time": real_time, "time_unit": "ns"}
            if aggregate_name:
                entry.update(name="pair_1MiB/real_time_" + aggregate_name, aggregate_name=aggregate_name)
            return entry
        document = {"benchmarks": [run("iteration", 10.0), run("iteration", 30.0), run("aggregate", 20.0, "mean"),
                                   run("aggregate", 25.0, "median"), run("aggregate", 1.0, "stddev")]}
        self.assertEqual(compare.index_results(document)[("pair_1MiB", 1)]["real_ns"], 25.0)


if __name__ == "__main__":
    unittest.main()
