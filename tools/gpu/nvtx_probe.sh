#!/usr/bin/env bash
# Runs tools/gpu/nvtx_probe.cu's cases under compute-sanitizer memcheck (no streampool): which memory
# it accepts as an NVTX heap, and whether it then reports a write past a region. One line per case.
#   tools/gpu/nvtx_probe.sh OUTDIR
set -u
out=${1:?usage: nvtx_probe.sh OUTDIR}
mkdir -p "$out"
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
nvcc -std=c++17 -arch=sm_90 -I/usr/local/cuda/include "$repo/tools/gpu/nvtx_probe.cu" -o "$out/nvtx_probe" -lcuda \
  >"$out/probe-build.log" 2>&1 || { echo "FAIL nvtx-probe build"; cat "$out/probe-build.log"; exit 1; }
for what in malloc pool vmm vmm-late vmm-ascii; do
  compute-sanitizer --tool memcheck --nvtx yes --print-limit 5 "$out/nvtx_probe" "$what" >"$out/probe-$what.txt" 2>&1
  echo "probe $what: $(grep -c 'Invalid __global__ write' "$out/probe-$what.txt") invalid writes, $(grep -c 'Warning: Call to nvtx' "$out/probe-$what.txt") refused NVTX calls ($(grep -m1 -o 'Warning: Call to nvtx[A-Za-z]* failed: .*' "$out/probe-$what.txt")) | $(grep -m1 "^$what:" "$out/probe-$what.txt")"
done
