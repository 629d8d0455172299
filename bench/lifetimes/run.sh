#!/usr/bin/env bash
# The full lifetimes benchmark (1,000,000 stream, 100,000 thread and 100,000 pool lifetimes)
# through libstreampool.so over a driver, written to a results file.
#
#   bench/lifetimes/run.sh <outdir> [build-dir]
#
# Writes <outdir>/lifetimes.txt: the checkpoints of each phase (time per lifetime, RSS, VmSize)
# and a line per phase saying how much RSS grew from the 2nd to the last checkpoint, checked
# against MAX_RSS_GROWTH_KIB; prints it as it runs. Minutes on a 2-core machine over the fake driver.
#
# Environment (all optional):
#   LIFETIMES_BENCH     the binary (default <build-dir>/bench/lifetimes/lifetimes_bench)
#   STREAMPOOL_LIBCUDA  the driver beneath streampool (default: the build's fake driver)
#   PRELOAD             the library to preload (default <build-dir>/interpose/libstreampool.so)
#   MAX_RSS_GROWTH_KIB  bound per phase (default 4096)
#   LIFETIMES_ARGS      more arguments, e.g. --phases=pools or --streams=100000
# Exit status: lifetimes_bench's (1 when a phase is not flat or a lifetime failed).
set -u

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(cd "$script_dir/../.." && pwd)

if [[ $# -lt 1 || $# -gt 2 ]]; then
  echo "usage: $0 <outdir> [build-dir]" >&2
  exit 2
fi
outdir=$1
build_dir=$(cd "${2:-$repo_root/build}" && pwd) || exit 2
binary=${LIFETIMES_BENCH:-$build_dir/bench/lifetimes/lifetimes_bench}
preload=${PRELOAD:-$build_dir/interpose/libstreampool.so}
driver=${STREAMPOOL_LIBCUDA:-$build_dir/fakecuda/libcuda.so.1}
bound=${MAX_RSS_GROWTH_KIB:-4096}
read -r -a extra_args <<<"${LIFETIMES_ARGS:-}"

for file in "$binary" "$preload" "$driver"; do
  if [[ ! -e $file ]]; then
    echo "$0: $file is missing (build: cmake --build <build-dir> --target lifetimes_bench)" >&2
    exit 2
  fi
done
mkdir -p "$outdir" || exit 2
results=$outdir/lifetimes.txt
rm -f "$results"  # never let an earlier run's file stand in for a run that fails now

{
  echo "# lifetimes_bench $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$repo_root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "# machine: $(nproc) cores, $(uname -sr)"
} >"$results"
# The results file names the driver relative to the build folder: it is committed, and the
# machine's own paths mean nothing elsewhere.
LD_PRELOAD=$preload STREAMPOOL_LIBCUDA=$driver \
  "$binary" --max-rss-growth-kib="$bound" "${extra_args[@]}" 2>&1 |
  sed -u "s#$build_dir#<build-dir>#g" | tee -a "$results"
exit "${PIPESTATUS[0]}"
