// What tracing costs on the hottest path: cuMemAllocAsync + cuMemFreeAsync of 1 MiB on one
// stream, through libstreampool.so (preloaded over the fake driver, whose driver is never called
// on this path), with no trace and while a trace records every call. The target: on within 2x of
// off (check_overhead.py reads the JSON).
#include <benchmark/benchmark.h>
#include <cuda.h>
#include <dlfcn.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

template <class Function>
Function from_streampool(const char* name) {
  return reinterpret_cast<Function>(dlsym(RTLD_DEFAULT, name));
}

struct Driver {
  decltype(&::cuInit) init = from_streampool<decltype(&::cuInit)>("cuInit");
  decltype(&::cuDevicePrimaryCtxRetain) retain = from_streampool<decltype(&::cuDevicePrimaryCtxRetain)>("cuDevicePrimaryCtxRetain");
  decltype(&::cuCtxSetCurrent) set_current = from_streampool<decltype(&::cuCtxSetCurrent)>("cuCtxSetCurrent");
  decltype(&::cuStreamCreate) stream_create = from_streampool<decltype(&::cuStreamCreate)>("cuStreamCreate");
  decltype(&::cuMemAllocAsync) alloc = from_streampool<decltype(&::cuMemAllocAsync)>("cuMemAllocAsync");
  decltype(&::cuMemFreeAsync) free = from_streampool<decltype(&::cuMemFreeAsync)>("cuMemFreeAsync");
  int (*trace_start)(const char*) = from_streampool<int (*)(const char*)>("streampool_trace_start");
  int (*trace_stop)() = from_streampool<int (*)()>("streampool_trace_stop");
  CUstream stream = nullptr;

  bool ready() {
    if (alloc == nullptr || trace_start == nullptr) return false;
    if (stream != nullptr) return true;
    CUcontext context = nullptr;
    return init(0) == CUDA_SUCCESS && retain(&context, 0) == CUDA_SUCCESS && set_current(context) == CUDA_SUCCESS &&
           stream_create(&stream, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS;
  }
};

Driver& driver() {
  static Driver instance;
  return instance;
}

void pairs(benchmark::State& state, bool tracing) {
  Driver& cuda = driver();
  if (!cuda.ready()) {
    state.SkipWithError("run with LD_PRELOAD=libstreampool.so and STREAMPOOL_LIBCUDA naming the fake driver");
    return;
  }
  const char* target = std::getenv("TRACE_BENCH_FILE");
  const std::string path = target != nullptr ? target : "/tmp/streampool_trace_bench_" + std::to_string(getpid()) + ".trace";
  if (tracing && cuda.trace_start(path.c_str()) != 0) {
    state.SkipWithError("cannot start a trace");
    return;
  }
  CUdeviceptr pointer = 0;
  bool failed = cuda.alloc(&pointer, 1 << 20, cuda.stream) != CUDA_SUCCESS ||
                cuda.free(pointer, cuda.stream) != CUDA_SUCCESS;  // the pool grows outside the timing
  for (auto _ : state) {
    failed |= cuda.alloc(&pointer, 1 << 20, cuda.stream) != CUDA_SUCCESS;
    benchmark::DoNotOptimize(pointer);
    failed |= cuda.free(pointer, cuda.stream) != CUDA_SUCCESS;
  }
  if (tracing) {
    cuda.trace_stop();
    if (target == nullptr) unlink(path.c_str());
  }
  if (failed) state.SkipWithError("allocate or free failed");
  state.SetItemsProcessed(state.iterations());
}

void BM_SameStreamPairTracingOff(benchmark::State& state) { pairs(state, false); }
void BM_SameStreamPairTracingOn(benchmark::State& state) { pairs(state, true); }
BENCHMARK(BM_SameStreamPairTracingOff);
BENCHMARK(BM_SameStreamPairTracingOn);

#if defined(__x86_64__) || defined(__i386__)
// What one time-stamp read costs on this machine: each recorded event takes one.
void BM_TimestampRead(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(__rdtsc());
}
BENCHMARK(BM_TimestampRead);
#endif

}  // namespace

BENCHMARK_MAIN();
