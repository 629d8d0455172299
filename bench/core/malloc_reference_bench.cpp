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

}  // namespace
}  // namespace streampool::corebench
