// Release threshold and TrimTo: driver-behaviour.md, "Sizes, rounding, growth".
#include "engine_fixture.hpp"

namespace streampool::testing {
namespace {

using core::PoolAttribute;
using core::Status;

class Release : public EngineTest {};

TEST_F(Release, WithThresholdZeroMemoryIsKeptUntilASynchronisation) {
  core::Pool* pool = make_pool();
  free(alloc(pool, 1 * MiB, kStream1), kStream1);
  EXPECT_EQ(reserved(pool), 32 * MiB);
  synchronize(kStream1);
  EXPECT_EQ(reserved(pool), 0u);
  EXPECT_EQ(last_backing->mapped_bytes(), 0u);
}

TEST_F(Release, ASuccessfulQueryDoesNotRelease) {
  core::Pool* pool = make_pool();
  free(alloc(pool, 1 * MiB, kStream1), kStream1);
  auto ticket = engine.ticket_for_stream(kStream1, /*releases=*/false);
  engine.commit(ticket);
  EXPECT_EQ(reserved(pool), 32 * MiB);
}

TEST_F(Release, AnEventSynchronizeReleases) {
  core::Pool* pool = make_pool();
  const std::uintptr_t block = alloc(pool, 1 * MiB, kStream1);
  free(block, kStream1);
  engine.event_recorded(0xE5, kStream1);
  auto ticket = engine.ticket_for_event(0xE5, /*releases=*/true);
  engine.commit(ticket);
  EXPECT_EQ(reserved(pool), 0u);
}

TEST_F(Release, ADeviceSynchronizeReleases) {
  core::Pool* pool = make_pool();
  free(alloc(pool, 1 * MiB, kStream1), kStream1);
  engine.commit(engine.ticket_for_all(/*releases=*/true));
  EXPECT_EQ(reserved(pool), 0u);
}

TEST_F(Release, AboveTheThresholdExactlyTheThresholdIsKeptWhereGranulesAllowIt) {
  core::Pool* pool = make_pool();
  ASSERT_EQ(set_attribute<std::uint64_t>(pool, PoolAttribute::release_threshold, 8 * MiB), Status::success);
  free(alloc(pool, 24 * MiB, kStream1), kStream1);  // the first 32 MiB chunk, granule by granule
  synchronize(kStream1);
  EXPECT_EQ(reserved(pool), 8 * MiB);  // the driver drops to 0 (whole chunks)
}

TEST_F(Release, AboveTheThresholdLargeUnitsGoBackWholeAndReservedStaysBelowIt) {
  core::Pool* pool = make_pool();
  ASSERT_EQ(set_attribute<std::uint64_t>(pool, PoolAttribute::release_threshold, 8 * MiB), Status::success);
  free(alloc(pool, 64 * MiB, kStream1), kStream1);  // large growth: 32 MiB units
  synchronize(kStream1);
  EXPECT_LE(reserved(pool), 8 * MiB);  // as the driver measured: 0
  EXPECT_EQ(last_backing->errors(), 0u);
}

TEST_F(Release, FreesNotYetKnownCompleteAreNotReleased) {
  core::Pool* pool = make_pool();
  const std::uintptr_t pending = alloc(pool, 4 * MiB, kStream2);
  ordering.enqueue_work(kStream2);
  free(pending, kStream2);                 // s2 not synchronised: its kernel may still use it
  free(alloc(pool, 8 * MiB, kStream1), kStream1);
  synchronize(kStream1);
  EXPECT_GE(reserved(pool), 4 * MiB);
  EXPECT_TRUE(last_backing->is_mapped(pending));
}

TEST_F(Release, TrimToKeepsAtLeastTheBytesAskedFor) {
  core::Pool* pool = make_pool();
  ASSERT_EQ(set_attribute<std::uint64_t>(pool, PoolAttribute::release_threshold, UINT64_MAX), Status::success);
  free(alloc(pool, 32 * MiB, kStream1), kStream1);
  synchronize(kStream1);
  ASSERT_EQ(reserved(pool), 32 * MiB);
  EXPECT_EQ(engine.trim_to(pool, 10 * MiB), Status::success);
  EXPECT_EQ(reserved(pool), 10 * MiB);  // a first growth maps granules; the driver keeps the whole 32 MiB chunk
  EXPECT_EQ(engine.trim_to(pool, 0), Status::success);
  EXPECT_EQ(reserved(pool), 0u);
}

// Once a release gave memory back, a growth from nothing maps its chunk as one unit (one driver
// mapping instead of sixteen: a program synchronising at threshold 0 maps its working set again
// every iteration). A trim then keeps the whole unit rather than go below what it was asked to
// keep, as the driver keeps its 32 MiB chunk; a release threshold may take it (as the driver's).
TEST_F(Release, AfterAReleaseAGrowthMapsOneUnitThatATrimKeepsWhole) {
  core::Pool* pool = make_pool();
  free(alloc(pool, 1 * MiB, kStream1), kStream1);
  synchronize(kStream1);  // threshold 0: everything goes back
  ASSERT_EQ(reserved(pool), 0u);
  const std::size_t maps_before = last_backing->map_calls();
  free(alloc(pool, 1 * MiB, kStream1), kStream1);
  EXPECT_EQ(reserved(pool), 32 * MiB);
  EXPECT_EQ(last_backing->map_calls() - maps_before, 1u) << "the chunk as one mapping";
  EXPECT_EQ(engine.trim_to(pool, 10 * MiB), Status::success);
  EXPECT_EQ(reserved(pool), 32 * MiB) << "a trim never goes below what it keeps";
  synchronize(kStream1);
  EXPECT_EQ(reserved(pool), 0u) << "threshold 0 gives the whole unit back";
}

TEST_F(Release, TrimToGivesBackEveryGranuleNoLiveBlockTouches) {
  core::Pool* pool = make_pool();
  ASSERT_EQ(set_attribute<std::uint64_t>(pool, PoolAttribute::release_threshold, UINT64_MAX), Status::success);
  const std::uintptr_t kept = alloc(pool, 1 * MiB, kStream1);
  free(alloc(pool, 20 * MiB, kStream1), kStream1);
  synchronize(kStream1);
  EXPECT_EQ(engine.trim_to(pool, 0), Status::success);
  EXPECT_EQ(reserved(pool), 2 * MiB);  // one granule; the driver keeps the 32 MiB chunk
  EXPECT_TRUE(last_backing->is_mapped(kept));
}

TEST_F(Release, TrimmedSpaceIsMappedAgainWhenNeeded) {
  core::Pool* pool = make_pool();
  const std::uintptr_t first = alloc(pool, 8 * MiB, kStream1);
  free(first, kStream1);
  synchronize(kStream1);
  ASSERT_EQ(reserved(pool), 0u);
  const std::uintptr_t again = alloc(pool, 8 * MiB, kStream1);
  EXPECT_EQ(again, first);  // the same address space, mapped anew
  EXPECT_TRUE(last_backing->is_mapped(again));
  EXPECT_EQ(last_backing->errors(), 0u);
}

TEST_F(Release, OutOfMemoryGivesBackFreeGranulesAndRetries) {
  InMemoryBacking::Config config;
  config.physical_bytes = 64 * MiB;
  core::Pool* pool = make_pool({}, config);
  ASSERT_EQ(set_attribute<std::uint64_t>(pool, PoolAttribute::release_threshold, UINT64_MAX), Status::success);
  // The device full, the pool's free memory split by a live block: [0,12) free, [12,14) live,
  // [14,64) free.
  const std::uintptr_t low = alloc(pool, 12 * MiB, kStream1);
  const std::uintptr_t middle = alloc(pool, 2 * MiB, kStream1);
  const std::uintptr_t high = alloc(pool, 50 * MiB, kStream1);
  ASSERT_EQ(middle, low + 12 * MiB);
  ASSERT_EQ(reserved(pool), 64 * MiB);
  free(low, kStream1);
  free(high, kStream1);
  synchronize(kStream1);
  std::uintptr_t address = 0;
  EXPECT_EQ(try_alloc(pool, 63 * MiB, kStream1, &address), Status::out_of_memory);
  EXPECT_EQ(reserved(pool), 64 * MiB);  // a failed attempt leaves the pool as it was
  EXPECT_EQ(try_alloc(pool, 56 * MiB, kStream1, &address), Status::success);  // 50 MiB is the largest hole
  EXPECT_EQ(address, middle + 2 * MiB);
  EXPECT_EQ(reserved(pool), 58 * MiB);
  EXPECT_EQ(last_backing->errors(), 0u);
}

}  // namespace
}  // namespace streampool::testing
