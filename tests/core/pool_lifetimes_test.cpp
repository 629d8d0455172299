// Pool lifetimes: a destroyed pool gives back its address reservations and its host memory once
// the last of it is freed and known complete, whichever order the program does that in, and
// nothing of it stays reachable afterwards: not its handle, not a thread's cached share of it.
// Pools that come and go for as long as a program runs reuse one handle value and one
// reservation at a time.
#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "engine_fixture.hpp"

namespace streampool::testing {
namespace {

using core::Status;

class PoolLifetimes : public EngineTest {
 protected:
  void* as_ptr(std::uintptr_t address) { return reinterpret_cast<void*>(address); }
  // Many lifetimes: a small reservation keeps each pool's granule map small (the tests stay fast
  // under TSan).
  static InMemoryBacking::Config small_reservation() {
    InMemoryBacking::Config config;
    config.reservation_bytes = std::size_t{1} << 30;
    return config;
  }
};

TEST_F(PoolLifetimes, ADestroyedPoolWithNothingAllocatedGivesBackItsReservationAtOnce) {
  core::Pool* pool = make_pool();
  free(alloc(pool, 1 * MiB, kStream1), kStream1);
  synchronize(kStream1);
  ASSERT_GT(last_backing->reserved_bytes(), 0u);

  ASSERT_EQ(engine.destroy_pool(pool), Status::success);

  EXPECT_EQ(last_backing->reserved_bytes(), 0u);
  EXPECT_EQ(last_backing->mapped_bytes(), 0u);
  EXPECT_TRUE(*last_backing_released);
  EXPECT_EQ(last_backing->errors(), 0u);
}

TEST_F(PoolLifetimes, ALiveAllocationKeepsTheReservationUntilItsFreeIsKnownComplete) {
  core::Pool* pool = make_pool();
  const std::uintptr_t block = alloc(pool, 1 * MiB, kStream1);
  ASSERT_EQ(engine.destroy_pool(pool), Status::success);
  EXPECT_TRUE(last_backing->is_mapped(block));

  free(block, kStream1);  // stream-ordered: work queued before it may still use the block
  EXPECT_TRUE(last_backing->is_mapped(block));
  EXPECT_FALSE(*last_backing_released);

  synchronize(kStream1);
  EXPECT_EQ(last_backing->reserved_bytes(), 0u);
  EXPECT_TRUE(*last_backing_released);
  EXPECT_EQ(last_backing->errors(), 0u);
}

TEST_F(PoolLifetimes, AHostCompletedFreeOfTheLastAllocationGivesTheReservationBack) {
  core::Pool* pool = make_pool();
  const std::uintptr_t block = alloc(pool, 1 * MiB, kStream1);
  ASSERT_EQ(engine.destroy_pool(pool), Status::success);

  ASSERT_EQ(engine.free_completed(as_ptr(block)), Status::success);

  EXPECT_EQ(last_backing->reserved_bytes(), 0u);
  EXPECT_TRUE(*last_backing_released);
}

TEST_F(PoolLifetimes, EveryFreeCountsWhetherMadeBeforeOrAfterTheDestroyAndOnWhicheverStream) {
  // More frees than a stream's cache holds, so that some are counted off as cache evictions,
  // before and after the destroy, on the allocating stream and on another one.
  core::Pool* pool = make_pool();
  std::vector<std::uintptr_t> blocks;
  for (int i = 0; i < 40; ++i) blocks.push_back(alloc(pool, 64 * KiB, kStream1));
  for (int i = 0; i < 20; ++i) free(blocks[i], i % 2 == 0 ? kStream1 : kStream2);
  ASSERT_EQ(engine.destroy_pool(pool), Status::success);
  for (int i = 20; i < 39; ++i) free(blocks[i], i % 2 == 0 ? kStream1 : kStream3);
  synchronize(kStream1);
  synchronize(kStream2);
  synchronize(kStream3);
  EXPECT_FALSE(*last_backing_released);  // one block is still allocated
  EXPECT_TRUE(last_backing->is_mapped(blocks[39]));

  free(blocks[39], kStream2);
  synchronize(kStream2);

  EXPECT_TRUE(*last_backing_released);
  EXPECT_EQ(last_backing->reserved_bytes(), 0u);
  EXPECT_EQ(last_backing->errors(), 0u);
}

TEST_F(PoolLifetimes, AReclaimedPoolsHandleIsNotAPool) {
  core::Pool* pool = make_pool();
  ASSERT_EQ(engine.destroy_pool(pool), Status::success);
  ASSERT_TRUE(*last_backing_released);

  EXPECT_FALSE(engine.is_pool(pool));
  void* ptr = nullptr;
  EXPECT_EQ(engine.allocate(pool, 16, kStream1, &ptr), Status::invalid_value);
  EXPECT_EQ(engine.destroy_pool(pool), Status::invalid_value);
}

TEST_F(PoolLifetimes, PoolsThatComeAndGoReuseOneHandleValue) {
  std::set<core::Pool*> handles;
  for (int i = 0; i < 300; ++i) {
    core::Pool* pool = make_pool({}, small_reservation());
    handles.insert(pool);
    free(alloc(pool, 1 * MiB, kStream1), kStream1);
    synchronize(kStream1);
    ASSERT_EQ(engine.destroy_pool(pool), Status::success);
    ASSERT_EQ(last_backing->reserved_bytes(), 0u) << "lifetime " << i;
  }
  EXPECT_EQ(handles.size(), 1u);
}

TEST_F(PoolLifetimes, FarMorePoolLifetimesThanHandleSlotsStayRecognised) {
  // The handle set has room for 32768 distinct handle values; a program may create and destroy
  // pools without end.
  for (int i = 0; i < 40000; ++i) {
    ASSERT_EQ(engine.destroy_pool(make_pool({}, small_reservation())), Status::success) << i;
  }
  core::Pool* pool = make_pool();
  EXPECT_TRUE(engine.is_pool(pool));
  EXPECT_NE(alloc(pool, 4 * KiB, kStream1), 0u);
}

TEST_F(PoolLifetimes, ANewPoolAtAReclaimedPoolsAddressGetsItsOwnStreamShares) {
  core::Pool* first = make_pool();
  free(alloc(first, 1 * MiB, kStream1), kStream1);  // this thread now caches first's share of kStream1
  synchronize(kStream1);
  ASSERT_EQ(engine.destroy_pool(first), Status::success);
  core::Pool* second = make_pool();
  ASSERT_EQ(second, first);  // the reclaimed pool's storage, and so its handle value

  const std::uintptr_t block = alloc(second, 1 * MiB, kStream1);

  EXPECT_TRUE(last_backing->holds(block));
  EXPECT_EQ(used(second), 1 * MiB);
  free(block, kStream1);
  EXPECT_EQ(used(second), 0u);
}

// --- several threads ----------------------------------------------------------------------------

TEST_F(PoolLifetimes, ThreadsFreeingTheLastAllocationsTogetherReclaimThePoolOnce) {
  constexpr int kThreads = 4;
  constexpr int kRounds = 20;
  for (int round = 0; round < kRounds; ++round) {
    core::Pool* pool = make_pool();
    std::vector<std::vector<std::uintptr_t>> blocks(kThreads);
    for (int t = 0; t < kThreads; ++t) {
      for (int i = 0; i < 16; ++i) blocks[t].push_back(alloc(pool, static_cast<std::size_t>(i % 4 + 1) * 8 * KiB, kStream1));
    }
    // The frees race the destroy: some come before it, some after, some while it runs.
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        while (!go.load()) std::this_thread::yield();
        for (std::uintptr_t block : blocks[t]) {
          EXPECT_EQ(engine.free_completed(as_ptr(block)), Status::success);
        }
      });
    }
    go.store(true);
    ASSERT_EQ(engine.destroy_pool(pool), Status::success);
    for (std::thread& thread : threads) thread.join();

