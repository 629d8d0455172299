"""Runs every workload under every allocator, interleaved, within a time budget, and writes what
it has after every process:

  OUT/workloads.json   every measurement of every process (the summary reads only this)
  OUT/workloads.md     the summary: medians, ratios, the issue's targets (summarize.py)
  OUT/workloads.log    what ran, in order, with each process's exit status and wall time
  OUT/logs/            each process's output and streampool's stats reports
  OUT/traces/          the traces recorded by the traced processes, compressed

Round r runs the PyTorch allocators rotated by r (A B C D, B C D A, ...), then the JAX ones
likewise, each in a process of its own. Before the rounds one unmeasured JAX process fills the
persistent compilation cache, so that no measured process compiles. After them, when time is
left, one more PyTorch and one more JAX process run under streampool with STREAMPOOL_TRACE (not
measured: tracing costs time per call), and every trace, these and those committed under
bench/results/, is replayed on the CPU through the engine (`streampool replay --json`, three
times each): events per second.

The device's used memory is sampled here every 2 ms through NVML (device_memory.Sampler); each
phase's highest sample minus the settled start becomes device_peak_sampled_bytes, and
device_peak_bytes is the higher of it and the process's own step-boundary figure.

Budget: a process is started only when its expected time (the longest of its framework so far, or
a first guess) fits in what is left less a reserve for the replays and the summary, and is killed
past what is left. --scale auto shrinks steps, tokens and requests when the budget is short of a
full run's estimate.

    run_all.py --out DIR --build BUILD_DIR [--budget SECONDS] [--rounds 3] [--smoke] [--fake]
               [--frameworks torch,jax,replay] [--pluggable] [--scale auto|S] [--no-trace]
               [--streampool-setting NAME=VALUE ...]
"""
import argparse
import glob
import gzip
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import allocators
import device_memory
import summarize
import workload_io as io

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

# First guesses of one process's wall time (s) before any has run, and a full run's split into a
# fixed part (imports, CUDA start, model building) and a part that scales with --scale.
FIRST_GUESS = {"torch": 90.0, "jax": 60.0}
FIXED_S = {"torch": 14.0, "jax": 10.0}
SCALED_S = {"torch": 16.0, "jax": 6.0}
SMOKE_GUESS = {"torch": 30.0, "jax": 25.0}
FAKE_GUESS = {"torch": 5.0, "jax": 5.0}
RESERVE_S = 20.0  # replays, summary, archive
REPLAY_REPEATS = 3


