// The GPU workloads, written once over an "Api" (RuntimeApi in gpu_bench_runtime.cpp, DriverApi in
// gpu_bench_driver.cpp) so that the cudart binary and the driver binary measure the same thing.
// Each binary runs twice: plain (NVIDIA's pool) and under LD_PRELOAD=libstreampool.so (streampool's
// pool); compare.py pairs the runs by the benchmark names registered here.
//
// An Api provides the types Ptr, Stream, Event, Pool, Context, Status, PoolAttribute, the
// PoolAttribute constants kReleaseThreshold, kReservedMemHigh, kUsedMemHigh, and static functions:
//   ok(Status), error_name(Status) -> const char*   (e.g. "CUDA_ERROR_OUT_OF_MEMORY")
//   open_device(Context*)        once per process: device 0, current on this thread
//   default_pool(Context, Pool*)
//   set_pool_u64(Pool, PoolAttribute, u64), get_pool_u64(Pool, PoolAttribute, u64*)
//   bind_thread(Context)         every host thread before its first call
//   stream_create(Stream*)       non-blocking stream
//   blocking_stream_create(Stream*)  a stream the legacy stream's implicit order binds
//   event_create(Event*)         timing disabled
//   alloc(Ptr*, bytes, Stream), alloc_from_pool(Ptr*, bytes, Pool, Stream), free(Ptr, Stream)
//   record(Event, Stream), wait(Stream, Event), stream_sync(Stream), device_sync()
//   trim(Pool, keep_bytes)
// Everything else (the error message, which pool attributes are set and read) is written here once.
//
// All times are wall-clock (UseRealTime), nanoseconds per iteration. The threaded workload also
// reports the counter pairs_per_second, the aggregate rate, which compare.py prefers to
// 1e9 / real_time (that holds only where Google Benchmark averages real_time over threads).
#pragma once

#include <benchmark/benchmark.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

#include "random_workload.hpp"

