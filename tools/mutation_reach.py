"""Runs mutants from one schema build (tools/mutation_schema.py): each ctest test is run once with
no mutant active, recording which mutants' switches it reaches; then each mutant runs only the tests
that reach it, fastest first, until one fails.

Against a kill that is a flake: the test that failed is run again under the same mutant, and the
mutant counts as killed only if it fails again (a test that then passes is noted as flaky for that
mutant and the run goes on). A test that runs out of time (ten times its unmutated time, at least
60 s) fails.
"""

import json
import os
import shutil
import signal
import subprocess
import time


def list_tests(build_dir):
    """[(ctest number, name)] in ctest's order."""
    return [(number, name) for number, name, _ in _tests(build_dir)]


def fixture_tests(build_dir):
    """The numbers of the tests that set up or need a ctest fixture. ctest runs a fixture's setup
    once for all its tests in one invocation; each of the runner's invocations runs it again, so
    two at once would write the same files: such a test runs alone."""
    return {number for number, _, fixtures in _tests(build_dir) if fixtures}


def _tests(build_dir):
    output = subprocess.run(["ctest", "--test-dir", build_dir, "--show-only=json-v1"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, check=True).stdout
    tests = []
    for number, test in enumerate(json.loads(output)["tests"], 1):
        names = {p.get("name") for p in test.get("properties", [])}
        tests.append((number, test["name"], bool(names & {"FIXTURES_REQUIRED", "FIXTURES_SETUP", "FIXTURES_CLEANUP"})))
    return tests


class Runner:
    """One ctest test at a time per slot, `jobs` slots."""

    def __init__(self, build_dir, log, jobs=2, alone=frozenset()):
        self.build_dir = build_dir
        self.log = log
        self.jobs = jobs
        self.alone = alone  # tests that run with no other test beside them (fixture_tests)

    def _start(self, number, timeout, env):
        command = ["ctest", "--test-dir", self.build_dir, "-I", f"{number},{number}", "--timeout", str(int(timeout)),
                   "--output-on-failure"]
        return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                                start_new_session=True), time.time()

    @staticmethod
    def _stop(process):
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.communicate()

    def run(self, work, stop_at_failure=True):
        """work: [(number, timeout, env)]. Returns [(number, passed, seconds, output)] for the tests that
        ran; with stop_at_failure, no new test starts after one failed and the running ones are stopped."""
        pending = list(work)
        running = []
        done = []
        failed = False
        while pending or running:
            while pending and len(running) < self.jobs and not (failed and stop_at_failure):
                if running and (pending[0][0] in self.alone or any(r[0] in self.alone for r in running)):
                    break
                number, timeout, env = pending.pop(0)
                process, started = self._start(number, timeout + 30, env)
                running.append((number, process, started, env))
            if failed and stop_at_failure:
                for _, process, _, _ in running:
                    self._stop(process)
                break
            time.sleep(0.02)
            still = []
            for number, process, started, env in running:
                if process.poll() is None:
                    still.append((number, process, started, env))
                    continue
                output = process.communicate()[0]
                passed = process.returncode == 0
                done.append((number, passed, time.time() - started, output))
                if not passed:
                    failed = True
                    with open(self.log, "a") as out:
                        out.write(f"$ ctest -I {number},{number} ({' '.join(k + '=' + v for k, v in env.items() if k.startswith('STREAMPOOL_MUTANT'))})\n{output}\n")
            running = still
        return done


def build_copies(build_dir, count):
    """`count` copies of the build, one per extra worker: tests write their outputs in their build
    folders, so two mutants' runs of one test must not share one. Each copy's test lists (ctest's
    .cmake files) name the copy; its programs still load the libraries of the build they were
    linked in (the same files). Kept (and reused) beside the build."""
    copies = []
    for index in range(1, count + 1):
        copy = f"{build_dir}-worker{index}"
        if not os.path.isdir(copy):
            subprocess.run(["cp", "-a", build_dir, copy], check=True)
            for folder, subfolders, names in os.walk(copy):
                if "CMakeFiles" in subfolders:
                    subfolders.remove("CMakeFiles")
                for name in names:
                    # ctest's files, and the test lists gtest_discover_tests wrote beside them
                    if name.endswith(".cmake") or name == "DartConfiguration.tcl":
                        path = os.path.join(folder, name)
                        with open(path) as source:
                            text = source.read()
                        with open(path, "w") as out:
                            out.write(text.replace(build_dir + "/", copy + "/").replace(build_dir + '"', copy + '"'))
        copies.append(copy)
    return copies


def reach(build_dir, tests, reach_dir, runner, environment):
    """Runs every test with no mutant active; returns {number: (seconds, set of mutants reached)} and
    the tests that failed."""
    shutil.rmtree(reach_dir, ignore_errors=True)
    work = []
    for number, _ in tests:
        folder = os.path.join(reach_dir, str(number))
        os.makedirs(folder)
        env = dict(environment, STREAMPOOL_MUTANT_REACHED=folder)
        env.pop("STREAMPOOL_MUTANT", None)
        work.append((number, 1800, env))
    results = runner.run(work, stop_at_failure=False)
    reached, failing = {}, []
    for number, passed, seconds, _ in results:
        ids = set()
        folder = os.path.join(reach_dir, str(number))
        for name in os.listdir(folder):
            with open(os.path.join(folder, name)) as source:
                ids |= {int(line) for line in source.read().split() if line.isdigit()}
        reached[number] = (seconds, ids)
        if not passed:
            failing.append(number)
    return reached, failing


def timeout_for(seconds):
    return max(60.0, 10 * seconds)


def run_mutant(number, reached, names, runner, environment):
    """(status, failed test names, tests run, note) of mutant `number`."""
    covering = sorted((seconds, test) for test, (seconds, ids) in reached.items() if number in ids)
    if not covering:
        return "survived", [], 0, "no test reaches it"
    env = dict(environment, STREAMPOOL_MUTANT=str(number))
    env.pop("STREAMPOOL_MUTANT_REACHED", None)
    work = [(test, timeout_for(seconds), env) for seconds, test in covering]
    ran = 0
    flaky = []
    while work:
        results = runner.run(work)
        ran += len(results)
        failures = [number_ for number_, passed, _, _ in results if not passed]
        if not failures:
            return "survived", [], ran, ("flaky: " + ", ".join(flaky)) if flaky else ""
        first = failures[0]
        again = runner.run([(first, timeout_for(reached[first][0]), env)])
        ran += 1
        if again and not again[0][1]:
            return "killed", [names[first]], ran, ("flaky: " + ", ".join(flaky)) if flaky else ""
        flaky.append(names[first])
        finished = {number_ for number_, _, _, _ in results}
        work = [item for item in work if item[0] not in finished]
    return "survived", [], ran, "flaky: " + ", ".join(flaky)
