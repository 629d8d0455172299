"""CTest's end-to-end check of run_all.py without a GPU: two rounds of every configuration with
fake_workloads.py standing in for PyTorch and JAX, streampool's configurations under the preload
over the fake driver, then the replays. Passes when every process exited 0 without an error, each
configuration ran in both rounds, each round in its rotated order, streampool served every one of
its processes (its stats report counted allocations and frees), every committed trace replayed
with events, and the summary was written.

    check_fake_run.py --build BUILD_DIR --out DIR
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys

import allocators

HERE = os.path.dirname(os.path.abspath(__file__))
ROUNDS = 2


def problems_of(data, out):
    problems = []
    expected = {("torch", a.name) for a in allocators.TORCH} | {("jax", a.name) for a in allocators.JAX}
    seen = {}
    for run in data["runs"]:
        seen.setdefault((run["framework"], run["allocator"]), []).append(run["round"])
        if run["status"] != 0 or run["errors"]:
            problems.append("%s: exit %s, errors %s" % (run["tag"], run["status"], run["errors"]))
        if run["allocator"] == "streampool" and not run.get("streampool_served", {}).get("ok"):
            problems.append("%s: streampool did not serve: %s" % (run["tag"], run.get("streampool_served")))
        if not any(r.get("workload") not in ("process", "driver_calls") for r in run["results"]):
            problems.append("%s: no workload results" % run["tag"])
    for key in sorted(expected):
        if sorted(seen.get(key, [])) != list(range(ROUNDS)):
            problems.append("%s/%s ran in rounds %s" % (key[0], key[1], seen.get(key)))
    for round_index in range(ROUNDS):
        order = [r["allocator"] for r in data["runs"] if r["round"] == round_index and r["framework"] == "torch"]
        wanted = [a.name for a in allocators.rotated(allocators.TORCH, round_index)]
        if order != wanted:
            problems.append("round %d ran %s, not %s" % (round_index, order, wanted))
    committed = glob.glob(os.path.join(HERE, "..", "results", "*", "*.trace.gz"))
    replayed = [r for r in data["replays"] if r["origin"] == "committed" and (r.get("events") or 0) > 0]
    if len(replayed) != len(committed):
        problems.append("%d of %d committed traces replayed with events" % (len(replayed), len(committed)))
    with open(os.path.join(out, "workloads.md"), encoding="utf-8") as summary:
        if "## The issue's targets" not in summary.read():
            problems.append("workloads.md has no targets")
    return problems


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    shutil.rmtree(args.out, ignore_errors=True)
    done = subprocess.run([sys.executable, "-B", os.path.join(HERE, "run_all.py"), "--fake", "--rounds", str(ROUNDS),
                           "--budget", "100", "--no-trace", "--out", args.out, "--build", args.build], check=False)
    if done.returncode != 0:
        print("run_all.py exited %d" % done.returncode)
        return 1
    with open(os.path.join(args.out, "workloads.json"), encoding="utf-8") as file:
        data = json.load(file)
    problems = problems_of(data, args.out)
    for problem in problems:
        print("FAIL " + problem)
    if not problems:
        print("PASS %d runs, %d replays" % (len(data["runs"]), len(data["replays"])))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
