"""What a workload process tells run_all.py, one line on standard output each:

    MARK {"phase": "training", "edge": "begin", "t": 1234.5}     phase boundaries, time.monotonic()
    RESULT {"workload": "training", ...}                         one measurement
    ERROR {"workload": "serving", "error": "...", "trace": "..."} a workload that failed

time.monotonic() is CLOCK_MONOTONIC, one clock for every process of the machine: run_all.py keeps
the device's used memory sampled every few milliseconds from outside the process and takes the
highest sample between a phase's begin and end marks. Anything else the process prints is left in
its log. Standard library only, since run_all.py and the summary import it too."""
import argparse
import json
import sys
import time
import traceback

MARK = "MARK "
RESULT = "RESULT "
ERROR = "ERROR "


def arguments(doc):
    """The options every workload process takes (run_all.py passes them alike to each)."""
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--allocator", required=True, help="the allocator's name, as run_all.py gives it")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: checks the code, measures nothing")
    parser.add_argument("--scale", type=float, default=1.0, help="steps, tokens and requests times this")
    parser.add_argument("--seed", type=int, default=20)
    parser.add_argument("--compile-cache", default="", help="JAX's persistent compilation cache folder")
    return parser


def _emit(prefix, record):
    sys.stdout.write(prefix + json.dumps(record, sort_keys=True) + "\n")
    sys.stdout.flush()


def mark(phase, edge):
    _emit(MARK, {"phase": phase, "edge": edge, "t": time.monotonic()})


def result(record):
    _emit(RESULT, record)


def error(workload, exception):
    _emit(ERROR, {"workload": workload, "error": "%s: %s" % (type(exception).__name__, exception),
                  "trace": traceback.format_exc()})


def parse_lines(lines):
    """The marks, results and errors of a process's output, in order; other lines are skipped, and
    so is a line cut short (a process killed while writing)."""
    parsed = {"marks": [], "results": [], "errors": []}
    for line in lines:
        for prefix, key in ((MARK, "marks"), (RESULT, "results"), (ERROR, "errors")):
            if line.startswith(prefix):
                try:
                    parsed[key].append(json.loads(line[len(prefix):]))
                except ValueError:
                    pass
    return parsed


def median(values):
    ordered = sorted(values)
    if not ordered:
        return None
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def percentile(values, fraction):
    """The nearest-rank percentile (fraction 0.99: the value 99% of the samples are at or below)."""
    ordered = sorted(values)
    if not ordered:
        return None
    rank = max(1, -(-int(round(fraction * 1000)) * len(ordered) // 1000))
    return ordered[min(rank, len(ordered)) - 1]
