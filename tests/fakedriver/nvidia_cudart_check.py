#!/usr/bin/env python3
"""Runs a program linked to NVIDIA's cudart 13 over the fake driver with STREAMPOOL_FAKE_TRACE=1 and
checks what the fake's trace shows of cudart's start:
  - cudart found the fake (cuInit answered 0) and ran to the end of its program (exit 0, its first
    line printed): an unanswered query or a missing entry point would crash or stop it earlier;
  - every entry point cudart asked cuGetProcAddress for resolved (more than 350 of them), except the
    names streampool hooks that the fake leaves out on purpose (src/interpose/hooked_symbols.txt).
It prints the export tables cudart asked for and the runtime's first answer, which say how far
NVIDIA's cudart gets over the fake (src/fakedriver/api_export_table.cpp: not past its driver
software-validity check).

usage: nvidia_cudart_check.py <program> <fake libcuda.so.1> <hooked_symbols.txt> [<libstreampool.so>]
With libstreampool.so, the program runs under streampool's preload (LD_PRELOAD) with
STREAMPOOL_LIBCUDA naming the fake, NVIDIA's cudart above both.
"""
import os
import re
import subprocess
import sys

QUERY = re.compile(r"^fakecuda: cuGetProcAddress(?:_v2)?\(([^,]*), (\d+), (\d+)\) -> (\d+)$")


def main() -> int:
    program, fake, hooked_path = sys.argv[1:4]
    preload = sys.argv[4] if len(sys.argv) > 4 else None
    hooked = set()
    with open(hooked_path, encoding="utf-8") as hooked_file:
        for line in hooked_file:
            line = line.split("#", 1)[0].strip()
            if line:
                hooked.add(line.split()[0])
    environment = dict(os.environ, STREAMPOOL_FAKE_TRACE="1", LD_LIBRARY_PATH=os.path.dirname(fake))
    if preload:
        environment.update(LD_PRELOAD=preload, STREAMPOOL_LIBCUDA=fake)
    run = subprocess.run([program], env=environment, capture_output=True, text=True, timeout=60, check=False)
    trace = run.stderr.splitlines()
    failures = []
    if run.returncode != 0:
        failures.append(f"the program exited with {run.returncode}")
    if not run.stdout.startswith("cudaGetDeviceCount -> "):
        failures.append("the program printed no answer of cudaGetDeviceCount")
    if "fakecuda: cuInit -> 0" not in trace:
        failures.append("cudart did not initialise the fake driver (no 'cuInit -> 0' in the trace)")
    queries = 0
    for line in trace:
        match = QUERY.match(line)
        if not match or not match.group(1):
            continue  # not a query, or the "" probe (NOT_FOUND by design)
        queries += 1
        name, version, flags, result = match.groups()
        if result != "0" and name not in hooked:
            failures.append(f"cuGetProcAddress({name}, {version}, {flags}) answered {result}")
    if queries < 350:
        failures.append(f"only {queries} cuGetProcAddress queries reached the fake (cudart 13 makes about 440)")
    tables = [line.split("(", 1)[1].rsplit(")", 1)[0] for line in trace if line.startswith("fakecuda: cuGetExportTable(")]
    print(f"{queries} entry points queried; export tables asked for: {', '.join(tables) or 'none'}")
    print(f"program: {run.stdout.strip()}")
    for failure in failures:
        print(f"FAIL: {failure}")
    if failures:
        print("trace tail:\n" + "\n".join(trace[-20:]))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
