// Concurrency stress of the engine: many host threads on one engine at once, which TSan must
// run clean.
//
// Worker threads allocate and free on their own streams at random sizes from two pools (one
// uncapped, one capped so that it runs out and inserts dependencies), hand blocks to each other
// through a mutex-protected queue with an event record / stream wait pair through the engine
// (the receiver frees on its own stream), enqueue kernels and synchronise their streams, while
// two controller threads synchronise the device, trim, read the attributes and reset the high
// watermarks. Every live block is kept in an interval set: a block handed out over a range
// some other live block holds is a failure. Once every thread has joined, the statistics must
// be exact: nothing used, the highs reset to the current values, reserved equal to what the
// backing has mapped, and nothing left mapped after a device synchronise and trim_to(0).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/engine.hpp"
#include "doubles/scripted_ordering.hpp"
#include "model/watched_backing.hpp"
#include "sanitizer_build.hpp"

// Sanitizers slow every operation 5-15x: there the stress shrinks (env STREAMPOOL_STRESS_OPS
// overrides the number of operations per worker everywhere).
#if defined(STREAMPOOL_TEST_UNDER_TSAN) || defined(STREAMPOOL_TEST_UNDER_ASAN)
#define STREAMPOOL_STRESS_UNDER_SANITIZER 1
#endif

namespace streampool::testing {
namespace {

using core::PoolAttribute;
using core::Status;
using core::StreamKey;
using core::StreamKind;

constexpr std::size_t KiB = 1024;
constexpr std::size_t MiB = 1024 * KiB;
#ifdef STREAMPOOL_STRESS_UNDER_SANITIZER
constexpr std::size_t kDefaultOpsPerWorker = 20000;
#else
constexpr std::size_t kDefaultOpsPerWorker = 200000;  // a few seconds in Release on 2 cores
#endif

std::size_t ops_per_worker() {
  const char* text = std::getenv("STREAMPOOL_STRESS_OPS");
  return text != nullptr && *text != '\0' ? std::strtoull(text, nullptr, 10) : kDefaultOpsPerWorker;
}

// Ranges of the blocks the program holds, with overlap detection.
class LiveRanges {
 public:
  void add(std::uintptr_t address, std::size_t bytes) {
    std::lock_guard guard(mutex_);
    auto next = ranges_.lower_bound(address);
    if (next != ranges_.end() && next->first < address + bytes) report(address, bytes, next->first, next->second);
    if (next != ranges_.begin()) {
      auto previous = std::prev(next);
      if (previous->second > address) report(address, bytes, previous->first, previous->second);
    }
    ranges_[address] = address + bytes;
  }
  void remove(std::uintptr_t address) {
    std::lock_guard guard(mutex_);
    ranges_.erase(address);
  }
  std::size_t overlaps() const {
    std::lock_guard guard(mutex_);
    return overlaps_;
  }
  std::string first_overlap() const {
    std::lock_guard guard(mutex_);
    return first_;
  }

 private:
  void report(std::uintptr_t address, std::size_t bytes, std::uintptr_t other, std::uintptr_t other_end) {
    if (overlaps_++ != 0) return;
    std::ostringstream out;
    out << std::hex << "[0x" << address << ", 0x" << address + bytes << ") handed out while [0x" << other << ", 0x"
        << other_end << ") is live";
    first_ = out.str();
  }

  mutable std::mutex mutex_;
  std::map<std::uintptr_t, std::uintptr_t> ranges_;  // start -> end
  std::size_t overlaps_ = 0;
  std::string first_;
};

struct Held {
  void* ptr = nullptr;
  std::size_t bytes = 0;
};

struct HandedOver {
  Held block;
  core::EventKey event = 0;
};

struct StressConfig {
  std::size_t workers = 12;
  bool shared_streams = false;  // pairs of workers share one stream
};

class ConcurrencyStress : public ::testing::Test {
 protected:
  void SetUp() override {
    auto backing_a = std::make_unique<model::WatchedBacking>();
    backing[0] = backing_a.get();
    ASSERT_EQ(engine.create_pool({}, std::move(backing_a), &pool[0]), Status::success);
    const std::uint64_t keep_everything = UINT64_MAX;
    ASSERT_EQ(engine.set_attribute(pool[0], PoolAttribute::release_threshold, &keep_everything), Status::success);

    core::PoolProps capped;
    capped.max_size = 64 * MiB;  // small enough to run out: internal dependencies and releases
    auto backing_b = std::make_unique<model::WatchedBacking>();
    backing[1] = backing_b.get();
    ASSERT_EQ(engine.create_pool(capped, std::move(backing_b), &pool[1]), Status::success);
  }

