// core_bench's main: Google Benchmark's, plus the build type in the JSON context, so that a
// summary of an unoptimised build says so (summarize.py warns on anything but Release).
#include <benchmark/benchmark.h>

#ifndef STREAMPOOL_CORE_BENCH_BUILD_TYPE
#define STREAMPOOL_CORE_BENCH_BUILD_TYPE "unknown"
#endif

int main(int argc, char** argv) {
  benchmark::AddCustomContext("streampool_build_type", STREAMPOOL_CORE_BENCH_BUILD_TYPE);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