    EXPECT_TRUE(*last_backing_released) << "round " << round;
    EXPECT_EQ(last_backing->reserved_bytes(), 0u);
    EXPECT_EQ(last_backing->errors(), 0u);
  }
}

TEST_F(PoolLifetimes, StreamOrderedFreesOnManyThreadsAfterTheDestroyAllCount) {
  constexpr int kThreads = 4;
  const core::StreamKey streams[kThreads] = {0x5000, 0x6000, 0x7000, 0x8000};
  core::Pool* pool = make_pool();
  std::vector<std::vector<std::uintptr_t>> blocks(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < 30; ++i) blocks[t].push_back(alloc(pool, 16 * KiB, streams[t]));
  }
  ASSERT_EQ(engine.destroy_pool(pool), Status::success);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Each thread frees another thread's blocks on its own stream.
      for (std::uintptr_t block : blocks[(t + 1) % kThreads]) {
        EXPECT_EQ(engine.free(as_ptr(block), streams[t]), Status::success);
      }
      synchronize(streams[t]);
    });
  }
  for (std::thread& thread : threads) thread.join();

  EXPECT_TRUE(*last_backing_released);
  EXPECT_EQ(last_backing->reserved_bytes(), 0u);
  EXPECT_EQ(last_backing->errors(), 0u);
}

