#!/usr/bin/env python3
"""Reduces a program's output to what must be the same on NVIDIA's driver alone and under streampool.

    normalise_output.py [--mode full|result|nonumbers] [--replace TEXT=TOKEN]... FILE...

Reads the files (standard output and standard error of one run), and prints their lines sorted:
threads, callbacks and kernel printf interleave differently from run to run, so line order is not
compared, only which lines there are. Before sorting, each line is reduced:
  - every --replace TEXT becomes TOKEN (the run's own folder, which differs between the two runs);
  - hex addresses (0x and 6 or more digits) become 0xADDR;
  - on a line that speaks of a measurement (time, ms, bandwidth, GB/s, throughput, clock, free
    memory, process ids ...) every number becomes '#': these legitimately differ between runs;
  - on the other lines, every number with a fraction or an exponent is rounded to 3 significant
    digits: reductions that add floating point numbers in an order the scheduler picks (atomics,
    library kernels) may change the last digits from run to run, a wrong result changes more;
  - runs of blanks become one blank; empty lines are dropped.
--mode result keeps only the lines that report a result (PASS, FAIL, Result, error, mismatch,
waived, test ...), for programs whose other lines are all measurements.
--mode nonumbers turns every number into '#': for programs that print random inputs, thread or
block numbers the scheduler picks, or measurements without units.
"""
import argparse
import re
import sys

MEASUREMENT = re.compile(
    r"time|elapsed|\b(ms|msec|usec|us|ns|sec|secs|seconds?)\b|\d(ms|us|ns|s)\b|"
    r"[GMKT]i?B/s|[GMKT]?bytes/s|bandwidth|throughput|flop|\btops\b|perf|speed|latency|clock|cycles|"
    r"/s\b|/sec|per second|[MG]Hz|iterations while|\bpid\b|process id|shm|duration|"
    r"mupdates|options/s|samples/s|free",
    re.IGNORECASE)
RESULT = re.compile(
    r"pass|fail|result|error|mismatch|waiv|correct|verif|valid|test|success|differ|&&&&|exit|abort",
    re.IGNORECASE)
HEX = re.compile(r"0x[0-9a-fA-F]{6,}")
NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
FLOAT = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)|[-+]?(?:\d+\.\d*|\.\d+)")
BLANKS = re.compile(r"\s+")


def round_float(match):
    text = match.group(0)
    try:
        value = float(text)
    except ValueError:
        return text
    if value == 0.0:
        return "0"
    return "%.3g" % value


def normalise_line(line, replacements, nonumbers=False):
    for text, token in replacements:
        if text:
            line = line.replace(text, token)
    line = HEX.sub("0xADDR", line)
    if nonumbers or MEASUREMENT.search(line):
        line = NUMBER.sub("#", line)
    else:
        line = FLOAT.sub(round_float, line)
    return BLANKS.sub(" ", line).strip()


def normalise(lines, mode, replacements):
    kept = []
    for raw in lines:
        line = raw.rstrip("\r\n")
        if mode == "result" and not RESULT.search(line):
            continue
        line = normalise_line(line, replacements, mode == "nonumbers")
        if line:
            kept.append(line)
    return sorted(kept)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("full", "result", "nonumbers"), default="full")
    parser.add_argument("--replace", action="append", default=[], metavar="TEXT=TOKEN")
    parser.add_argument("files", nargs="*")
    args = parser.parse_args(argv)
    replacements = []
    for item in args.replace:
        text, _, token = item.partition("=")
        replacements.append((text, token))
    # Longest first, so that a folder and its parent both get replaced correctly.
    replacements.sort(key=lambda pair: -len(pair[0]))
    lines = []
    for name in args.files:
        with open(name, encoding="utf-8", errors="replace") as handle:
            lines.extend(handle.readlines())
    for line in normalise(lines, args.mode, replacements):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
