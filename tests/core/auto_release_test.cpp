// The automatic release policy (release_policy.hpp) and the release of a device's unused memory
// for a limit (Engine::release_unused), on the in-memory doubles with a clock the test moves.
#include "engine_fixture.hpp"

namespace streampool::testing {
namespace {

using core::PoolAttribute;
using core::Status;

class AutoRelease : public EngineTest {
 protected:
  AutoRelease() { use_policy(core::ReleasePolicy::Mode::automatic); }
  void use_policy(core::ReleasePolicy::Mode mode, std::uint64_t idle_ms = 100) {
    core::ReleasePolicy policy;
    policy.mode = mode;
    policy.idle_synchronisations = 2;
    policy.idle_ms = idle_ms;
    policy.clock_ms = [this] { return now_ms; };
    engine.set_release_policy(std::move(policy));
  }
  // A pool whose backing is `shared`: several such pools compete for one device's memory.
  core::Pool* make_pool_on(InMemoryBacking& shared) {
    released.push_back(std::make_unique<bool>(false));
    core::Pool* pool = nullptr;
    EXPECT_EQ(engine.create_pool({}, std::make_unique<ForwardingBacking>(shared, released.back().get()), &pool),
              Status::success);
    return pool;
  }
  void synchronize_at(std::uint64_t ms) {
    now_ms = ms;
    synchronize(kStream1);
  }

