#!/usr/bin/env bash
# Graph memory and mipmapped arrays under STREAMPOOL_LIMIT on NVIDIA's driver: graph_cap.cpp run
# alone (the driver's figures, and both oversized requests granted) and under streampool with a
# 2 GiB cap (the cap's graph and arrays figures equal the driver's, both requests refused).
#
#   tools/gpu/graph_cap_check.sh [--fake] BUILD_DIR [OUT_DIR]
#
# BUILD_DIR holds interpose/libstreampool.so (and fakecuda/libcuda.so.1 for --fake, which runs only
# the streampool half over the CPU-only fake driver). Writes OUT_DIR/graph_cap.log (default
# BUILD_DIR/graph-cap); one "PASS run" / "FAIL run" line per run; exit 1 if a step failed.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
fake=0
[[ ${1:-} == --fake ]] && { fake=1; shift; }
build=$(cd "${1:?usage: graph_cap_check.sh [--fake] BUILD_DIR [OUT_DIR]}" && pwd)
out=${2:-$build/graph-cap}
mkdir -p "$out" && out=$(cd "$out" && pwd)
log=$out/graph_cap.log
: >"$log"
cap=$((2 << 30))
cuda_home=${CUDA_HOME:-}
if [[ -z $cuda_home ]]; then
  nvcc_path=$(command -v nvcc || true)
  cuda_home=${nvcc_path:+$(dirname "$(dirname "$nvcc_path")")}
  cuda_home=${cuda_home:-/usr/local/cuda}
fi
stub_dir=$cuda_home/lib64/stubs
[[ -d $stub_dir ]] || stub_dir=$cuda_home/targets/x86_64-linux/lib/stubs
binary=$build/graph_cap
if ! g++ -std=c++17 -O2 -Wall -Werror -I"$cuda_home/include" "$here/graph_cap.cpp" -L"$stub_dir" -lcuda -ldl \
     -o "$binary" >>"$log" 2>&1; then
  echo "FAIL build (graph_cap.log)"
  exit 1
fi
failures=0
run() {
  local name=$1
  shift
  echo "=== $name: $*" >>"$log"
  if timeout -k 5 120 env "$@" "$binary" "$cap" >>"$log" 2>&1; then
    echo "PASS $name" | tee -a "$log"
  else
    echo "FAIL $name" | tee -a "$log"
    failures=$((failures + 1))
  fi
}
if [[ $fake == 1 ]]; then
  run streampool LD_PRELOAD="$build/interpose/libstreampool.so" STREAMPOOL_LIBCUDA="$build/fakecuda/libcuda.so.1" \
    STREAMPOOL_FAKE_MEMORY=64G STREAMPOOL_LIMIT=$cap
else
  run driver-alone PATH="$PATH"
  run streampool LD_PRELOAD="$build/interpose/libstreampool.so" STREAMPOOL_LIMIT=$cap
fi
grep -E '^(graph|mipmap)-' "$log"
exit $((failures > 0))
