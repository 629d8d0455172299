"""The summary of a workloads.json (run_all.py writes one): per workload, each allocator's median
over its rounds, streampool's ratio to each other allocator, and the issue's targets, met or not.

    summarize.py workloads.json [-o workloads.md]

A ratio is streampool's figure over the other's (below 1: streampool takes less time or memory;
for throughput, above 1 is better). Medians are over the rounds that produced the figure; n says
how many. A target whose figures are missing is "no data", never met.
"""
import argparse
import sys

import workload_io as io

MiB = float(1 << 20)

# metric key: (heading, unit, better). better: "lower" or "higher".
METRICS = {
    "step_time_s": ("step time", "ms", "lower"),
    "tokens_per_s": ("throughput", "tokens/s", "higher"),
    "time_per_token_s": ("time per token", "ms", "lower"),
    "prefill_s": ("prefill", "ms", "lower"),
    "time_per_token_cold_s": ("time per token, first generation", "ms", "lower"),
    "prefill_cold_s": ("prefill, first generation", "ms", "lower"),
    "p99_iteration_s": ("p99 iteration latency", "ms", "lower"),
    "p50_iteration_s": ("p50 iteration latency", "ms", "lower"),
    "compile_s": ("compile or cache load (excluded)", "s", "lower"),
    "device_peak_bytes": ("peak device memory", "MiB", "lower"),
    "torch_max_reserved_bytes": ("torch.cuda.max_memory_reserved", "MiB", "lower"),
    "jax_peak_bytes_in_use": ("jax peak_bytes_in_use", "MiB", "lower"),
    "jax_peak_pool_bytes": ("jax peak_pool_bytes", "MiB", "lower"),
}

WORKLOADS = (
    ("torch", "training", "Training: decoder LM, bf16, sequence length changing every step",
     ("step_time_s", "tokens_per_s", "device_peak_bytes", "torch_max_reserved_bytes")),
    ("torch", "decode_b1", "Decoding, batch 1: token by token with a growing KV cache",
     ("time_per_token_s", "prefill_s", "time_per_token_cold_s", "prefill_cold_s", "device_peak_bytes")),
    ("torch", "decode_b32", "Decoding, batch 32",
     ("time_per_token_s", "prefill_s", "time_per_token_cold_s", "prefill_cold_s", "device_peak_bytes")),
    ("torch", "serving", "Serving: requests joining and leaving the batch every iteration",
     ("tokens_per_s", "p99_iteration_s", "p50_iteration_s", "device_peak_bytes", "torch_max_reserved_bytes")),
    ("jax", "jax_training", "JAX training with shapes changing every step",
     ("step_time_s", "compile_s", "device_peak_bytes", "jax_peak_bytes_in_use", "jax_peak_pool_bytes")),
)

ORDER = {"torch": ("native", "expandable", "nvidia-pool", "streampool", "streampool-pluggable"),
         "jax": ("bfc", "cuda_async", "streampool")}
OURS = ("streampool", "streampool-pluggable")

# The targets: (workload, metric, relation, [(other allocator, factor)], wording).
# relation "at_most": streampool <= factor * other; "below": streampool < other (lower is better);
# "above": streampool > other (higher is better).
TARGETS = (
    ("training", "step_time_s", "at_most", (("native", 1.0), ("nvidia-pool", 0.95)),
     "training step time at most native's and at most 0.95x NVIDIA's pool's"),
    ("training", "device_peak_bytes", "at_most", (("native", 1.0), ("expandable", 1.0), ("nvidia-pool", 1.0)),
     "training peak memory at most the lowest of the other three"),
    ("decode_b1", "time_per_token_s", "at_most", (("nvidia-pool", 0.6), ("native", 0.8), ("expandable", 1.0)),
     "decoding batch 1: time per token at most 0.6x NVIDIA's pool, 0.8x native, and expandable's"),
    ("decode_b32", "time_per_token_s", "at_most", (("nvidia-pool", 0.6), ("native", 0.8), ("expandable", 1.0)),
     "decoding batch 32: time per token at most 0.6x NVIDIA's pool, 0.8x native, and expandable's"),
    ("serving", "tokens_per_s", "above", (("native", 1.0), ("expandable", 1.0), ("nvidia-pool", 1.0)),
     "serving throughput ahead of all three others"),
    ("serving", "p99_iteration_s", "below", (("native", 1.0), ("expandable", 1.0), ("nvidia-pool", 1.0)),
     "serving p99 iteration latency ahead of all three others"),
    ("serving", "device_peak_bytes", "below", (("native", 1.0), ("expandable", 1.0), ("nvidia-pool", 1.0)),
     "serving peak memory ahead of all three others"),
    ("jax_training", "step_time_s", "at_most", (("bfc", 1.0), ("cuda_async", 0.6)),
     "JAX step time at most BFC's and at most 0.6x cuda_async's"),
    ("jax_training", "device_peak_bytes", "at_most", (("bfc", 1.0),),
     "JAX peak memory at most BFC's"),
)


