// Pools whose backing is charged to the process cap (src/interpose/hooks/control/capped_backing.hpp),
// on the engine over in-memory doubles: the charge is what the pools hold, granule by granule,
// through growth, trims, release thresholds, failed growth and the pool's end; over the cap an
// allocation reuses what the pool holds (an inserted dependency on another stream's pending free)
// and otherwise fails with the pool unchanged. A random program checks the count after every step
// against an oracle: the sum of the pools' own reserved statistic, per device.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <vector>

#include "control/capped_backing.hpp"  // src/interpose/hooks/control
#include "control/process_cap.hpp"
#include "core/engine.hpp"
#include "doubles/forwarding_backing.hpp"
#include "doubles/in_memory_backing.hpp"
#include "doubles/scripted_ordering.hpp"

namespace streampool::testing {
namespace {

using control::Holder;
using control::ProcessCap;
using interpose::control_hooks::CappedBacking;

constexpr std::size_t MiB = std::size_t{1} << 20;
constexpr core::StreamKey kStream1 = 0x1000;
constexpr core::StreamKey kStream2 = 0x2000;

class CappedPools : public ::testing::Test {
 protected:
  void SetUp() override {
    ordering.set_kind(kStream1, core::StreamKind::non_blocking);
    ordering.set_kind(kStream2, core::StreamKind::non_blocking);
  }

  core::Pool* make_pool(int device, InMemoryBacking::Config config = {}) {
    backings.push_back(std::make_unique<InMemoryBacking>(config));
    released.push_back(std::make_unique<bool>(false));
    auto inner = std::make_unique<ForwardingBacking>(*backings.back(), released.back().get());
    core::Pool* pool = nullptr;
    EXPECT_EQ(engine.create_pool({}, std::make_unique<CappedBacking>(std::move(inner), cap, device), &pool),
              core::Status::success);
    return pool;
  }
  core::Status try_alloc(core::Pool* pool, std::size_t bytes, core::StreamKey stream, std::uintptr_t* out) {
    void* ptr = nullptr;
    const core::Status status = engine.allocate(pool, bytes, stream, &ptr);
    *out = reinterpret_cast<std::uintptr_t>(ptr);
    return status;
  }
  std::uintptr_t alloc(core::Pool* pool, std::size_t bytes, core::StreamKey stream) {
    std::uintptr_t address = 0;
    EXPECT_EQ(try_alloc(pool, bytes, stream, &address), core::Status::success);
    return address;
  }
  void free(std::uintptr_t address, core::StreamKey stream) {
    EXPECT_EQ(engine.free(reinterpret_cast<void*>(address), stream), core::Status::success);
  }
  void synchronize(core::StreamKey stream) {
    auto ticket = engine.ticket_for_stream(stream, /*releases=*/true);
    ordering.complete(stream);
    engine.commit(ticket);
  }
  std::uint64_t reserved(core::Pool* pool) { return engine.stats(pool).reserved_current; }

