// The same-stream fast path: allocate 1 MiB and free it again on one stream of one pool. After
// the first pair this is always an exact-size hit in the stream's cache of recent frees.
// Targets: <= 40 ns per pair, and at most 1.5x glibc's malloc(64)+free pair of the same run
// (BM_GlibcMalloc64FreePair; summarize.py gives the ratio). items_processed counts pairs.
#include <benchmark/benchmark.h>

#include "bench_engine.hpp"

namespace streampool::corebench {
namespace {

void BM_AllocFree1MiBOneStream(benchmark::State& state) {
  BenchEngine bench;
  const core::StreamKey stream = stream_for_thread(0);
  void* ptr = nullptr;
  // Warm-up outside the timing: the first allocation grows the pool.
  if (!bench.created || !core::ok(bench.engine.allocate(bench.pool, MiB, stream, &ptr)) ||
      !core::ok(bench.engine.free(ptr, stream))) {
    state.SkipWithError("engine setup failed");
    return;
  }
  bool failed = false;
  for (auto _ : state) {
    failed |= !core::ok(bench.engine.allocate(bench.pool, MiB, stream, &ptr));
    benchmark::DoNotOptimize(ptr);
    failed |= !core::ok(bench.engine.free(ptr, stream));
  }
  if (failed) state.SkipWithError("allocate or free failed");
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_AllocFree1MiBOneStream);

}  // namespace
}  // namespace streampool::corebench