  StreamKey stream_of(std::size_t worker, const StressConfig& config) const {
    const std::size_t index = config.shared_streams ? worker / 2 : worker;
    return index == 0 ? kLegacy : 0x1000 * (index + 1);
  }

  std::size_t random_size(std::mt19937_64& rng) {
    const std::uint64_t r = rng() % 100;
    if (r < 50) return 1 + rng() % (4 * KiB);
    if (r < 85) return 1 + rng() % (256 * KiB);
    if (r < 98) return 1 + rng() % (4 * MiB);
    return 8 * MiB + rng() % (24 * MiB);
  }

  void free_held(const Held& held, StreamKey stream) {
    ranges.remove(reinterpret_cast<std::uintptr_t>(held.ptr));  // before: the range may be reused at once
    if (engine.free(held.ptr, stream) != Status::success) failures.fetch_add(1);
  }

  void worker_loop(std::size_t worker, const StressConfig& config) {
    std::mt19937_64 rng(0x5EED + worker);
    const StreamKey stream = stream_of(worker, config);
    std::vector<Held> held;
    for (std::size_t op = 0, ops = ops_per_worker(); op < ops; ++op) {
      const std::uint64_t r = rng() % 100;
      if (r < 40 || held.empty()) {
        const std::size_t which = rng() % 4 == 0 ? 1 : 0;
        const std::size_t bytes = random_size(rng);
        void* ptr = nullptr;
        const Status status = engine.allocate(pool[which], bytes, stream, &ptr);
        if (status == Status::out_of_memory && which == 1) {
          out_of_memory.fetch_add(1, std::memory_order_relaxed);
          continue;
        }
        if (status != Status::success || ptr == nullptr) {
          failures.fetch_add(1);
          continue;
        }
        ranges.add(reinterpret_cast<std::uintptr_t>(ptr), bytes);
        held.push_back(Held{ptr, bytes});
        allocations.fetch_add(1, std::memory_order_relaxed);
      } else if (r < 70) {
        const std::size_t index = rng() % held.size();
        free_held(held[index], stream);
        held[index] = held.back();
        held.pop_back();
      } else if (r < 78) {
        // Hand a block to another thread: record an event after its last use on this stream.
        const std::size_t index = rng() % held.size();
        const core::EventKey event = next_event.fetch_add(1);
        engine.event_recorded(event, stream);
        {
          std::lock_guard guard(handover_mutex);
          handovers.push_back(HandedOver{held[index], event});
        }
        held[index] = held.back();
        held.pop_back();
      } else if (r < 88) {
        HandedOver taken;
        {
          std::lock_guard guard(handover_mutex);
          if (handovers.empty()) continue;
          const std::size_t index = rng() % handovers.size();
          taken = handovers[index];
          handovers[index] = handovers.back();
          handovers.pop_back();
        }
        engine.stream_waited(stream, taken.event);  // the free follows the giver's last use
        engine.event_destroyed(taken.event);
        free_held(taken.block, stream);
        handed_over.fetch_add(1, std::memory_order_relaxed);
      } else if (r < 94) {
        ordering.enqueue_work(stream);  // a kernel: this stream's frees stay pending for others
      } else {
        const core::SyncTicket ticket = engine.ticket_for_stream(stream, rng() % 2 == 0);
        ordering.complete(stream);
        engine.commit(ticket);
      }
    }
    for (const Held& block : held) free_held(block, stream);
  }

  void controller_loop(std::size_t which) {
    std::mt19937_64 rng(0xC0DE + which);
    while (!workers_done.load(std::memory_order_acquire)) {
      const std::uint64_t r = rng() % 100;
      core::Pool* target = pool[rng() % 2];
      if (which == 0) {
        if (r < 40) {
          const core::SyncTicket ticket = engine.ticket_for_all(true);
          ordering.complete_all();
          engine.commit(ticket);
        } else {
          const std::size_t keep[] = {0, 16 * MiB, 64 * MiB};
          if (engine.trim_to(target, keep[rng() % 3]) != Status::success) failures.fetch_add(1);
        }
      } else {
        std::uint64_t value = 0;
        const auto attribute = static_cast<PoolAttribute>(1 + rng() % 15);
        if (engine.get_attribute(target, attribute, &value) != Status::success) failures.fetch_add(1);
        if (attribute == PoolAttribute::reserved_mem_current && target == pool[1] && value > 64 * MiB) {
          failures.fetch_add(1);  // the cap holds at every moment
        }
        if (r < 10) {
          const std::uint64_t zero = 0;
          const PoolAttribute high = r < 5 ? PoolAttribute::used_mem_high : PoolAttribute::reserved_mem_high;
          if (engine.set_attribute(target, high, &zero) != Status::success) failures.fetch_add(1);
        }
      }
      std::this_thread::yield();
    }
  }