  // Declared before the engine: its pools' backings and the cap outlive it.
  std::vector<std::unique_ptr<InMemoryBacking>> backings;
  std::vector<std::unique_ptr<bool>> released;
  ProcessCap cap;
  ScriptedOrdering ordering;
  core::Engine engine{ordering};
};

TEST_F(CappedPools, GrowthIsChargedByGranuleAndATrimGivesItBack) {
  core::Pool* pool = make_pool(0);
  const std::uintptr_t block = alloc(pool, 5 * MiB, kStream1);
  EXPECT_EQ(cap.charged(0), reserved(pool));
  EXPECT_EQ(cap.held(Holder::pools, 0), backings[0]->mapped_bytes());
  EXPECT_GT(cap.charged(0), 0u);
  free(block, kStream1);
  synchronize(kStream1);
  ASSERT_EQ(engine.trim_to(pool, 0), core::Status::success);
  EXPECT_EQ(reserved(pool), 0u);
  EXPECT_EQ(cap.charged(0), 0u);
}

TEST_F(CappedPools, AnAllocationPastTheCapFailsAndLeavesThePoolAsItWas) {
  cap.set_limit(0, 40 * MiB);
  core::Pool* pool = make_pool(0);
  (void)alloc(pool, 30 * MiB, kStream1);
  const core::PoolStats before = engine.stats(pool);
  const std::uint64_t charged_before = cap.charged(0);
  std::uintptr_t address = 1;
  EXPECT_EQ(try_alloc(pool, 20 * MiB, kStream1, &address), core::Status::out_of_memory);
  EXPECT_EQ(address, 0u);
  const core::PoolStats after = engine.stats(pool);
  EXPECT_EQ(after.reserved_current, before.reserved_current);
  EXPECT_EQ(after.used_current, before.used_current);
  EXPECT_EQ(cap.charged(0), charged_before);
  EXPECT_LE(cap.charged(0), 40 * MiB);
  EXPECT_EQ(backings[0]->errors(), 0u);
}

TEST_F(CappedPools, AtTheCapAnotherStreamsPendingFreeIsReusedThroughAnInsertedDependency) {
  cap.set_limit(0, 32 * MiB);
  core::Pool* pool = make_pool(0);
  const std::uintptr_t block = alloc(pool, 30 * MiB, kStream2);
  ordering.enqueue_work(kStream2);  // a kernel still using it when it is freed
  free(block, kStream2);
  const std::size_t waits_before = ordering.waits_by(kStream1);
  const std::uintptr_t again = alloc(pool, 30 * MiB, kStream1);
  EXPECT_EQ(again, block);
  EXPECT_GT(ordering.waits_by(kStream1), waits_before);  // kStream1 now waits for kStream2's work
  EXPECT_LE(cap.charged(0), 32 * MiB);
}

TEST_F(CappedPools, WithoutInternalDependenciesThePendingFreeIsNotTakenAndTheAllocationFails) {
  cap.set_limit(0, 32 * MiB);
  core::Pool* pool = make_pool(0);
  int off = 0;
  ASSERT_EQ(engine.set_attribute(pool, core::PoolAttribute::reuse_allow_internal_dependencies, &off),
            core::Status::success);
  ASSERT_EQ(engine.set_attribute(pool, core::PoolAttribute::reuse_allow_opportunistic, &off), core::Status::success);
  const std::uintptr_t block = alloc(pool, 30 * MiB, kStream2);
  ordering.enqueue_work(kStream2);
  free(block, kStream2);
  std::uintptr_t address = 0;
  EXPECT_EQ(try_alloc(pool, 30 * MiB, kStream1, &address), core::Status::out_of_memory);
  synchronize(kStream2);  // the free is known complete: now anyone may have it
  EXPECT_EQ(alloc(pool, 30 * MiB, kStream1), block);
}

TEST_F(CappedPools, ASecondPoolFindsOnlyWhatTheFirstDoesNotHold) {
  cap.set_limit(0, 64 * MiB);
  core::Pool* first = make_pool(0);
  core::Pool* second = make_pool(0);
  const std::uintptr_t block = alloc(first, 60 * MiB, kStream1);
  std::uintptr_t address = 0;
  EXPECT_EQ(try_alloc(second, 8 * MiB, kStream1, &address), core::Status::out_of_memory);
  free(block, kStream1);
  synchronize(kStream1);  // the release threshold (0) gives the first pool's memory back
  EXPECT_NE(alloc(second, 8 * MiB, kStream1), 0u);
  EXPECT_EQ(cap.charged(0), reserved(first) + reserved(second));
}

TEST_F(CappedPools, OtherDevicesAreNotCharged) {
  cap.set_limit(0, 8 * MiB);
  core::Pool* pool = make_pool(1);
  (void)alloc(pool, 100 * MiB, kStream1);
  EXPECT_EQ(cap.charged(0), 0u);
  EXPECT_EQ(cap.charged(1), reserved(pool));
}

TEST_F(CappedPools, APoolsEndGivesBackAllItHeld) {
  core::Pool* pool = make_pool(0);
  const std::uintptr_t block = alloc(pool, 50 * MiB, kStream1);
  ASSERT_GT(cap.charged(0), 0u);
  ASSERT_EQ(engine.destroy_pool(pool), core::Status::success);
  free(block, kStream1);
  synchronize(kStream1);
  (void)make_pool(0);  // a later pool's creation reclaims the drained one
  EXPECT_TRUE(*released[0]);
  EXPECT_EQ(cap.charged(0), 0u);
}

TEST_F(CappedPools, AChunkBackingIsChargedAtReservationAndGivesBackWhole) {
  InMemoryBacking::Config chunks;
  chunks.reservation_bytes = 0;
  cap.set_limit(0, 100 * MiB);
  core::Pool* pool = make_pool(0, chunks);
  const std::uintptr_t block = alloc(pool, 40 * MiB, kStream1);
  EXPECT_EQ(cap.charged(0), reserved(pool));
  std::uintptr_t address = 0;
  EXPECT_EQ(try_alloc(pool, 70 * MiB, kStream1, &address), core::Status::out_of_memory);
  EXPECT_EQ(cap.charged(0), reserved(pool));
  free(block, kStream1);
  synchronize(kStream1);
  EXPECT_EQ(cap.charged(0), reserved(pool));
  EXPECT_EQ(reserved(pool), 0u);
}

TEST_F(CappedPools, TheDeviceRefusingAMapLeavesNothingCharged) {
  InMemoryBacking::Config small;
  small.physical_bytes = 16 * MiB;
  core::Pool* pool = make_pool(0, small);
  std::uintptr_t address = 0;
  EXPECT_EQ(try_alloc(pool, 64 * MiB, kStream1, &address), core::Status::out_of_memory);
  EXPECT_EQ(cap.charged(0), 0u);
}

// Random programs over four pools on two devices with caps: after every step, each device's charge
// is exactly what its pools report reserved, and never above the cap.
TEST_F(CappedPools, RandomProgramsKeepTheChargeEqualToThePoolsReservations) {
  constexpr int kDevices = 2;
  const std::uint64_t limits[kDevices] = {96 * MiB, 160 * MiB};
  for (int device = 0; device < kDevices; ++device) cap.set_limit(device, limits[device]);
  InMemoryBacking::Config chunks;
  chunks.reservation_bytes = 0;
  std::vector<core::Pool*> pools = {make_pool(0), make_pool(1), make_pool(0), make_pool(1, chunks)};
  std::vector<int> device_of = {0, 1, 0, 1};
  struct Live {
    core::Pool* pool;
    std::uintptr_t address;
    core::StreamKey stream;
  };
  std::vector<Live> live;
  std::mt19937 random(18);
  const core::StreamKey streams[] = {kStream1, kStream2};
  std::size_t refused = 0;
  for (int step = 0; step < 3000; ++step) {
    const auto action = random() % 10;
    if (action < 5) {
      const std::size_t which = random() % pools.size();
      const std::size_t bytes = (random() % 3 == 0) ? (1 + random() % 40) * MiB : 512 * (1 + random() % 4096);
      const core::StreamKey stream = streams[random() % 2];
      std::uintptr_t address = 0;
      const core::Status status = try_alloc(pools[which], bytes, stream, &address);
      if (core::ok(status)) {
        live.push_back({pools[which], address, stream});
      } else {
        ASSERT_EQ(status, core::Status::out_of_memory);
        ++refused;
      }
    } else if (action < 8 && !live.empty()) {
      const std::size_t index = random() % live.size();
      const core::StreamKey stream = random() % 4 == 0 ? streams[random() % 2] : live[index].stream;
      free(live[index].address, stream);
      live[index] = live.back();
      live.pop_back();
    } else if (action == 8) {
      synchronize(streams[random() % 2]);
    } else {
      const std::size_t which = random() % pools.size();
      ASSERT_EQ(engine.trim_to(pools[which], (random() % 3) * 8 * MiB), core::Status::success);
    }
    for (int device = 0; device < kDevices; ++device) {
      std::uint64_t oracle = 0;
      for (std::size_t p = 0; p < pools.size(); ++p) {
        if (device_of[p] == device) oracle += reserved(pools[p]);
      }
      ASSERT_EQ(cap.charged(device), oracle) << "device " << device << " at step " << step;
      ASSERT_LE(cap.charged(device), limits[device]);
    }
  }
  EXPECT_GT(refused, 0u);  // the program did reach the caps
  for (const auto& backing : backings) EXPECT_EQ(backing->errors(), 0u);
}

}  // namespace
}  // namespace streampool::testing