TEST_F(PoolLifetimes, PoolLifetimesOnSeveralThreadsWhileOthersSynchroniseAndWalkThePools) {
  constexpr int kThreads = 3;
  constexpr int kLifetimes = 100;
  std::vector<std::unique_ptr<InMemoryBacking>> thread_backings;
  for (int t = 0; t < kThreads; ++t) thread_backings.push_back(std::make_unique<InMemoryBacking>(small_reservation()));
  std::atomic<int> running{kThreads};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const core::StreamKey stream = 0x10000 * static_cast<core::StreamKey>(t + 1);
      for (int i = 0; i < kLifetimes; ++i) {
        core::Pool* pool = nullptr;
        ASSERT_EQ(engine.create_pool({}, std::make_unique<ForwardingBacking>(*thread_backings[t], nullptr), &pool),
                  Status::success);
        void* block = nullptr;
        ASSERT_EQ(engine.allocate(pool, 256 * KiB, stream, &block), Status::success);
        ASSERT_EQ(engine.free(block, stream), Status::success);
        if (i % 2 == 0) synchronize(stream);
        ASSERT_EQ(engine.destroy_pool(pool), Status::success);
        if (i % 2 == 1) synchronize(stream);
      }
      running.fetch_sub(1);
    });
  }
  std::thread walker([&] {
    while (running.load() > 0) {
      engine.commit(engine.ticket_for_all(/*releases=*/true));
      engine.for_each_pool([this](core::Pool* pool) { (void)engine.stats(pool); });
    }
  });
  for (std::thread& thread : threads) thread.join();
  walker.join();

  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(thread_backings[t]->reserved_bytes(), 0u) << "thread " << t;
    EXPECT_EQ(thread_backings[t]->errors(), 0u);
  }
}

TEST_F(PoolLifetimes, OfTwoThreadsDestroyingOnePoolExactlyOneSucceeds) {
  for (int round = 0; round < 50; ++round) {
    core::Pool* pool = make_pool();
    std::atomic<bool> go{false};
    Status results[2] = {Status::not_ready, Status::not_ready};
    std::thread first([&] {
      while (!go.load()) std::this_thread::yield();
      results[0] = engine.destroy_pool(pool);
    });
    std::thread second([&] {
      while (!go.load()) std::this_thread::yield();
      results[1] = engine.destroy_pool(pool);
    });
    go.store(true);
    first.join();
    second.join();
    EXPECT_EQ((results[0] == Status::success) + (results[1] == Status::success), 1) << "round " << round;
    EXPECT_TRUE(*last_backing_released);
  }
}

}  // namespace
}  // namespace streampool::testing
