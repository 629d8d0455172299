// Host threads that share one pool, each on its own stream: alloc + free of a fixed size. Only
// per-stream state should be touched, so the aggregate rate should grow with the thread count
// (NVIDIA's pool gets slower with more threads: 0.76 M pairs/s at 1 thread, 0.36 M at 16).
// items_per_second is the aggregate (UseRealTime). Target: 16 threads >= 8x one thread, on a
// machine with at least 16 cores.
//
// The engine and pool are process-wide and built once (a function-local static), so that no
// thread touches them before they exist; every run of every thread count shares them, warm.
#include <benchmark/benchmark.h>

#include <cstddef>

#include "bench_engine.hpp"

namespace streampool::corebench {
namespace {

BenchEngine& shared_engine() {
  static BenchEngine bench;
  static const bool kept = bench.keep_all_memory();
  (void)kept;
  return bench;
}

void alloc_free_own_stream(benchmark::State& state, std::size_t bytes) {
  BenchEngine& bench = shared_engine();
  const core::StreamKey stream = stream_for_thread(state.thread_index());
  void* ptr = nullptr;
  // Warm-up outside the timing: this stream's first allocation takes the pool's slow path.
  if (!bench.created || !core::ok(bench.engine.allocate(bench.pool, bytes, stream, &ptr)) ||
      !core::ok(bench.engine.free(ptr, stream))) {
    state.SkipWithError("engine setup failed");
    return;
  }
  bool failed = false;
  for (auto _ : state) {
    failed |= !core::ok(bench.engine.allocate(bench.pool, bytes, stream, &ptr));
    benchmark::DoNotOptimize(ptr);
    failed |= !core::ok(bench.engine.free(ptr, stream));
  }
  if (failed) state.SkipWithError("allocate or free failed");
  state.SetItemsProcessed(state.iterations());
}

void BM_ThreadsOwnStreams(benchmark::State& state) { alloc_free_own_stream(state, MiB); }
void BM_ThreadsOwnStreams4KiB(benchmark::State& state) { alloc_free_own_stream(state, 4 * KiB); }

BENCHMARK(BM_ThreadsOwnStreams)->ThreadRange(1, 16)->UseRealTime();
BENCHMARK(BM_ThreadsOwnStreams4KiB)->ThreadRange(1, 16)->UseRealTime();

}  // namespace
}  // namespace streampool::corebench
