// Growth in a burst, over the in-memory doubles: from an empty pool, 1 GiB allocated on one stream
// in pieces of the benchmark's argument (2 MiB, 64 MiB), all freed, the stream synchronized and
// the pool trimmed to 0. A model's first prefill is such a burst. What it costs on a GPU is the
// driver's maps (tens of microseconds each, driver-behaviour.md), so the counters that matter are
// maps_per_GiB and unmaps_per_GiB (the doubles only keep books: the time is the engine's own).
// NVIDIA's pool grows in 32 MiB chunks: 32 maps a GiB. bench/gpu's grow_release_1GiB_* measure
// the same on the GPU against it.
#include <benchmark/benchmark.h>

#include <vector>

#include "bench_engine.hpp"

namespace streampool::corebench {
namespace {

void BM_GrowRelease1GiB(benchmark::State& state) {
  const std::size_t piece = static_cast<std::size_t>(state.range(0)) * MiB;
  const core::StreamKey stream = stream_for_thread(0);
  BenchEngine bench;
  bool failed = !bench.created;
  std::vector<void*> blocks((std::size_t{1} << 30) / piece, nullptr);
  std::size_t maps = 0;
  std::size_t unmaps = 0;
  for (auto _ : state) {
    const std::size_t maps_before = bench.backing->map_calls();
    const std::size_t unmaps_before = bench.backing->unmap_calls();
    for (void*& block : blocks) failed |= !core::ok(bench.engine.allocate(bench.pool, piece, stream, &block));
    for (void*& block : blocks) failed |= !core::ok(bench.engine.free(block, stream));
    core::SyncTicket ticket = bench.engine.ticket_for_stream(stream, /*releases=*/true);
    bench.ordering.complete(stream);
    bench.engine.commit(ticket);
    failed |= !core::ok(bench.engine.trim_to(bench.pool, 0));
    maps += bench.backing->map_calls() - maps_before;
    unmaps += bench.backing->unmap_calls() - unmaps_before;
  }
  if (failed) {
    state.SkipWithError("allocate, free or trim failed");
    return;
  }
  const double iterations = static_cast<double>(state.iterations());
  state.counters["maps_per_GiB"] = static_cast<double>(maps) / iterations;
  state.counters["unmaps_per_GiB"] = static_cast<double>(unmaps) / iterations;
}
BENCHMARK(BM_GrowRelease1GiB)->Arg(2)->Arg(64)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace streampool::corebench
