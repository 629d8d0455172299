// The engine's read-only figures for reports (the out-of-memory report): a pool's free bytes, its
// largest free range, the frees other streams still wait on, and the largest live allocations.
#include "engine_fixture.hpp"

namespace streampool::testing {
namespace {

using core::PoolAttribute;
using core::Status;

class FreeFigures : public EngineTest {
 protected:
  core::Pool* keeping_pool() {
    core::Pool* pool = make_pool();
    EXPECT_EQ(set_attribute<std::uint64_t>(pool, PoolAttribute::release_threshold, UINT64_MAX), Status::success);
    return pool;
  }
};

TEST_F(FreeFigures, AFreeBehindUnfinishedWorkIsPendingOnItsStream) {
  core::Pool* pool = keeping_pool();
  const std::uintptr_t block = alloc(pool, 4 * MiB, kStream1);
  ordering.enqueue_work(kStream1);
  free(block, kStream1);
  const core::FreeFigures figures = engine.free_figures(pool);
  EXPECT_GE(figures.free_bytes, 4 * MiB);
  ASSERT_EQ(figures.pending.size(), 1u);
  EXPECT_EQ(figures.pending[0].stream, kStream1);
  EXPECT_EQ(figures.pending[0].bytes, 4 * MiB);
  EXPECT_FALSE(figures.pending[0].stream_ended);
  EXPECT_GT(figures.pending[0].waits_for_tick, figures.pending[0].completed_tick);
}

TEST_F(FreeFigures, ASynchronisedFreeIsNoLongerPending) {
  core::Pool* pool = keeping_pool();
  const std::uintptr_t block = alloc(pool, 4 * MiB, kStream1);
  ordering.enqueue_work(kStream1);
  free(block, kStream1);
  synchronize(kStream1);
  EXPECT_TRUE(engine.free_figures(pool).pending.empty());
}

// Opportunistic reuse (the default): a free whose stream's marker completed is complete, for the
// report as for reuse, though no one synchronised.
TEST_F(FreeFigures, AFreeAMarkerProvedCompleteIsNoLongerPending) {
  core::Pool* pool = keeping_pool();
  const std::uintptr_t block = alloc(pool, 32 * MiB, kStream1);
  ordering.enqueue_work(kStream1);
  free(block, kStream1);
  EXPECT_NE(alloc(pool, 32 * MiB, kStream2), block);  // pending: grows, records a marker on s1
  ASSERT_EQ(ordering.records(), 1u);
  ordering.complete(kStream1);  // the work ends; nobody synchronises
  alloc(pool, 64 * KiB, kStream2);  // polls the marker; most of the block stays free
  const core::FreeFigures figures = engine.free_figures(pool);
  EXPECT_GE(figures.free_bytes, 32 * MiB - 64 * KiB);
  EXPECT_TRUE(figures.pending.empty());
}

TEST_F(FreeFigures, FreesSeparatedByALiveBlockAreTwoRanges) {
  core::Pool* pool = keeping_pool();
  const std::uintptr_t first = alloc(pool, 1 * MiB, kStream1);
  const std::uintptr_t middle = alloc(pool, 1 * MiB, kStream1);
  const std::uintptr_t last = alloc(pool, 1 * MiB, kStream1);
  (void)middle;
  free(first, kStream1);
  free(last, kStream1);
  synchronize(kStream1);
  const core::FreeFigures figures = engine.free_figures(pool);
  EXPECT_GE(figures.free_bytes, 2 * MiB);
  EXPECT_LT(figures.largest_free, figures.free_bytes);
}

TEST_F(FreeFigures, LargestLiveAllocationsComeLargestFirstAndOnlyFromThePool) {
  core::Pool* pool = keeping_pool();
  core::Pool* other = keeping_pool();
  alloc(pool, 1 * MiB, kStream1);
  const std::uintptr_t big = alloc(pool, 3 * MiB, kStream1);
  const std::uintptr_t mid = alloc(pool, 2 * MiB, kStream1);
  alloc(other, 8 * MiB, kStream1);
  const std::vector<core::BlockInfo> largest = engine.largest_live(pool, 2);
  ASSERT_EQ(largest.size(), 2u);
  EXPECT_EQ(largest[0].base, big);
  EXPECT_EQ(largest[0].requested_bytes, 3 * MiB);
  EXPECT_EQ(largest[1].base, mid);
}

}  // namespace
}  // namespace streampool::testing
