#!/usr/bin/env python3
"""Compares two `pytest -v --tb=short` logs of one upstream suite: the framework's own allocator
(NATIVE) against streampool's (STREAMPOOL). Prints the outcome counts side by side, then the tests
whose outcome differs: a failure under streampool alone comes with the end of its traceback and is
marked as a limitation of every pluggable allocator where PyTorch says so ("does not yet support");
a test failing in both is the test's, not streampool's, and is only counted. A test a log does not
report (the run was cut short by its time limit) counts as "not run".

    upstream_compare.py SUITE NATIVE_LOG STREAMPOOL_LOG
Exit status: 1 if a test fails under streampool alone for another reason than the pluggable
allocator's documented limits, else 0."""
import collections
import re
import sys

OUTCOMES = ("PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL", "XPASS")
# Node ids may hold blanks (CuPy's parameterised classes: "TestX_param_0_{a=1, b=2}").
RESULT = re.compile(r"^(\S+::.+?) (" + "|".join(OUTCOMES) + r")(?= |$)(.*)$")
HEADER = re.compile(r"^_{3,} (?:ERROR at \w+ of )?(.+?) _{3,}$")
PLUGGABLE_LIMIT = ("does not yet support", "CUDAPluggableAllocator")


def read(path):
    """{test id: (outcome, detail)} and {header name: traceback lines} of one log."""
    results, tracebacks = {}, collections.defaultdict(list)
    current = None
    try:
        with open(path, encoding="utf-8", errors="replace") as log:
            lines = log.read().splitlines()
    except OSError:
        return results, tracebacks
    for line in lines:
        match = RESULT.match(line)
        if match:
            test, outcome, detail = match.groups()
            # an ERROR at teardown follows the test's PASSED line: the error counts.
            if test not in results or outcome == "ERROR":
                results[test] = (outcome, re.sub(r"\s*\[\s*\d+%\]$", "", detail).strip())
            current = None
            continue
        header = HEADER.match(line)
        if header:
            current = header.group(1)
            continue
        if line.startswith("=") and current is not None:
            current = None
        if current is not None:
            tracebacks[current].append(line)
    return results, tracebacks


def traceback_of(test, tracebacks):
    """The traceback pytest printed for a node id (its header is Class.test or test)."""
    parts = test.split("::")[1:]
    return tracebacks.get(".".join(parts)) or tracebacks.get(parts[-1]) or []


def main(argv):
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    suite, native_path, streampool_path = argv[1:]
    native, _ = read(native_path)
    streampool, streampool_tracebacks = read(streampool_path)
    tests = sorted(set(native) | set(streampool))
    print(f"## {suite}: {len(tests)} tests reported")
    print()
    print("| outcome | framework's allocator | streampool |")
    print("| --- | --- | --- |")
    for outcome in OUTCOMES + ("not run",):
        counts = [sum(1 for t in tests if log.get(t, ("not run",))[0] == outcome) for log in (native, streampool)]
        if any(counts):
            print(f"| {outcome.lower()} | {counts[0]} | {counts[1]} |")
    print()
    bad = lambda outcome: outcome in ("FAILED", "ERROR")  # noqa: E731
    ours, limits, both, better, other = [], [], [], [], []
    for test in tests:
        before = native.get(test, ("not run", ""))[0]
        after = streampool.get(test, ("not run", ""))[0]
        if bad(after) and bad(before):
            both.append(test)
        elif bad(after) and before != "not run":
            text = "\n".join(traceback_of(test, streampool_tracebacks))
            (limits if any(limit in text for limit in PLUGGABLE_LIMIT) else ours).append(test)
        elif bad(before) and after == "PASSED":
            better.append(test)
        elif before != after:
            other.append((test, before, after))
    print(f"- fail under streampool only: {len(ours)}")
    for test in ours:
        print(f"  - {test}")
        for line in traceback_of(test, streampool_tracebacks)[-15:]:
            print(f"    | {line}")
    print(f"- fail under streampool only, at a limit of every pluggable allocator (PyTorch: 'does not yet support'): {len(limits)}")
    for test in limits:
        reason = next((line.strip() for line in traceback_of(test, streampool_tracebacks)
                       if any(limit in line for limit in PLUGGABLE_LIMIT)), "")
        print(f"  - {test}: {reason[:200]}")
    print(f"- fail with both allocators (the test's, not streampool's): {len(both)}")
    for test in both:
        print(f"  - {test}")
    print(f"- fail with the framework's allocator only: {len(better)}")
    for test in better:
        print(f"  - {test}")
    print(f"- other differences (skipped in one run, not run in one): {len(other)}")
    for test, before, after in other:
        detail = streampool.get(test, ("", ""))[1] or native.get(test, ("", ""))[1]
        print(f"  - {test}: {before.lower()} -> {after.lower()} {detail[:160]}")
    skips = collections.Counter(detail[:160] for outcome, detail in streampool.values() if outcome == "SKIPPED")
    if skips:
        print("- skip reasons under streampool (count):")
        for reason, count in skips.most_common():
            print(f"  - {count}: {reason or '(none given)'}")
    return 1 if ours else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
