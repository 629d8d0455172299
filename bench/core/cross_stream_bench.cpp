// The producer/consumer hand-off the GPU benchmark times as "alloc s1, event record s1, wait
// s2, free s2" (target there: <= 1/3 of NVIDIA's time), here on the engine alone: allocate on
// the producer, record an event, make the consumer wait for it, free on the consumer; the host
// synchronises the consumer every 64 hand-offs, as the GPU benchmark does. The memory the
// consumer frees comes back to the producer only through that synchronisation, so the
// producer's allocations keep taking fresh memory: the pool's slow path or its refilled cache.
#include <benchmark/benchmark.h>

#include "bench_engine.hpp"

namespace streampool::corebench {
namespace {

void BM_CrossStreamHandOff(benchmark::State& state) {
  BenchEngine bench;
  const core::StreamKey producer = stream_for_thread(0);
  const core::StreamKey consumer = stream_for_thread(1);
  constexpr core::EventKey kEvent = 0xE7;
  bool failed = !bench.created || !bench.keep_all_memory();
  std::size_t handoffs = 0;
  for (auto _ : state) {
    void* ptr = nullptr;
    failed |= !core::ok(bench.engine.allocate(bench.pool, MiB, producer, &ptr));
    bench.engine.event_recorded(kEvent, producer);
    bench.engine.stream_waited(consumer, kEvent);
    failed |= !core::ok(bench.engine.free(ptr, consumer));
    if (++handoffs % 64 == 0) {
      const core::SyncTicket ticket = bench.engine.ticket_for_stream(consumer, /*releases=*/true);
      bench.ordering.complete_all();
      bench.engine.commit(ticket);
    }
  }
  if (failed) state.SkipWithError("allocate or free failed");
  state.SetItemsProcessed(state.iterations());
  state.counters["peak_reserved_mib"] = static_cast<double>(bench.engine.stats(bench.pool).reserved_high) / MiB;
}
BENCHMARK(BM_CrossStreamHandOff);

}  // namespace
}  // namespace streampool::corebench
