#!/usr/bin/env bash
# Installs what the build needs where it is missing (Debian/Ubuntu), then configures the build.
# Usage: tools/setup.sh [build-dir] [extra cmake args...]
set -euo pipefail
build_dir=${1:-build}
shift || true

missing=()
command -v cmake >/dev/null || missing+=(cmake)
command -v ninja >/dev/null || missing+=(ninja-build)
command -v g++ >/dev/null || missing+=(g++)
command -v python3 >/dev/null || missing+=(python3)
command -v pkg-config >/dev/null || missing+=(pkg-config)  # tests/package builds with the .pc files
[ -e /usr/include/gtest/gtest.h ] || missing+=(libgtest-dev)
[ -e /usr/include/benchmark/benchmark.h ] || missing+=(libbenchmark-dev)
# A clang build (CXX=clang++, as tools/run-fuzz.sh configures one) needs clang, and the fuzz build
# libFuzzer's and the sanitizers' runtimes (libclang-rt-dev).
if [[ "${CXX:-}" == clang* ]]; then
  command -v "$CXX" >/dev/null || missing+=(clang)
  fuzzer_runtime=$("$CXX" -print-file-name=libclang_rt.fuzzer-x86_64.a 2>/dev/null || true)
  [ -e "$fuzzer_runtime" ] || missing+=(libclang-rt-dev)
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq "${missing[@]}"
  else sudo apt-get update -qq && sudo apt-get install -y -qq "${missing[@]}"; fi
fi
cuda_root=${CUDA_HOME:-/usr/local/cuda}
if [ ! -e "$cuda_root/include/cuda.h" ]; then
  echo "setup: CUDA 13 toolkit headers not found under $cuda_root (set CUDA_HOME)" >&2
  exit 1
fi
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S "$(dirname "$0")/.." -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DCUDAToolkit_ROOT="$cuda_root" "$@" >/dev/null