namespace streampool::gpubench {

inline constexpr std::size_t kOneMiB = std::size_t{1} << 20;
inline constexpr std::size_t kSmallBytes = 256;
inline constexpr int kMaxThreads = 16;
inline constexpr int kWarmupPairs = 64;
// The cross-stream pattern frees every block on the consumer stream, which the producer stream
// never waits on; without an occasional host synchronize neither pool may hand those blocks back
// to the producer and the pool would only grow. One consumer synchronize per 64 iterations bounds
// the memory at 64 MiB; it is inside the timed loop, the same for both pools.
inline constexpr std::uint32_t kCrossStreamSyncPeriod = 64;

// What one process sets up once and every workload shares.
template <class Api>
struct GpuResources {
  typename Api::Context context{};
  typename Api::Pool pool{};
  typename Api::Stream main_stream{};
  typename Api::Stream producer{};
  typename Api::Stream consumer{};
  typename Api::Event handoff{};
  std::array<typename Api::Stream, kMaxThreads> thread_streams{};
  std::string open_error;  // empty when everything above is valid
};

// What a failed call reports: "what: ERROR_NAME (number)".
template <class Api>
std::string describe(typename Api::Status status, const char* what) {
  return std::string(what) + ": " + Api::error_name(status) + " (" + std::to_string(static_cast<int>(status)) + ")";
}

template <class Api>
std::string open_resources(GpuResources<Api>& gpu) {
  auto failed = [](typename Api::Status status, const char* what) {
    return Api::ok(status) ? std::string() : describe<Api>(status, what);
  };
  std::string error = failed(Api::open_device(&gpu.context), "open device 0");
  if (!error.empty()) return error;
  if (error = failed(Api::default_pool(gpu.context, &gpu.pool), "get the default pool"); !error.empty()) return error;
  // Keep everything: RELEASE_THRESHOLD = UINT64_MAX.
  if (error = failed(Api::set_pool_u64(gpu.pool, Api::kReleaseThreshold, std::numeric_limits<std::uint64_t>::max()),
                     "set RELEASE_THRESHOLD");
      !error.empty()) {
    return error;
  }
  for (auto* stream : {&gpu.main_stream, &gpu.producer, &gpu.consumer}) {
    if (error = failed(Api::stream_create(stream), "stream create"); !error.empty()) return error;
  }
  for (auto& stream : gpu.thread_streams) {
    if (error = failed(Api::stream_create(&stream), "stream create"); !error.empty()) return error;
  }
  return failed(Api::event_create(&gpu.handoff), "event create");
}

// Opened on first use, not in main(), so --benchmark_list_tests needs no GPU.
template <class Api>
GpuResources<Api>& resources() {
  static GpuResources<Api> gpu;
  static std::once_flag opened;
  std::call_once(opened, [] { gpu.open_error = open_resources(gpu); });
  return gpu;
}

template <class Api>
bool succeeded(benchmark::State& state, typename Api::Status status, const char* what) {
  if (Api::ok(status)) [[likely]] return true;
  state.SkipWithError(describe<Api>(status, what).c_str());
  return false;
}

// Resources open and this host thread bound to the device.
template <class Api>
GpuResources<Api>* ready_gpu(benchmark::State& state) {
  GpuResources<Api>& gpu = resources<Api>();
  if (!gpu.open_error.empty()) {
    state.SkipWithError(gpu.open_error.c_str());
    return nullptr;
  }
  if (!succeeded<Api>(state, Api::bind_thread(gpu.context), "bind thread")) return nullptr;
  return &gpu;
}

template <class Api>
bool warm_up(benchmark::State& state, typename Api::Stream stream, std::size_t bytes) {
  for (int pair = 0; pair < kWarmupPairs; ++pair) {
    typename Api::Ptr block{};
    if (!succeeded<Api>(state, Api::alloc(&block, bytes, stream), "warm-up alloc")) return false;
    if (!succeeded<Api>(state, Api::free(block, stream), "warm-up free")) return false;
  }
  return succeeded<Api>(state, Api::stream_sync(stream), "warm-up synchronize");
}

// Everything freed and synchronized, the pool trimmed to nothing and both high watermarks reset,
// so the peaks a workload reports are its own.
template <class Api>
bool start_from_empty_pool(benchmark::State& state, GpuResources<Api>& gpu) {
  return succeeded<Api>(state, Api::device_sync(), "device synchronize") &&
         succeeded<Api>(state, Api::trim(gpu.pool, 0), "trim to 0") &&
         succeeded<Api>(state, Api::set_pool_u64(gpu.pool, Api::kReservedMemHigh, 0), "reset high watermarks") &&
         succeeded<Api>(state, Api::set_pool_u64(gpu.pool, Api::kUsedMemHigh, 0), "reset high watermarks");
}

template <class Api>
void report_peaks(benchmark::State& state, GpuResources<Api>& gpu) {
  std::uint64_t reserved_high = 0;
  std::uint64_t used_high = 0;
  if (!succeeded<Api>(state, Api::get_pool_u64(gpu.pool, Api::kReservedMemHigh, &reserved_high),
                      "get RESERVED_MEM_HIGH")) {
    return;
  }
  if (!succeeded<Api>(state, Api::get_pool_u64(gpu.pool, Api::kUsedMemHigh, &used_high), "get USED_MEM_HIGH")) return;
  state.counters["peak_reserved"] = static_cast<double>(reserved_high);
  state.counters["peak_used"] = static_cast<double>(used_high);
  state.counters["frag_ratio"] =
      used_high == 0 ? 0.0 : static_cast<double>(reserved_high) / static_cast<double>(used_high);
}

// (a) alloc + free of one size on one stream.
template <class Api, std::size_t kBytes>
void pair_one_stream(benchmark::State& state) {
  GpuResources<Api>* gpu = ready_gpu<Api>(state);
  if (gpu == nullptr || !warm_up<Api>(state, gpu->main_stream, kBytes)) return;
  for (auto _ : state) {
    typename Api::Ptr block{};
    if (!succeeded<Api>(state, Api::alloc(&block, kBytes, gpu->main_stream), "alloc")) break;
    if (!succeeded<Api>(state, Api::free(block, gpu->main_stream), "free")) break;
  }
  succeeded<Api>(state, Api::stream_sync(gpu->main_stream), "synchronize");
}

// (a') the same through the explicit-pool entry, on the default pool.
template <class Api>
void pair_from_pool(benchmark::State& state) {
  GpuResources<Api>* gpu = ready_gpu<Api>(state);
  if (gpu == nullptr || !warm_up<Api>(state, gpu->main_stream, kOneMiB)) return;
  for (auto _ : state) {
    typename Api::Ptr block{};
    if (!succeeded<Api>(state, Api::alloc_from_pool(&block, kOneMiB, gpu->pool, gpu->main_stream),
                        "alloc from pool")) {
      break;
    }
    if (!succeeded<Api>(state, Api::free(block, gpu->main_stream), "free")) break;
  }
  succeeded<Api>(state, Api::stream_sync(gpu->main_stream), "synchronize");
}

// (b) the random-size workload; one iteration = one free + one alloc of the fixed sequence.
template <class Api>
void random_sizes(benchmark::State& state) {
  GpuResources<Api>* gpu = ready_gpu<Api>(state);
  if (gpu == nullptr || !start_from_empty_pool<Api>(state, *gpu)) return;
  const RandomWorkload& work = random_workload();
  std::vector<typename Api::Ptr> live(kRandomLiveSlots, typename Api::Ptr{});
  bool filled = true;
  for (std::size_t slot = 0; slot < kRandomLiveSlots && filled; ++slot) {
    filled = succeeded<Api>(state, Api::alloc(&live[slot], work.initial_bytes[slot], gpu->main_stream),
                            "initial alloc");
  }
  std::size_t op = 0;
  if (filled) {
    for (auto _ : state) {
      const std::size_t slot = work.victim_slot[op];
      if (!succeeded<Api>(state, Api::free(live[slot], gpu->main_stream), "free")) break;
      live[slot] = typename Api::Ptr{};
      if (!succeeded<Api>(state, Api::alloc(&live[slot], work.next_bytes[op], gpu->main_stream), "alloc")) {
        break;
      }
      op = op + 1 == kRandomOperations ? 0 : op + 1;  // only wraps if run with more iterations
    }
  }
  if (!state.error_occurred()) report_peaks<Api>(state, *gpu);
  for (auto block : live) {
    if (block != typename Api::Ptr{}) (void)Api::free(block, gpu->main_stream);
  }
  (void)Api::stream_sync(gpu->main_stream);
}

// (c) every host thread on its own stream; aggregate pairs per second in "pairs_per_second".
template <class Api>
void threads_pair(benchmark::State& state) {
  GpuResources<Api>* gpu = ready_gpu<Api>(state);
  if (gpu == nullptr) return;
  const typename Api::Stream stream = gpu->thread_streams[static_cast<std::size_t>(state.thread_index())];
  if (!warm_up<Api>(state, stream, kOneMiB)) return;
  const auto started = std::chrono::steady_clock::now();
  for (auto _ : state) {
    typename Api::Ptr block{};
    if (!succeeded<Api>(state, Api::alloc(&block, kOneMiB, stream), "alloc")) break;
    if (!succeeded<Api>(state, Api::free(block, stream), "free")) break;
  }
  // Each thread's own rate over its own wall time (the loop's start and stop barriers included);
  // Google Benchmark sums counters over threads, so this is the aggregate whatever its version
  // does with real_time for threaded runs.
  const std::chrono::duration<double> wall = std::chrono::steady_clock::now() - started;
  state.counters["pairs_per_second"] =
      wall.count() > 0.0 ? static_cast<double>(state.iterations()) / wall.count() : 0.0;
  state.SetItemsProcessed(state.iterations());
  succeeded<Api>(state, Api::stream_sync(stream), "synchronize");
}

// (d) alloc on the producer, event record there, the consumer waits on it and frees.
template <class Api>
void cross_stream_event(benchmark::State& state) {
  GpuResources<Api>* gpu = ready_gpu<Api>(state);
  if (gpu == nullptr || !start_from_empty_pool<Api>(state, *gpu)) return;
  auto handoff_once = [&] {
    typename Api::Ptr block{};
    return succeeded<Api>(state, Api::alloc(&block, kOneMiB, gpu->producer), "alloc on producer") &&
           succeeded<Api>(state, Api::record(gpu->handoff, gpu->producer), "event record") &&
           succeeded<Api>(state, Api::wait(gpu->consumer, gpu->handoff), "stream wait event") &&
           succeeded<Api>(state, Api::free(block, gpu->consumer), "free on consumer");
  };
  for (std::uint32_t warm = 0; warm < kCrossStreamSyncPeriod; ++warm) {
    if (!handoff_once()) return;
  }
  if (!succeeded<Api>(state, Api::stream_sync(gpu->consumer), "warm-up synchronize")) return;
  std::uint32_t since_sync = 0;
  for (auto _ : state) {
    if (!handoff_once()) break;
    if (++since_sync == kCrossStreamSyncPeriod) {
      since_sync = 0;
      if (!succeeded<Api>(state, Api::stream_sync(gpu->consumer), "periodic synchronize")) break;
    }
  }
  if (!state.error_occurred() && succeeded<Api>(state, Api::stream_sync(gpu->consumer), "synchronize")) {
    report_peaks<Api>(state, *gpu);
  }
}

// (e) alloc + free + synchronize on the legacy default stream: streampool's synchronize records a
// marker there first when the stream freed (a free on it may follow other streams' work through
// the implicit order; see docs/DESIGN.md), NVIDIA's does not need to.
template <class Api>
void synchronized_pair_legacy(benchmark::State& state) {
  GpuResources<Api>* gpu = ready_gpu<Api>(state);
  const typename Api::Stream legacy{};
  if (gpu == nullptr || !warm_up<Api>(state, legacy, kOneMiB)) return;
  for (auto _ : state) {
    typename Api::Ptr block{};
    if (!succeeded<Api>(state, Api::alloc(&block, kOneMiB, legacy), "alloc")) break;
    if (!succeeded<Api>(state, Api::free(block, legacy), "free")) break;
    if (!succeeded<Api>(state, Api::stream_sync(legacy), "synchronize")) break;
  }
}

// (e') alloc + free on the legacy default stream, with no blocking stream in the process (the
// first run) and after one was created (the second; the stream stays, as a program's would).
// Where a blocking stream may exist, streampool's legacy stream takes a marker before it hands
// its own free out again (a blocking stream's later work would otherwise not follow the free's
// last user: docs/DESIGN.md); NVIDIA's free and allocation are stream operations anyway.
template <class Api, bool kBlockingStreamPresent>
void pair_legacy(benchmark::State& state) {
  GpuResources<Api>* gpu = ready_gpu<Api>(state);
  const typename Api::Stream legacy{};
  if (gpu == nullptr) return;
  if (kBlockingStreamPresent) {
    static typename Api::Stream blocking{};
    if (blocking == typename Api::Stream{} &&
        !succeeded<Api>(state, Api::blocking_stream_create(&blocking), "blocking stream create")) {
      return;
    }
  }
  if (!warm_up<Api>(state, legacy, kOneMiB)) return;
  for (auto _ : state) {
    typename Api::Ptr block{};
    if (!succeeded<Api>(state, Api::alloc(&block, kOneMiB, legacy), "alloc")) break;
    if (!succeeded<Api>(state, Api::free(block, legacy), "free")) break;
  }
  succeeded<Api>(state, Api::stream_sync(legacy), "synchronize");
}

// (f) growth and release: from an empty pool, 1 GiB allocated in pieces of kPiece bytes on one
// stream, everything freed, the stream synchronized and the pool trimmed to 0; one iteration
// grows and releases 1 GiB. A first prefill of a model is such a burst of growth: the pool maps
// as it goes (NVIDIA's in 32 MiB chunks, streampool's by the granules a request needs), and what
// the mapping costs per GiB is what the burst costs. Counters, in ns per GiB: grow_ns (the
// allocations, where the mapping happens) and release_ns (the frees, the synchronize and the trim,
// where the unmapping happens).
inline constexpr std::size_t kGrowthBytes = std::size_t{1} << 30;

template <class Api, std::size_t kPiece>
void grow_release_1GiB(benchmark::State& state) {
  GpuResources<Api>* gpu = ready_gpu<Api>(state);
  if (gpu == nullptr || !start_from_empty_pool<Api>(state, *gpu)) return;
  std::vector<typename Api::Ptr> blocks(kGrowthBytes / kPiece, typename Api::Ptr{});
  using Clock = std::chrono::steady_clock;
  Clock::duration grow{};
  Clock::duration release{};
  for (auto _ : state) {
    const auto started = Clock::now();
    bool allocated = true;
    for (auto& block : blocks) {
      allocated = succeeded<Api>(state, Api::alloc(&block, kPiece, gpu->main_stream), "alloc");
      if (!allocated) break;
    }
    const auto grown = Clock::now();
    for (auto& block : blocks) {
      if (block != typename Api::Ptr{}) (void)Api::free(block, gpu->main_stream);
      block = typename Api::Ptr{};
    }
    if (!allocated || !succeeded<Api>(state, Api::stream_sync(gpu->main_stream), "synchronize") ||
        !succeeded<Api>(state, Api::trim(gpu->pool, 0), "trim to 0")) {
      break;
    }
    release += Clock::now() - grown;
    grow += grown - started;
  }
  const double iterations = static_cast<double>(state.iterations());
  if (iterations > 0.0) {
    state.counters["grow_ns"] = static_cast<double>(std::chrono::nanoseconds(grow).count()) / iterations;
    state.counters["release_ns"] = static_cast<double>(std::chrono::nanoseconds(release).count()) / iterations;
  }
}

// The names compare.py looks for; keep them in step with WORKLOADS there.
template <class Api>
void register_workloads() {
  using benchmark::kNanosecond;
  benchmark::RegisterBenchmark("pair_1MiB", &pair_one_stream<Api, kOneMiB>)->UseRealTime()->Unit(kNanosecond);
  benchmark::RegisterBenchmark("pair_1MiB_from_pool", &pair_from_pool<Api>)->UseRealTime()->Unit(kNanosecond);
  benchmark::RegisterBenchmark("pair_256B", &pair_one_stream<Api, kSmallBytes>)->UseRealTime()->Unit(kNanosecond);
  benchmark::RegisterBenchmark("random_sizes", &random_sizes<Api>)
      ->Iterations(static_cast<benchmark::IterationCount>(kRandomOperations))
      ->UseRealTime()
      ->Unit(kNanosecond);
  auto* threads = benchmark::RegisterBenchmark("threads_pair_1MiB", &threads_pair<Api>);
  for (int count = 1; count <= kMaxThreads; count *= 2) threads->Threads(count);
  threads->UseRealTime()->Unit(kNanosecond);
  benchmark::RegisterBenchmark("cross_stream_event", &cross_stream_event<Api>)->UseRealTime()->Unit(kNanosecond);
  benchmark::RegisterBenchmark("synchronized_pair_legacy", &synchronized_pair_legacy<Api>)
      ->UseRealTime()
      ->Unit(kNanosecond);
  // In this order: the second creates the process's first blocking stream.
  benchmark::RegisterBenchmark("pair_legacy", &pair_legacy<Api, false>)->UseRealTime()->Unit(kNanosecond);
  benchmark::RegisterBenchmark("pair_legacy_blocking_present", &pair_legacy<Api, true>)
      ->UseRealTime()
      ->Unit(kNanosecond);
  benchmark::RegisterBenchmark("grow_release_1GiB_64MiB", &grow_release_1GiB<Api, 64 * kOneMiB>)
      ->UseRealTime()
      ->Unit(kNanosecond);
  benchmark::RegisterBenchmark("grow_release_1GiB_2MiB", &grow_release_1GiB<Api, 2 * kOneMiB>)
      ->UseRealTime()
      ->Unit(kNanosecond);
}

}  // namespace streampool::gpubench
