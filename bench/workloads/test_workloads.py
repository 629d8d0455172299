"""The workloads' plain-Python parts, without a GPU or a framework: the lines a workload process
prints and their parsing, the allocators' environments and rotation, the sampled peaks, and the
summary's medians, ratios and targets on a hand-made workloads.json."""
import unittest

import allocators
import device_memory
import summarize
import workload_io as io

MiB = 1 << 20


def run(framework, allocator, round_index, **figures_by_workload):
    results = [dict(figures, workload=workload) for workload, figures in figures_by_workload.items()]
    return {"tag": "%s-%s-r%d" % (framework, allocator, round_index), "framework": framework,
            "allocator": allocator, "round": round_index, "status": 0, "results": results, "errors": []}


def sample_data():
    """Three rounds; streampool 20% faster than NVIDIA's pool at training, 0.5x its time per
    token at batch 1, ahead at serving on two figures of three; JAX at 0.5x cuda_async."""
    runs = []
    for round_index, jitter in enumerate((1.0, 1.02, 0.99)):
        for name, step, token, throughput, p99, peak in (
                ("native", 0.100, 0.020, 900.0, 0.030, 900 * MiB),
                ("expandable", 0.100, 0.012, 950.0, 0.029, 800 * MiB),
                ("nvidia-pool", 0.100, 0.020, 1000.0, 0.028, 850 * MiB),
                ("streampool", 0.080, 0.010, 1100.0, 0.027, 850 * MiB)):
            runs.append(run("torch", name, round_index,
                            training={"step_time_s": step * jitter, "device_peak_bytes": peak},
                            decode_b1={"time_per_token_s": token * jitter},
                            serving={"tokens_per_s": throughput * jitter, "p99_iteration_s": p99,
                                     "device_peak_bytes": peak}))
        for name, step, peak in (("bfc", 0.050, 500 * MiB), ("cuda_async", 0.100, 450 * MiB),
                                 ("streampool", 0.050, 400 * MiB)):
            runs.append(run("jax", name, round_index, jax_training={"step_time_s": step * jitter,
                                                                      "device_peak_bytes": peak}))
    return {"meta": {"rounds": 3, "configurations": {}}, "runs": runs, "skipped": [], "traced": [],
            "replays": [{"trace": "t", "origin": "committed", "events": 1000, "engine_events_per_s": 2e6,
                         "wall_events_per_s": 1e5, "runs": [{}]}]}


class WorkloadLines(unittest.TestCase):
    def test_marks_results_and_errors_are_read_back_and_other_lines_skipped(self):
        lines = ['MARK {"phase": "training", "edge": "begin", "t": 1.5}', "some framework warning",
                 'RESULT {"workload": "training", "step_time_s": 0.1}', 'ERROR {"workload": "serving", "error": "x"}',
                 'RESULT {"workload": "cut sho']
        parsed = io.parse_lines(lines)
        self.assertEqual(parsed["marks"], [{"phase": "training", "edge": "begin", "t": 1.5}])
        self.assertEqual(parsed["results"], [{"workload": "training", "step_time_s": 0.1}])
        self.assertEqual(parsed["errors"], [{"workload": "serving", "error": "x"}])

    def test_percentile_is_the_nearest_rank(self):
        values = list(range(1, 101))
        self.assertEqual(io.percentile(values, 0.99), 99)
        self.assertEqual(io.percentile(values, 0.5), 50)
        self.assertEqual(io.percentile([7], 0.99), 7)
        self.assertIsNone(io.percentile([], 0.99))

    def test_median_of_an_even_count_is_the_mean_of_the_middle_two(self):
        self.assertEqual(io.median([4, 1, 3, 2]), 2.5)
        self.assertEqual(io.median([3, 1, 2]), 2)