  std::uint64_t now_ms = 0;
};

TEST_F(AutoRelease, MemoryFreedJustBeforeASynchronisationIsKept) {
  core::Pool* pool = make_pool();
  free(alloc(pool, 24 * MiB, kStream1), kStream1);
  synchronize_at(0);
  EXPECT_EQ(reserved(pool), 32 * MiB);  // threshold 0 would have given it all back
}

TEST_F(AutoRelease, IdleGranulesGoBackAfterTheRulesSynchronisationsAndTime) {
  core::Pool* pool = make_pool();
  free(alloc(pool, 24 * MiB, kStream1), kStream1);
  for (std::uint64_t ms = 0; ms < 10; ++ms) synchronize_at(ms);  // many synchronisations, 9 ms
  EXPECT_EQ(reserved(pool), 32 * MiB);
  synchronize_at(150);  // idle since the first synchronisation: 150 ms
  EXPECT_EQ(reserved(pool), 0u);
  EXPECT_EQ(last_backing->mapped_bytes(), 0u);
}

TEST_F(AutoRelease, TimeAloneDoesNotReleaseWithoutEnoughSynchronisations) {
  core::Pool* pool = make_pool();
  free(alloc(pool, 24 * MiB, kStream1), kStream1);
  synchronize_at(0);
  synchronize_at(10'000);
  EXPECT_EQ(reserved(pool), 32 * MiB);  // missed only 2 synchronisations
  synchronize_at(10'001);
  EXPECT_EQ(reserved(pool), 0u);
}

TEST_F(AutoRelease, OnlyTheIdlePartGoesBackAndMemoryInUseStays) {
  core::Pool* pool = make_pool();
  free(alloc(pool, 24 * MiB, kStream1), kStream1);
  std::uintptr_t small = 0;
  for (std::uint64_t ms = 0; ms <= 1000; ms += 100) {
    small = alloc(pool, 4 * MiB, kStream1);  // the phase after: 4 MiB in use, at one place
    free(small, kStream1);
    synchronize_at(ms);
  }
  EXPECT_EQ(reserved(pool), 4 * MiB);
  EXPECT_TRUE(last_backing->is_mapped(small));
  EXPECT_EQ(last_backing->map_calls(), 16u);  // the first chunk, granule by granule; never again
}

TEST_F(AutoRelease, ASteadyLoopThatSynchronisesEveryIterationNeitherMapsNorUnmaps) {
  core::Pool* pool = make_pool();
  auto iteration = [&] {
    const std::uintptr_t a = alloc(pool, 6 * MiB, kStream1);
    const std::uintptr_t b = alloc(pool, 10 * MiB, kStream1);
    const std::uintptr_t c = alloc(pool, 3 * MiB + 512, kStream1);
    free(b, kStream1);
    free(a, kStream1);
    free(c, kStream1);
  };
  std::uint64_t ms = 0;
  for (; ms < 1000; ms += 50) {  // the first chunk's tail the loop never touches goes back
    iteration();
    synchronize_at(ms);
  }
  const std::size_t maps = last_backing->map_calls();
  const std::size_t unmaps = last_backing->unmap_calls();
  for (; ms < 11'000; ms += 50) {  // then 200 iterations over 10 s
    iteration();
    synchronize_at(ms);
  }
  EXPECT_EQ(last_backing->map_calls(), maps);
  EXPECT_EQ(last_backing->unmap_calls(), unmaps);
  EXPECT_EQ(reserved(pool), 20 * MiB);  // what the loop uses, in whole granules
}

TEST_F(AutoRelease, AThresholdTheProgramSetIsObeyedExactly) {
  core::Pool* automatic = make_pool();
  core::Pool* zero = make_pool();
  core::Pool* eight = make_pool();
  ASSERT_EQ(set_attribute<std::uint64_t>(zero, PoolAttribute::release_threshold, 0), Status::success);
  ASSERT_EQ(set_attribute<std::uint64_t>(eight, PoolAttribute::release_threshold, 8 * MiB), Status::success);
  for (core::Pool* pool : {automatic, zero, eight}) free(alloc(pool, 24 * MiB, kStream1), kStream1);
  synchronize_at(0);
  EXPECT_EQ(reserved(automatic), 32 * MiB);
  EXPECT_EQ(reserved(zero), 0u);
  EXPECT_EQ(reserved(eight), 8 * MiB);
  EXPECT_EQ(attribute<std::uint64_t>(automatic, PoolAttribute::release_threshold), 0u);  // reads as CUDA's
}

TEST_F(AutoRelease, UnderTheThresholdPolicyAnUnsetThresholdIsZero) {
  use_policy(core::ReleasePolicy::Mode::threshold);
  core::Pool* pool = make_pool();
  free(alloc(pool, 24 * MiB, kStream1), kStream1);
  synchronize_at(0);
  EXPECT_EQ(reserved(pool), 0u);
}

TEST_F(AutoRelease, PendingFreesAreNeverGivenBackHoweverIdle) {
  core::Pool* pool = make_pool();
  const std::uintptr_t pending = alloc(pool, 4 * MiB, kStream2);
  ordering.enqueue_work(kStream2);
  free(pending, kStream2);  // stream 2's kernel may still use it
  free(alloc(pool, 8 * MiB, kStream1), kStream1);
  synchronize_at(0);
  EXPECT_EQ(reserved(pool), 32 * MiB);  // all kept at first: freed just now
  for (std::uint64_t ms = 100; ms <= 1000; ms += 100) synchronize_at(ms);
  EXPECT_TRUE(last_backing->is_mapped(pending));
  EXPECT_EQ(reserved(pool), 4 * MiB);
}

class ReleaseUnused : public AutoRelease {
 protected:
  ReleaseUnused() { use_policy(core::ReleasePolicy::Mode::automatic, /*idle_ms=*/UINT64_MAX / 2); }
};

TEST_F(ReleaseUnused, FreesWhatItIsAskedFromTheMostIdlePoolFirst) {
  core::Pool* older = make_pool();
  core::Pool* newer = make_pool();
  free(alloc(older, 24 * MiB, kStream1), kStream1);
  synchronize_at(10);
  free(alloc(newer, 24 * MiB, kStream1), kStream1);
  synchronize_at(20);
  ASSERT_EQ(reserved(older), 32 * MiB);
  ASSERT_EQ(reserved(newer), 32 * MiB);

  EXPECT_EQ(engine.release_unused(0, 8 * MiB), 8 * MiB);
  EXPECT_EQ(reserved(older), 24 * MiB);
  EXPECT_EQ(reserved(newer), 32 * MiB);

  EXPECT_EQ(engine.release_unused(0, 40 * MiB), 40 * MiB);
  EXPECT_EQ(reserved(older), 0u);
  EXPECT_EQ(reserved(newer), 16 * MiB);
}

TEST_F(ReleaseUnused, GivesBackWhateverTheThreshold) {
  core::Pool* pool = make_pool();
  ASSERT_EQ(set_attribute<std::uint64_t>(pool, PoolAttribute::release_threshold, UINT64_MAX), Status::success);
  free(alloc(pool, 24 * MiB, kStream1), kStream1);
  synchronize_at(0);
  EXPECT_EQ(engine.release_unused(0, UINT64_MAX), 32 * MiB);
  EXPECT_EQ(reserved(pool), 0u);
}

TEST_F(ReleaseUnused, NeverTakesWhatALiveAllocationOrAPendingFreeNeeds) {
  core::Pool* pool = make_pool();
  const std::uintptr_t live = alloc(pool, 4 * MiB, kStream1);
  const std::uintptr_t pending = alloc(pool, 4 * MiB, kStream2);
  const std::uintptr_t done = alloc(pool, 8 * MiB, kStream1);
  ordering.enqueue_work(kStream2);
  free(pending, kStream2);
  free(done, kStream1);  // still in stream 1's cache: it goes back too, its stream's work is done
  synchronize_at(0);
  EXPECT_EQ(engine.release_unused(0, UINT64_MAX), 24 * MiB);
  EXPECT_EQ(reserved(pool), 8 * MiB);
  EXPECT_TRUE(last_backing->is_mapped(live));
  EXPECT_TRUE(last_backing->is_mapped(pending));
  EXPECT_FALSE(last_backing->is_mapped(done));
  EXPECT_EQ(last_backing->errors(), 0u);
}

TEST_F(ReleaseUnused, LeavesOtherDevicesAndHostPoolsAlone) {
  core::PoolProps other_device;
  other_device.location_id = 1;
  core::PoolProps pinned_host;
  pinned_host.kind = core::PoolKind::pinned_host;
  pinned_host.location_type = 2;
  core::Pool* on_1 = make_pool(other_device);
  core::Pool* host = make_pool(pinned_host);
  ASSERT_EQ(set_attribute<std::uint64_t>(on_1, PoolAttribute::release_threshold, UINT64_MAX), Status::success);
  ASSERT_EQ(set_attribute<std::uint64_t>(host, PoolAttribute::release_threshold, UINT64_MAX), Status::success);
  free(alloc(on_1, 24 * MiB, kStream1), kStream1);
  free(alloc(host, 24 * MiB, kStream1), kStream1);
  synchronize_at(0);
  EXPECT_EQ(engine.release_unused(0, UINT64_MAX), 0u);
  EXPECT_EQ(reserved(on_1), 32 * MiB);
  EXPECT_EQ(reserved(host), 32 * MiB);
  EXPECT_EQ(engine.release_unused(1, UINT64_MAX), 32 * MiB);
}

TEST_F(ReleaseUnused, AnAllocationThatCannotGrowMakesTheOtherPoolsOfItsDeviceGiveBack) {
  InMemoryBacking::Config config;
  config.physical_bytes = 64 * MiB;
  backings.push_back(std::make_unique<InMemoryBacking>(config));  // outlives the engine's pools
  InMemoryBacking& device = *backings.back();
  core::Pool* holder = make_pool_on(device);
  core::Pool* grower = make_pool_on(device);
  ASSERT_EQ(set_attribute<std::uint64_t>(holder, PoolAttribute::release_threshold, UINT64_MAX), Status::success);
  free(alloc(holder, 40 * MiB, kStream1), kStream1);
  synchronize_at(0);
  ASSERT_EQ(reserved(holder), 40 * MiB);

  std::uintptr_t block = 0;
  EXPECT_EQ(try_alloc(grower, 40 * MiB, kStream2, &block), Status::success);
  EXPECT_EQ(reserved(holder), 0u);
  EXPECT_EQ(device.errors(), 0u);
  free(block, kStream2);
}

}  // namespace
}  // namespace streampool::testing
