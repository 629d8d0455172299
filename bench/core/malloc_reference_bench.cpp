// The reference the same-stream pair is held to: glibc's malloc(64)+free pair, in the same
// binary on the same cores, so the ratio to BM_AllocFree1MiBOneStream means something on any
// machine (the target is at most 1.5x this pair). items_processed counts pairs.
#include <benchmark/benchmark.h>

#include <cstdlib>

namespace streampool::corebench {
namespace {

void BM_GlibcMalloc64FreePair(benchmark::State& state) {
  for (auto _ : state) {
    void* ptr = std::malloc(64);
    benchmark::DoNotOptimize(ptr);
    std::free(ptr);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_GlibcMalloc64FreePair);

// The same pair on 1..16 threads at once (glibc serves each from its own thread cache, sharing
// nothing): how far this machine's cores let a loop that shares nothing scale. The engine's
// thread rows (threads_bench.cpp) and the GPU benchmarks' thread scaling are read against it: a
// virtual machine whose 16 CPUs are 8 cores' hyper-threads stops near 8-10x here, whatever the
// allocator does. items_processed is the aggregate (UseRealTime).
void BM_GlibcMalloc64FreePairThreads(benchmark::State& state) {
  for (auto _ : state) {
    void* ptr = std::malloc(64);
    benchmark::DoNotOptimize(ptr);
    std::free(ptr);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_GlibcMalloc64FreePairThreads)->ThreadRange(1, 16)->UseRealTime();

}  // namespace
}  // namespace streampool::corebench
