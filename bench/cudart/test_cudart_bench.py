"""cudart_bench.py's summary on hand-made runs: medians over rounds, ratios, targets."""
import unittest

import cudart_bench


def run(mode, round_index, workloads, runtime=None, ok=True):
    default = "/x/libstreampool_cudart.so" if mode == "streampool" else "/usr/local/cuda/lib64/libcudart.so.13"
    return dict(mode=mode, round=round_index, status=0 if ok else 1, ok=ok,
                right_runtime=cudart_bench.expected_runtime(mode, runtime or default),
                result=dict(runtime=runtime or default, workloads=workloads, ok=ok))


def row(summary, name):
    return next(line for line in summary.splitlines() if line.startswith(f"| {name}:"))


class SummaryTest(unittest.TestCase):
    def test_median_over_rounds_and_ratio_against_nvidia(self):
        runs = []
        for index, (nvidia, ours) in enumerate([(100.0, 104.0), (200.0, 103.0), (100.0, 900.0)]):
            runs.append(run("nvidia", index, {"launch_api": nvidia}))
            runs.append(run("streampool", index, {"launch_api": ours}))
        summary = cudart_bench.summarise(dict(rounds=3, runs=runs))
        self.assertIn("| 100 | missing | 104 | 1.040 |", row(summary, "launch_api"))
        self.assertTrue(row(summary, "launch_api").endswith("| yes |"))

    def test_launch_more_than_five_percent_slower_misses_its_target(self):
        runs = [run("nvidia", 0, {"memcpy_d2d": 1000.0}), run("streampool", 0, {"memcpy_d2d": 1060.0})]
        summary = cudart_bench.summarise(dict(rounds=1, runs=runs))
        self.assertTrue(row(summary, "memcpy_d2d").endswith("| NO |"))
        self.assertIn("All targets met: no.", summary)

    def test_allocation_pair_is_held_to_the_preload_not_to_nvidia(self):
        runs = [run("nvidia", 0, {"pair_1MiB": 50.0}), run("preload", 0, {"pair_1MiB": 40.0}),
                run("streampool", 0, {"pair_1MiB": 39.0})]
        line = row(cudart_bench.summarise(dict(rounds=1, runs=runs)), "pair_1MiB")
        self.assertIn("streampool <= preload (0.975)", line)
        self.assertTrue(line.endswith("| yes |"))
        runs[2] = run("streampool", 0, {"pair_1MiB": 41.0})
        self.assertTrue(row(cudart_bench.summarise(dict(rounds=1, runs=runs)), "pair_1MiB").endswith("| NO |"))

    def test_a_run_of_the_wrong_runtime_is_left_out(self):
        runs = [run("nvidia", 0, {"launch_sync": 100.0}),
                run("streampool", 0, {"launch_sync": 1.0}, runtime="/usr/local/cuda/lib64/libcudart.so.13")]
        summary = cudart_bench.summarise(dict(rounds=1, runs=runs))
        self.assertTrue(row(summary, "launch_sync").endswith("| not measured |"))
        self.assertIn("streampool round 0", summary)

    def test_every_workload_the_program_registers_is_summarised(self):
        with open(__file__.replace("test_cudart_bench.py", "cudart_bench.cu")) as handle:
            source = handle.read()
        for name, _, _ in cudart_bench.WORKLOADS:
            self.assertIn(f'{{"{name}",', source)


if __name__ == "__main__":
    unittest.main()