class Run:
    def __init__(self, args):
        self.args = args
        self.started = time.monotonic()
        self.deadline = self.started + args.budget
        self.out = os.path.abspath(args.out)
        self.logs = os.path.join(self.out, "logs")
        os.makedirs(self.logs, exist_ok=True)
        self.log_file = open(os.path.join(self.out, "workloads.log"), "a", encoding="utf-8")
        build = os.path.abspath(args.build)
        self.streampool_cli = os.path.join(build, "bin", "streampool")
        self.paths = allocators.Paths(
            preload=os.path.join(build, "interpose", "libstreampool.so"),
            pluggable=os.path.join(build, "pluggable", "libstreampool_alloc.so"),
            python_package=os.path.join(REPO, "python"),
            fake_driver=os.path.join(build, "fakecuda", "libcuda.so.1") if args.fake else None)
        self.nvml = device_memory.Nvml() if not args.fake else None
        self.sampler = device_memory.Sampler(self.nvml) if self.nvml is not None else None
        self.durations = {"torch": [], "jax": []}
        self.compile_cache = tempfile.mkdtemp(prefix="jax-cache-")
        self.trace_dir = tempfile.mkdtemp(prefix="workload-traces-")
        self.data = {"meta": self.meta(), "runs": [], "skipped": [], "traced": [], "replays": []}

    def meta(self):
        args = self.args
        configs = {}
        for allocator in allocators.torch_allocators(args.pluggable) + allocators.JAX:
            configs["%s/%s" % (allocator.framework, allocator.name)] = allocators.described(allocator)
        return {"started_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()), "budget_s": args.budget,
                "rounds": args.rounds, "smoke": args.smoke, "fake": args.fake, "scale": None,
                "frameworks": args.frameworks, "python": args.python, "host": platform.node(),
                "cpus": os.cpu_count(), "configurations": configs,
                "streampool_settings": dict(args.streampool_setting),
                "nvml": None}

    # --- bookkeeping -------------------------------------------------------------------------
    def left(self):
        return self.deadline - time.monotonic()

    def say(self, line):
        stamped = "[%6.1f s] %s" % (time.monotonic() - self.started, line)
        print(stamped, flush=True)
        self.log_file.write(stamped + "\n")
        self.log_file.flush()

    def save(self):
        """workloads.json and workloads.md as they stand (written after every process)."""
        path = os.path.join(self.out, "workloads.json")
        with open(path + ".new", "w", encoding="utf-8") as file:
            json.dump(self.data, file, indent=1, sort_keys=True)
        os.replace(path + ".new", path)
        try:
            with open(os.path.join(self.out, "workloads.md"), "w", encoding="utf-8") as file:
                file.write(summarize.markdown(self.data))
        except Exception as error:  # pylint: disable=broad-except; the JSON is what must survive
            self.say("summary failed: %s: %s" % (type(error).__name__, error))

    def expected(self, framework):
        """A process's expected wall time: the median of its framework's so far (the first one
        also pays for a cold page cache; the kill limit keeps a slow one inside the budget)."""
        seen = self.durations[framework]
        if seen:
            return statistics.median(seen)
        if self.args.fake:
            return FAKE_GUESS[framework]
        return (SMOKE_GUESS if self.args.smoke else FIRST_GUESS)[framework]

    def choose_scale(self, frameworks):
        if self.args.scale != "auto":
            return float(self.args.scale)
        if self.args.smoke or self.args.fake:
            return 1.0
        counts = {"torch": len(allocators.torch_allocators(self.args.pluggable)), "jax": len(allocators.JAX)}
        processes = {f: counts[f] * self.args.rounds + (1 if f == "jax" else 0) for f in frameworks}
        fixed = sum(FIXED_S[f] * n for f, n in processes.items())
        scaled = sum(SCALED_S[f] * n for f, n in processes.items())
        room = self.left() - RESERVE_S - fixed
        if scaled <= 0 or room >= scaled:
            return 1.0
        return max(0.2, room / scaled)

    # --- one process -------------------------------------------------------------------------
    def command(self, allocator, scale):
        script = {"torch": "torch_workloads.py", "jax": "jax_workloads.py"}[allocator.framework]
        if self.args.fake:
            command = [self.args.python, os.path.join(HERE, "fake_workloads.py"), "--framework", allocator.framework]
        else:
            command = [self.args.python, os.path.join(HERE, script)]
        command += ["--allocator", allocator.name, "--scale", "%.3f" % scale]
        if self.args.smoke:
            command.append("--smoke")
        if allocator.framework == "jax":
            command += ["--compile-cache", self.compile_cache]
        return command

    def launch(self, allocator, tag, scale, trace=False, measured=True):
        """Runs one workload process to its end, to three times its expected time, or to what is
        left of the budget. Returns its record (exit status, wall time, results with the sampled
        peaks), or None if skipped. trace: under STREAMPOOL_TRACE (streampool's configurations);
        measured: its wall time counts towards what later processes are expected to take."""
        expected = self.expected(allocator.framework)
        room = self.left() - RESERVE_S
        if room < expected:
            self.data["skipped"].append({"tag": tag, "why": "budget: %.0f s left, %.0f s expected" % (room, expected)})
            self.say("SKIP %s (budget: %.0f s left, about %.0f s needed)" % (tag, room, expected))
            return None
        stats = os.path.join(self.logs, tag + ".stats.%p.json")
        trace_path = os.path.join(self.trace_dir, tag + ".%p.trace") if trace else None
        env = allocators.environment(allocator, self.paths, os.environ, stats, trace_path,
                                     dict(self.args.streampool_setting))
        log_path = os.path.join(self.logs, tag + ".log")
        command = self.command(allocator, scale)
        limit = min(room, max(60.0, 3 * max(self.durations[allocator.framework] or [expected])))
        self.say("RUN  %s: %s (%s; limit %.0f s)" % (tag, " ".join(os.path.basename(c) for c in command[1:2]),
                                                   allocators.described(allocator), limit))
        if self.sampler is not None:
            self.sampler.take()
        began = time.monotonic()
        with open(log_path, "w", encoding="utf-8") as log:
            log.write("$ %s\n" % " ".join(command))
            log.flush()
            process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=HERE,
                                       start_new_session=True)
            try:
                status = process.wait(timeout=limit)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
                status = "killed after %.0f s" % limit
        wall = time.monotonic() - began
        samples = self.sampler.take() if self.sampler is not None else []
        with open(log_path, encoding="utf-8", errors="replace") as log:
            parsed = io.parse_lines(log)
        self.attach_peaks(parsed, samples)
        record = {"tag": tag, "framework": allocator.framework, "allocator": allocator.name, "status": status,
                  "wall_s": wall, "results": parsed["results"], "errors": parsed["errors"],
                  "samples": len(samples), "log": os.path.relpath(log_path, self.out)}
        if allocator.preload:
            record["streampool_served"] = self.served(tag)
        if measured:
            self.durations[allocator.framework].append(wall)
        errors = "; ".join("%s: %s" % (e.get("workload"), e.get("error")) for e in parsed["errors"])
        self.say("%s %s: exit %s, %.1f s, %d results%s%s" % (
            "DONE" if status == 0 and not parsed["errors"] else "FAIL", tag, status, wall, len(parsed["results"]),
            ", errors: " + errors if errors else "",
            ", " + record["streampool_served"]["line"] if allocator.preload else ""))
        if status != 0 or parsed["errors"]:
            with open(log_path, encoding="utf-8", errors="replace") as log:
                tail = log.readlines()[-6:]
            for line in tail:
                self.say("  | " + line.rstrip()[:300])
        return record

    @staticmethod
    def attach_peaks(parsed, samples):
        spans = {}
        for mark in parsed["marks"]:
            spans.setdefault(mark["phase"], {})[mark["edge"]] = mark["t"]
        for result in parsed["results"]:
            span = spans.get(result.get("workload"), {})
            if "begin" in span and "end" in span and samples:
                peak, count = device_memory.peak_in(samples, span["begin"], span["end"])
                result["device_peak_sampled_bytes"] = peak
                result["device_samples"] = count
            figures = [result.get(k) for k in ("device_peak_sampled_bytes", "device_peak_steps_bytes")]
            figures = [f for f in figures if isinstance(f, (int, float))]
            if figures:
                result["device_peak_bytes"] = max(figures)

    def served(self, tag):
        """Whether streampool served the process: its largest stats report through
        tools/gpu/stats_counters.py (allocations and frees counted)."""
        reports = sorted(glob.glob(os.path.join(self.logs, tag + ".stats.*.json")), key=os.path.getsize)
        if not reports:
            return {"ok": False, "line": "no stats report"}
        checker = os.path.join(REPO, "tools", "gpu", "stats_counters.py")
        done = subprocess.run([sys.executable, checker, reports[-1]], capture_output=True, text=True, check=False)
        return {"ok": done.returncode == 0, "line": " ".join(done.stdout.split())}

    # --- the plan ------------------------------------------------------------------------------
    def rounds(self, frameworks, scale):
        torch_set = allocators.torch_allocators(self.args.pluggable)
        if "jax" in frameworks:
            record = self.launch(allocators.JAX[0], "jax-compile-cache", scale, measured=False)
            if record is not None:
                self.data["compile_cache_run"] = {k: record[k] for k in ("status", "wall_s")}
            self.save()
        sets = [(f, s) for f, s in (("torch", torch_set), ("jax", allocators.JAX)) if f in frameworks]
        for round_index in range(self.args.rounds):
            # A round runs whole or not at all (after the first), so that every allocator has the
            # same number of rounds behind its median.
            needed = sum(self.expected(framework) * len(allocator_set) for framework, allocator_set in sets)
            if round_index > 0 and self.left() - RESERVE_S < needed:
                self.data["skipped"].append({"tag": "round %d" % round_index,
                                             "why": "budget: %.0f s left, %.0f s expected" % (
                                                 self.left() - RESERVE_S, needed)})
                self.say("SKIP round %d and later (budget: %.0f s left, about %.0f s needed)" % (
                    round_index, self.left() - RESERVE_S, needed))
                break
            for framework, allocator_set in sets:
                for position, allocator in enumerate(allocators.rotated(allocator_set, round_index)):
                    tag = "%s-%s-r%d" % (framework, allocator.name, round_index)
                    record = self.launch(allocator, tag, scale)
                    if record is not None:
                        record["round"] = round_index
                        record["position"] = position
                        self.data["runs"].append(record)
                    self.save()

    def traced(self, frameworks, scale):
        """One more process per framework under streampool with STREAMPOOL_TRACE, for the replay."""
        for framework, allocator in (("torch", allocators.TORCH[3]), ("jax", allocators.JAX[2])):
            if framework not in frameworks:
                continue
            record = self.launch(allocator, "%s-streampool-traced" % framework, scale, trace=True, measured=False)
            if record is not None:
                record["traces"] = sorted(os.path.basename(p) for p in glob.glob(
                    os.path.join(self.trace_dir, "%s-streampool-traced.*.trace" % framework)))
                self.data["traced"].append(record)
            self.save()

    def replays(self):
        if not os.access(self.streampool_cli, os.X_OK):
            self.say("SKIP replay (no %s)" % self.streampool_cli)
            return
        traces = []
        for committed in sorted(glob.glob(os.path.join(REPO, "bench", "results", "*", "*.trace.gz"))):
            name = os.path.basename(os.path.dirname(committed)) + "/" + os.path.basename(committed)[:-3]
            plain = os.path.join(self.trace_dir, name.replace("/", "_"))
            with gzip.open(committed, "rb") as source, open(plain, "wb") as target:
                shutil.copyfileobj(source, target)
            traces.append((name, plain, "committed"))
        for recorded in sorted(glob.glob(os.path.join(self.trace_dir, "*-traced.*.trace"))):
            traces.append((os.path.basename(recorded), recorded, "recorded in this run"))
        for name, path, origin in traces:
            if self.left() < 5:
                self.data["skipped"].append({"tag": "replay " + name, "why": "budget"})
                continue
            self.data["replays"].append(self.replay(name, path, origin))
            self.save()

    def replay(self, name, path, origin):
        runs = []
        errors = []
        for _ in range(REPLAY_REPEATS):
            began = time.monotonic()
            try:
                done = subprocess.run([self.streampool_cli, "replay", path, "--json"], capture_output=True, text=True,
                                      timeout=max(5.0, min(120.0, self.left() - 2)), check=False)
            except subprocess.TimeoutExpired:
                errors.append("timed out")
                break
            wall = time.monotonic() - began
            lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
            if done.returncode != 0 or not lines:
                errors.append("exit %s: %s" % (done.returncode, done.stderr.strip()[-300:]))
                break
            figures = json.loads(lines[-1])
            runs.append({"wall_s": wall, "replay_ns": figures.get("replay_ns"), "events": figures.get("events"),
                         "peak_reserved": figures.get("peak_reserved"), "peak_used": figures.get("peak_used")})
        record = {"trace": name, "origin": origin, "bytes": os.path.getsize(path), "runs": runs, "errors": errors}
        if runs:
            events = runs[0]["events"] or 0
            engine_ns = statistics.median(r["replay_ns"] or 0 for r in runs)
            wall = statistics.median(r["wall_s"] for r in runs)
            record.update(events=events, replay_ns_median=engine_ns, wall_s_median=wall,
                          engine_events_per_s=events / (engine_ns / 1e9) if engine_ns else None,
                          wall_events_per_s=events / wall if wall else None,
                          peak_reserved=runs[0]["peak_reserved"], peak_used=runs[0]["peak_used"])
        self.say("%s replay %s: %s" % ("DONE" if runs and not errors else "FAIL", name,
                                      "%s events, %.3g events/s in the engine" % (
                                          record.get("events"), record.get("engine_events_per_s") or 0)
                                      if runs else "; ".join(errors)))
        return record

    def main(self):
        frameworks = [f for f in self.args.frameworks.split(",") if f]
        if self.nvml is None:
            self.data["meta"]["nvml"] = "not used (fake driver)"
        else:
            self.data["meta"]["nvml"] = "sampled every %.0f ms" % (self.sampler.interval_s * 1000) \
                if self.nvml.device is not None else "unavailable: %s" % self.nvml.error
            self.sampler.start()
        scale = self.choose_scale([f for f in frameworks if f in ("torch", "jax")])
        self.data["meta"]["scale"] = scale
        self.say("budget %.0f s, %d rounds, scale %.2f, frameworks %s%s%s" % (
            self.args.budget, self.args.rounds, scale, ",".join(frameworks), ", smoke" if self.args.smoke else "",
            ", fake driver" if self.args.fake else ""))
        for name, described in sorted(self.data["meta"]["configurations"].items()):
            self.say("  %-26s %s" % (name, described))
        self.say("  NVML: %s" % self.data["meta"]["nvml"])
        try:
            self.rounds(frameworks, scale)
            if "replay" in frameworks:
                if self.args.trace:
                    self.traced(frameworks, scale)
                self.replays()
        finally:
            if self.sampler is not None:
                self.sampler.stop()
            self.data["meta"]["finished_after_s"] = time.monotonic() - self.started
            self.save()
            shutil.rmtree(self.compile_cache, ignore_errors=True)
            self.keep_traces()
        self.say("wrote %s" % ", ".join(sorted(os.listdir(self.out))))
        return 0

    def keep_traces(self):
        """The traces recorded here, compressed into OUT/traces/ while they stay within 14 MiB
        together (a file of at most 16 MiB comes back from the GPU box; the script archives the
        folder as one), then the scratch folder goes."""
        kept = 0
        for recorded in sorted(glob.glob(os.path.join(self.trace_dir, "*-traced.*.trace")), key=os.path.getsize):
            os.makedirs(os.path.join(self.out, "traces"), exist_ok=True)
            target = os.path.join(self.out, "traces", os.path.basename(recorded) + ".gz")
            with open(recorded, "rb") as source, gzip.open(target, "wb", compresslevel=6) as packed:
                shutil.copyfileobj(source, packed)
            if kept + os.path.getsize(target) > 14 << 20:
                os.remove(target)
                self.say("trace %s left out: the traces would pass 14 MiB compressed" % os.path.basename(recorded))
            else:
                kept += os.path.getsize(target)
        shutil.rmtree(self.trace_dir, ignore_errors=True)


def setting(text):
    name, equals, value = text.partition("=")
    if not equals or not name.startswith("STREAMPOOL_"):
        raise argparse.ArgumentTypeError("NAME=VALUE with a STREAMPOOL_ name, not %r" % text)
    return name, value


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--build", required=True, help="the build folder holding interpose/libstreampool.so")
    parser.add_argument("--budget", type=float, default=500.0, help="seconds for everything (default 500)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, to check that everything runs")
    parser.add_argument("--fake", action="store_true", help="no GPU: fake_workloads.py over the fake driver")
    parser.add_argument("--frameworks", default="torch,jax,replay")
    parser.add_argument("--pluggable", action="store_true", help="also streampool as PyTorch's pluggable allocator")
    parser.add_argument("--scale", default="auto", help="steps, tokens and requests times this; auto: fit the budget")
    parser.add_argument("--no-trace", dest="trace", action="store_false", help="no traced processes for the replay")
    parser.add_argument("--streampool-setting", type=setting, action="append", default=[],
                        help="NAME=VALUE for streampool's configurations only, e.g. STREAMPOOL_RELEASE=auto")
    parser.add_argument("--python", default=sys.executable)
    return Run(parser.parse_args(argv)).main()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