def collect(data):
    """{(framework, workload): {allocator: {metric: [values over rounds]}}} from the measured runs."""
    table = {}
    for run in data.get("runs", []):
        for result in run.get("results", []):
            workload = result.get("workload")
            per_metric = table.setdefault((run["framework"], workload), {}).setdefault(run["allocator"], {})
            for metric, value in result.items():
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    per_metric.setdefault(metric, []).append(value)
    return table


def medians(table):
    return {key: {allocator: {metric: (io.median(values), len(values)) for metric, values in metrics.items()}
                  for allocator, metrics in per_allocator.items()}
            for key, per_allocator in table.items()}


def shown(value, unit):
    if value is None:
        return "-"
    if unit == "ms":
        return "%.2f" % (value * 1e3)
    if unit == "MiB":
        return "%.0f" % (value / MiB)
    if unit == "tokens/s":
        return "%.0f" % value
    return "%.2f" % value


def allocators_of(framework, per_allocator):
    known = [a for a in ORDER[framework] if a in per_allocator]
    return known + sorted(a for a in per_allocator if a not in known)


def workload_table(framework, metrics, per_allocator):
    names = allocators_of(framework, per_allocator)
    ours = [a for a in OURS if a in per_allocator]
    others = [a for a in names if a not in OURS]
    header = ["metric"] + names + ["%s / %s" % (o, b) for o in ours for b in others]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for metric in metrics:
        heading, unit, _ = METRICS[metric]
        cells = ["%s (%s)" % (heading, unit)]
        present = False
        for name in names:
            value, count = per_allocator[name].get(metric, (None, 0))
            present = present or value is not None
            cells.append("-" if value is None else "%s (n=%d)" % (shown(value, unit), count))
        for mine in ours:
            for other in others:
                cells.append(ratio_text(per_allocator[mine].get(metric, (None, 0))[0],
                                        per_allocator[other].get(metric, (None, 0))[0]))
        if present:
            lines.append("| " + " | ".join(cells) + " |")
    return lines


def ratio_text(mine, other):
    if mine is None or other in (None, 0):
        return "-"
    return "%.3fx" % (mine / other)


def judge(target, per_allocator, mine_name):
    """("met" | "missed" | "no data", detail) for one target and one of streampool's configurations."""
    _, metric, relation, others, _ = target
    mine = per_allocator.get(mine_name, {}).get(metric, (None, 0))[0]
    if mine is None:
        return "no data", "no %s figure for %s" % (metric, mine_name)
    details = []
    met = True
    for other, factor in others:
        theirs = per_allocator.get(other, {}).get(metric, (None, 0))[0]
        if theirs is None or theirs == 0:
            return "no data", "no %s figure for %s" % (metric, other)
        if relation == "at_most":
            ok = mine <= factor * theirs
        elif relation == "below":
            ok = mine < theirs
        else:
            ok = mine > theirs
        met = met and ok
        wanted = {"at_most": "<= %gx" % factor, "below": "< 1x", "above": "> 1x"}[relation]
        details.append("%.3fx %s (%s %s)" % (mine / theirs, other, wanted, "ok" if ok else "no"))
    return ("met" if met else "missed"), ", ".join(details)


