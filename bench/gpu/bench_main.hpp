// The main() both GPU benchmark binaries share. It labels the JSON output (context "allocator":
// "nvidia" or "streampool", "api", "cuda_driver_version") so compare.py can tell the four runs
// apart and catch a preload that did not take.
#pragma once

namespace streampool::gpubench {

// True when libstreampool.so is loaded in this process (it exports streampool_version).
bool streampool_is_loaded();

// api_name: "runtime" or "driver". driver_version() is only called when the benchmarks will run
// (not for --benchmark_list_tests), so listing needs no GPU; it returns 0 when unknown.
int run_gpu_benchmarks(int argc, char** argv, const char* api_name, int (*driver_version)());

}  // namespace streampool::gpubench