  void run(const StressConfig& config) {
    ordering.set_kind(kLegacy, StreamKind::legacy_default);
    for (std::size_t worker = 1; worker < config.workers; ++worker) {
      ordering.set_kind(stream_of(worker, config), worker % 2 == 0 ? StreamKind::non_blocking : StreamKind::blocking);
    }
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> controllers;
    for (std::size_t which = 0; which < 2; ++which) controllers.emplace_back([this, which] { controller_loop(which); });
    std::vector<std::thread> workers;
    for (std::size_t worker = 0; worker < config.workers; ++worker) {
      workers.emplace_back([this, worker, &config] { worker_loop(worker, config); });
    }
    for (std::thread& thread : workers) thread.join();
    workers_done.store(true, std::memory_order_release);
    for (std::thread& thread : controllers) thread.join();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("streampool: stress: %zu workers, %zu allocations, %zu hand-overs, %zu out-of-memory, %.2f s\n",
                config.workers, allocations.load(), handed_over.load(), out_of_memory.load(), seconds);

    // What is still handed over is freed by the main thread, after waiting for its event.
    for (const HandedOver& left : handovers) {
      engine.stream_waited(kLegacy, left.event);
      free_held(left.block, kLegacy);
    }
    handovers.clear();
  }

  void expect_exact_statistics_at_rest() {
    EXPECT_EQ(ranges.overlaps(), 0u) << ranges.first_overlap();
    EXPECT_EQ(failures.load(), 0u);
    EXPECT_GT(allocations.load(), 1000u);
    EXPECT_GT(handed_over.load(), 0u);
    for (std::size_t which = 0; which < 2; ++which) {
      SCOPED_TRACE("pool " + std::to_string(which));
      core::PoolStats stats = engine.stats(pool[which]);
      EXPECT_EQ(stats.used_current, 0u);
      EXPECT_EQ(stats.reserved_current, backing[which]->mapped_bytes());
      EXPECT_GE(stats.reserved_high, stats.reserved_current);
      const std::uint64_t zero = 0;
      ASSERT_EQ(engine.set_attribute(pool[which], PoolAttribute::used_mem_high, &zero), Status::success);
      ASSERT_EQ(engine.set_attribute(pool[which], PoolAttribute::reserved_mem_high, &zero), Status::success);
      stats = engine.stats(pool[which]);
      EXPECT_EQ(stats.used_high, 0u);
      EXPECT_EQ(stats.reserved_high, stats.reserved_current);
      EXPECT_EQ(backing[which]->errors(), 0u);
    }
    // Everything completes; then nothing needs to stay mapped.
    const core::SyncTicket ticket = engine.ticket_for_all(true);
    ordering.complete_all();
    engine.commit(ticket);
    for (std::size_t which = 0; which < 2; ++which) {
      SCOPED_TRACE("pool " + std::to_string(which));
      ASSERT_EQ(engine.trim_to(pool[which], 0), Status::success);
      EXPECT_EQ(engine.stats(pool[which]).reserved_current, 0u);
      EXPECT_EQ(backing[which]->mapped_bytes(), 0u);
      EXPECT_EQ(backing[which]->errors(), 0u);
    }
  }

  static constexpr StreamKey kLegacy = 0x10;
  ScriptedOrdering ordering;
  core::Engine engine{ordering};
  core::Pool* pool[2] = {nullptr, nullptr};
  model::WatchedBacking* backing[2] = {nullptr, nullptr};

  LiveRanges ranges;
  std::mutex handover_mutex;
  std::vector<HandedOver> handovers;
  std::atomic<core::EventKey> next_event{0xE0000};
  std::atomic<bool> workers_done{false};
  std::atomic<std::size_t> allocations{0};
  std::atomic<std::size_t> handed_over{0};
  std::atomic<std::size_t> out_of_memory{0};
  std::atomic<std::size_t> failures{0};
};

TEST_F(ConcurrencyStress, ManyThreadsOnOwnStreamsNeverOverlapLiveBlocksAndEndWithExactStatistics) {
  run(StressConfig{12, false});
  expect_exact_statistics_at_rest();
}

TEST_F(ConcurrencyStress, ThreadsSharingStreamsNeverOverlapLiveBlocksAndEndWithExactStatistics) {
  run(StressConfig{8, true});
  expect_exact_statistics_at_rest();
}

}  // namespace
}  // namespace streampool::testing