def markdown(data):
    meta = data.get("meta", {})
    lines = ["# Real workloads: streampool against the allocators a user could pick", ""]
    lines.append("Started %s UTC; budget %s s, %s rounds planned, scale %s%s%s; finished after %s s." % (
        meta.get("started_utc", "?"), meta.get("budget_s"), meta.get("rounds"), meta.get("scale"),
        ", smoke sizes (the figures check the code, they measure nothing)" if meta.get("smoke") else "",
        ", fake driver (made-up figures)" if meta.get("fake") else "",
        "%.0f" % meta["finished_after_s"] if isinstance(meta.get("finished_after_s"), (int, float)) else "?"))
    lines.append("")
    lines.append("Medians over rounds (n: how many). Peak device memory: the device's used memory (total - "
                 "free, NVML every few ms and cudaMemGetInfo at step boundaries, the higher) above the "
                 "workload's settled start; the allocators' own counters are shown beside it but are not "
                 "comparable between allocators (each counts what it holds its own way).")
    lines.append("")
    table = medians(collect(data))
    for framework, workload, title, metrics in WORKLOADS:
        per_allocator = table.get((framework, workload))
        lines.append("## " + title)
        lines.append("")
        if not per_allocator:
            lines.append("No results.")
        else:
            lines.extend(workload_table(framework, metrics, per_allocator))
        lines.append("")
    lines.extend(target_section(table))
    lines.extend(replay_section(data.get("replays", [])))
    lines.extend(process_section(data, meta))
    return "\n".join(lines) + "\n"


def target_section(table):
    lines = ["## The issue's targets", "", "| target | configuration | result | ratios |", "| --- | --- | --- | --- |"]
    for target in TARGETS:
        workload = target[0]
        framework = "jax" if workload.startswith("jax") else "torch"
        per_allocator = table.get((framework, workload), {})
        ours = [a for a in OURS if a in per_allocator] or ["streampool"]
        for mine in ours:
            verdict, detail = judge(target, per_allocator, mine)
            lines.append("| %s | %s | %s | %s |" % (target[4], mine, verdict, detail))
    lines.append("")
    return lines


def replay_section(replays):
    lines = ["## Replay of recorded traces through the engine (CPU)", ""]
    if not replays:
        return lines + ["No replays.", ""]
    lines += ["| trace | origin | events | engine events/s | ns per event | wall events/s (with reading the trace) |",
              "| --- | --- | --- | --- | --- | --- |"]
    for replay in replays:
        if not replay.get("runs"):
            lines.append("| %s | %s | failed: %s | - | - | - |" % (replay["trace"], replay["origin"],
                                                                 "; ".join(replay.get("errors", []))))
            continue
        rate = replay.get("engine_events_per_s")
        lines.append("| %s | %s | %d | %s | %s | %s |" % (
            replay["trace"], replay["origin"], replay["events"], "%.3g" % rate if rate else "-",
            "%.0f" % (1e9 / rate) if rate else "-",
            "%.3g" % replay["wall_events_per_s"] if replay.get("wall_events_per_s") else "-"))
    lines.append("")
    return lines


def process_section(data, meta):
    lines = ["## Processes", ""]
    for name, described in sorted(meta.get("configurations", {}).items()):
        lines.append("- `%s`: %s" % (name, described))
    if meta.get("streampool_settings"):
        lines.append("- streampool's configurations also had: %s" % ", ".join(
            "%s=%s" % item for item in sorted(meta["streampool_settings"].items())))
    lines.append("- NVML: %s" % meta.get("nvml"))
    lines.append("")
    problems = []
    for run in data.get("runs", []) + data.get("traced", []):
        if run.get("status") != 0:
            problems.append("%s: exit %s" % (run["tag"], run.get("status")))
        for error in run.get("errors", []):
            problems.append("%s: %s failed: %s" % (run["tag"], error.get("workload"), error.get("error")))
        served = run.get("streampool_served")
        if served is not None and not served.get("ok"):
            problems.append("%s: streampool did not serve (%s)" % (run["tag"], served.get("line")))
    for skipped in data.get("skipped", []):
        problems.append("%s: skipped (%s)" % (skipped["tag"], skipped["why"]))
    counted = len(data.get("runs", []))
    lines.append("%d measured processes. %s" % (counted, "Nothing failed or was skipped." if not problems else
                                                  "Failed or skipped:"))
    lines.extend("- " + problem for problem in problems)
    lines.append("")
    return lines


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("json")
    parser.add_argument("-o", "--output")
    args = parser.parse_args(argv)
    import json  # pylint: disable=import-outside-toplevel
    with open(args.json, encoding="utf-8") as file:
        text = markdown(json.load(file))
    if args.output:
        with open(args.output, "w", encoding="utf-8") as file:
            file.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