class Allocators(unittest.TestCase):
    paths = allocators.Paths("/b/libstreampool.so", "/b/libstreampool_alloc.so", "/r/python", None)
    inherited = {"PATH": "/bin", "LD_PRELOAD": "/other.so", "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
                 "STREAMPOOL_LOG": "debug", "XLA_PYTHON_CLIENT_MEM_FRACTION": ".5"}

    def test_native_gets_none_of_the_inherited_allocator_settings(self):
        env = allocators.environment(allocators.TORCH[0], self.paths, self.inherited)
        self.assertEqual(env["PATH"], "/bin")
        for name in ("LD_PRELOAD", "PYTORCH_CUDA_ALLOC_CONF", "STREAMPOOL_LOG", "XLA_PYTHON_CLIENT_MEM_FRACTION"):
            self.assertNotIn(name, env)

    def test_streampool_is_the_async_backend_under_the_preload_with_its_report(self):
        env = allocators.environment(allocators.TORCH[3], self.paths, self.inherited, stats_path="/o/s.%p.json",
                                     streampool_settings={"STREAMPOOL_RELEASE": "auto"})
        self.assertEqual(env["PYTORCH_CUDA_ALLOC_CONF"], "backend:cudaMallocAsync")
        self.assertEqual(env["LD_PRELOAD"], "/b/libstreampool.so")
        self.assertEqual(env["STREAMPOOL_STATS"], "/o/s.%p.json")
        self.assertEqual(env["STREAMPOOL_RELEASE"], "auto")

    def test_streampool_settings_reach_no_other_allocator(self):
        env = allocators.environment(allocators.TORCH[2], self.paths, {}, streampool_settings={"STREAMPOOL_RELEASE": "auto"})
        self.assertNotIn("STREAMPOOL_RELEASE", env)
        self.assertNotIn("LD_PRELOAD", env)

    def test_every_jax_configuration_disables_preallocation_and_only_bfc_leaves_the_allocator_unset(self):
        for allocator in allocators.JAX:
            env = allocators.environment(allocator, self.paths, {})
            self.assertEqual(env["XLA_PYTHON_CLIENT_PREALLOCATE"], "false")
            self.assertEqual(env.get("XLA_PYTHON_CLIENT_ALLOCATOR"), None if allocator.name == "bfc" else "cuda_async")

    def test_pluggable_finds_the_package_and_the_library_without_a_preload(self):
        env = allocators.environment(allocators.TORCH_PLUGGABLE, self.paths, {"PYTHONPATH": "/x"})
        self.assertEqual(env["STREAMPOOL_LIBRARY"], "/b/libstreampool_alloc.so")
        self.assertEqual(env["PYTHONPATH"].split(":"), ["/r/python", "/x"])
        self.assertNotIn("LD_PRELOAD", env)

    def test_rounds_rotate_so_each_allocator_leads_one_round(self):
        names = [[a.name for a in allocators.rotated(allocators.TORCH, r)] for r in range(4)]
        self.assertEqual(names[1], ["expandable", "nvidia-pool", "streampool", "native"])
        self.assertEqual(sorted(order[0] for order in names), sorted(a.name for a in allocators.TORCH))


class SampledPeaks(unittest.TestCase):
    def test_peak_is_the_highest_sample_inside_over_the_last_one_before(self):
        samples = [(1.0, 100), (2.0, 120), (3.0, 500), (4.0, 300), (5.0, 900)]
        self.assertEqual(device_memory.peak_in(samples, 2.5, 4.5), (380, 2))

    def test_no_peak_without_a_sample_before_the_span(self):
        self.assertEqual(device_memory.peak_in([(3.0, 500)], 2.5, 4.5), (None, 1))


class Summary(unittest.TestCase):
    def setUp(self):
        self.table = summarize.medians(summarize.collect(sample_data()))

    def test_medians_are_over_the_rounds(self):
        value, count = self.table[("torch", "training")]["streampool"]["step_time_s"]
        self.assertAlmostEqual(value, 0.080)
        self.assertEqual(count, 3)

    def verdict(self, description):
        target = next(t for t in summarize.TARGETS if t[4].startswith(description))
        framework = "jax" if target[0].startswith("jax") else "torch"
        return summarize.judge(target, self.table.get((framework, target[0]), {}), "streampool")[0]

    def test_targets_met_missed_and_without_data(self):
        self.assertEqual(self.verdict("training step time"), "met")  # 0.8x native, 0.8x the pool
        self.assertEqual(self.verdict("training peak memory"), "missed")  # 850 against expandable's 800
        self.assertEqual(self.verdict("decoding batch 1"), "met")  # 0.5x, 0.5x, 0.83x
        self.assertEqual(self.verdict("decoding batch 32"), "no data")
        self.assertEqual(self.verdict("serving throughput"), "met")
        self.assertEqual(self.verdict("serving peak memory"), "missed")  # ties the pool: not ahead
        self.assertEqual(self.verdict("JAX step time"), "met")  # 1.0x BFC, 0.5x cuda_async
        self.assertEqual(self.verdict("JAX peak memory"), "met")

    def test_markdown_has_a_table_per_workload_the_targets_and_the_replays(self):
        text = summarize.markdown(sample_data())
        self.assertIn("| step time (ms) | 100.00 (n=3) | 100.00 (n=3) | 100.00 (n=3) | 80.00 (n=3) | 0.800x |", text)
        self.assertIn("| serving peak memory ahead of all three others | streampool | missed |", text)
        self.assertIn("| t | committed | 1000 | 2e+06 | 500 | 1e+05 |", text)
        self.assertIn("21 measured processes. Nothing failed or was skipped.", text)

    def test_failures_and_skips_are_listed(self):
        data = sample_data()
        data["runs"][0]["status"] = "killed after 60 s"
        data["runs"][1]["errors"] = [{"workload": "serving", "error": "OutOfMemoryError: x"}]
        data["skipped"] = [{"tag": "torch-native-r2", "why": "budget"}]
        text = summarize.markdown(data)
        self.assertIn("- torch-native-r0: exit killed after 60 s", text)
        self.assertIn("- torch-expandable-r0: serving failed: OutOfMemoryError: x", text)
        self.assertIn("- torch-native-r2: skipped (budget)", text)


if __name__ == "__main__":
    unittest.main()
