#include "bench_main.hpp"

#include <benchmark/benchmark.h>
#include <dlfcn.h>

#include <cstring>
#include <string>

#include "random_workload.hpp"

namespace streampool::gpubench {

bool streampool_is_loaded() { return dlsym(RTLD_DEFAULT, "streampool_version") != nullptr; }

// libstreampool.so's "const char* streampool_version(void)", or "" when it is not loaded.
static std::string loaded_streampool_version() {
  using VersionFunction = const char* (*)();
  void* symbol = dlsym(RTLD_DEFAULT, "streampool_version");
  if (symbol == nullptr) return "";
  const char* version = reinterpret_cast<VersionFunction>(symbol)();
  return version == nullptr ? "" : version;
}

static bool only_listing(int argc, char** argv) {
  for (int arg = 1; arg < argc; ++arg) {
    if (std::strncmp(argv[arg], "--benchmark_list_tests", 22) == 0) return true;
  }
  return false;
}

int run_gpu_benchmarks(int argc, char** argv, const char* api_name, int (*driver_version)()) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("allocator", streampool_is_loaded() ? "streampool" : "nvidia");
  if (streampool_is_loaded()) benchmark::AddCustomContext("streampool_version", loaded_streampool_version());
  benchmark::AddCustomContext("api", api_name);
  benchmark::AddCustomContext("build_type", STREAMPOOL_GPU_BENCH_BUILD_TYPE);
  benchmark::AddCustomContext("streams", "created with the non-blocking flag");
  benchmark::AddCustomContext("random_seed", std::to_string(kRandomSeed));
  if (!only_listing(argc, argv)) {
    benchmark::AddCustomContext("cuda_driver_version", std::to_string(driver_version()));
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace streampool::gpubench
