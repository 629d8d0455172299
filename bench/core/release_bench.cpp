// The two failure modes users report of a pool's release threshold, and the self-tuning policy
// (STREAMPOOL_RELEASE=auto) on both, over the in-memory doubles:
//   * BM_ReleaseSyncEveryIteration/<policy>: an allocation-heavy loop (eight blocks of 1..16 MiB,
//     64 MiB in all, allocated and freed) that synchronises every iteration. Threshold 0 gives the
//     pool back at each synchronisation and maps it again in the next iteration; counters:
//     maps_per_iter, unmaps_per_iter (each a driver call of tens of microseconds on a GPU; the
//     doubles only keep books, so the time per iteration here is the engine's own).
//   * BM_ReleasePhaseChange/<policy>: a first phase uses 768 MiB of a 1 GiB device, then the
//     program goes on with 16 MiB per iteration, synchronising every 100 ms (a clock the benchmark
//     moves) for two seconds; then another consumer of the device (another process) wants 512 MiB.
//     Counters: held_MiB (what the pool still holds then), other_fits (1 if the device's free
//     memory covers the other consumer).
// <policy>: threshold_0 (CUDA's default), threshold_max (UINT64_MAX, as PyTorch- or RMM-style
// pools set it), auto (the self-tuning rule, threshold never set).
#include <benchmark/benchmark.h>

#include <array>
#include <vector>

#include "bench_engine.hpp"

namespace streampool::corebench {
namespace {

enum class Policy { threshold_0, threshold_max, automatic };

struct ReleaseBench {
  explicit ReleaseBench(Policy policy, std::size_t physical_bytes = std::size_t{1} << 40) {
    if (policy == Policy::automatic) {
      core::ReleasePolicy rule = core::ReleasePolicy::self_tuning();
      rule.clock_ms = [this] { return now_ms; };
      engine.set_release_policy(std::move(rule));
    }
    testing::InMemoryBacking::Config config;
    config.physical_bytes = physical_bytes;
    auto owned = std::make_unique<testing::InMemoryBacking>(config);
    backing = owned.get();
    created = core::ok(engine.create_pool(core::PoolProps{}, std::move(owned), &pool));
    if (created && policy == Policy::threshold_max) {
      const std::uint64_t keep_all = UINT64_MAX;
      created = core::ok(engine.set_attribute(pool, core::PoolAttribute::release_threshold, &keep_all));
    }
  }
  void synchronize(core::StreamKey stream) {
    core::SyncTicket ticket = engine.ticket_for_stream(stream, /*releases=*/true);
    ordering.complete(stream);
    engine.commit(ticket);
  }
  std::uint64_t reserved() const { return engine.stats(pool).reserved_current; }

  std::uint64_t now_ms = 0;
  testing::ScriptedOrdering ordering;
  core::Engine engine{ordering};
  core::Pool* pool = nullptr;
  testing::InMemoryBacking* backing = nullptr;
  bool created = false;
};

constexpr std::array<std::size_t, 8> kLoopSizes = {4 * MiB, 16 * MiB, 1 * MiB, 8 * MiB,
                                                   12 * MiB, 2 * MiB, 6 * MiB, 15 * MiB};

void BM_ReleaseSyncEveryIteration(benchmark::State& state, Policy policy) {
  ReleaseBench bench(policy);
  const core::StreamKey stream = stream_for_thread(0);
  std::array<void*, kLoopSizes.size()> blocks{};
  bool failed = !bench.created;
  auto iteration = [&] {
    for (std::size_t i = 0; i < kLoopSizes.size(); ++i) {
      failed |= !core::ok(bench.engine.allocate(bench.pool, kLoopSizes[i], stream, &blocks[i]));
    }
    for (void* block : blocks) failed |= !core::ok(bench.engine.free(block, stream));
    bench.synchronize(stream);
  };
  iteration();  // the first growth, outside the count
  const std::size_t maps = bench.backing->map_calls();
  const std::size_t unmaps = bench.backing->unmap_calls();
  for (auto _ : state) iteration();
  if (failed) state.SkipWithError("engine setup, allocate or free failed");
  const double iterations = static_cast<double>(state.iterations());
  state.counters["maps_per_iter"] = static_cast<double>(bench.backing->map_calls() - maps) / iterations;
  state.counters["unmaps_per_iter"] = static_cast<double>(bench.backing->unmap_calls() - unmaps) / iterations;
  state.counters["held_MiB"] = static_cast<double>(bench.reserved()) / static_cast<double>(MiB);
}
BENCHMARK_CAPTURE(BM_ReleaseSyncEveryIteration, threshold_0, Policy::threshold_0);
BENCHMARK_CAPTURE(BM_ReleaseSyncEveryIteration, threshold_max, Policy::threshold_max);
BENCHMARK_CAPTURE(BM_ReleaseSyncEveryIteration, auto, Policy::automatic);

void BM_ReleasePhaseChange(benchmark::State& state, Policy policy) {
  constexpr std::size_t kDevice = 1024 * MiB;
  constexpr std::size_t kOtherConsumer = 512 * MiB;
  const core::StreamKey stream = stream_for_thread(0);
  double held = 0;
  double other_fits = 0;
  bool failed = false;
  for (auto _ : state) {
    ReleaseBench bench(policy, kDevice);
    failed |= !bench.created;
    std::vector<void*> first_phase(48);  // 48 x 16 MiB = 768 MiB
    for (void*& block : first_phase) failed |= !core::ok(bench.engine.allocate(bench.pool, 16 * MiB, stream, &block));
    for (void* block : first_phase) failed |= !core::ok(bench.engine.free(block, stream));
    bench.synchronize(stream);
    for (int step = 0; step < 20; ++step) {  // the second phase: 16 MiB, a synchronisation every 100 ms
      bench.now_ms += 100;
      void* block = nullptr;
      failed |= !core::ok(bench.engine.allocate(bench.pool, 16 * MiB, stream, &block));
      failed |= !core::ok(bench.engine.free(block, stream));
      bench.synchronize(stream);
    }
    held = static_cast<double>(bench.reserved()) / static_cast<double>(MiB);
    other_fits = kDevice - bench.backing->mapped_bytes() >= kOtherConsumer ? 1 : 0;
  }
  if (failed) state.SkipWithError("engine setup, allocate or free failed");
  state.counters["held_MiB"] = held;
  state.counters["other_fits"] = other_fits;
}
BENCHMARK_CAPTURE(BM_ReleasePhaseChange, threshold_0, Policy::threshold_0);
BENCHMARK_CAPTURE(BM_ReleasePhaseChange, threshold_max, Policy::threshold_max);
BENCHMARK_CAPTURE(BM_ReleasePhaseChange, auto, Policy::automatic);

}  // namespace
}  // namespace streampool::corebench
