#include "core/free_index.hpp"

#include <gtest/gtest.h>

namespace streampool::core {
namespace {

const auto kAnyone = Requirements{};

TEST(FreeIndex, NeighboursWaitingOnTheSameFreeMerge) {
  FreeIndex index;
  index.insert(0x1000, 0x100, Requirements::of(1, 3));
  index.insert(0x1200, 0x100, Requirements::of(1, 3));
  index.insert(0x1100, 0x100, Requirements::of(1, 3));
  ASSERT_EQ(index.range_count(), 1u);
  auto range = index.range_at(0x1000);
  ASSERT_TRUE(range);
  EXPECT_EQ(range->address, 0x1000u);
  EXPECT_EQ(range->bytes, 0x300u);
  EXPECT_TRUE(range->requirements.same_as(Requirements::of(1, 3)));
}

TEST(FreeIndex, NeighboursWaitingOnDifferentFreesStayApart) {
  FreeIndex index;
  index.insert(0x1000, 0x100, kAnyone);
  index.insert(0x1100, 0x100, Requirements::of(1, 3));  // would hide the free memory from others
  index.insert(0x1200, 0x100, Requirements::of(1, 4));  // would make tick 3 wait for tick 4
  index.insert(0x1300, 0x100, Requirements::of(2, 4));
  EXPECT_EQ(index.range_count(), 4u);
  EXPECT_EQ(index.free_bytes(), 0x400u);
}

TEST(FreeIndex, BestRunJoinsAdjacentRangesTheCallerMayUse) {
  FreeIndex index;
  index.insert(0x1000, 0x100, Requirements::of(1, 3));
  index.insert(0x1100, 0x100, kAnyone);
  index.insert(0x1200, 0x100, Requirements::of(2, 3));
  const auto stream1 = [](const Requirements& r) { return r.met_by([](std::uint32_t slot) { return slot == 1 ? 9u : 0u; }); };
  EXPECT_FALSE(index.best_fit(0x200, stream1));
  auto run = index.best_run(0x200, stream1);
  ASSERT_TRUE(run);
  EXPECT_EQ(run->address, 0x1000u);
  EXPECT_FALSE(index.best_run(0x300, stream1));  // stream 2's free is not stream 1's to use
  index.take_span(0x1000, 0x180);
  EXPECT_EQ(index.free_bytes(), 0x180u);
  EXPECT_EQ(index.range_at(0x1180)->bytes, 0x80u);
  EXPECT_EQ(index.run_start_before(0x1200, stream1), 0x1180u);
}

TEST(FreeIndex, BestFitPrefersTheSmallestThenTheLowestAddress) {
  FreeIndex index;
  index.insert(0x9000, 0x400, kAnyone);
  index.insert(0x1000, 0x200, kAnyone);
  index.insert(0x5000, 0x200, kAnyone);
  auto fit = index.best_fit(0x200);
  ASSERT_TRUE(fit);
  EXPECT_EQ(fit->address, 0x1000u);
  EXPECT_EQ(index.best_fit(0x300)->address, 0x9000u);
  EXPECT_FALSE(index.best_fit(0x500));
}

TEST(FreeIndex, BestFitSkipsRangesTheCallerMayNotUse) {
  FreeIndex index;
  index.insert(0x1000, 0x200, Requirements::of(7, 5));
  index.insert(0x5000, 0x400, Requirements::of(8, 2));
  const auto knows_up_to_3 = [](const Requirements& r) { return r.met_by([](std::uint32_t) { return 3u; }); };
  EXPECT_EQ(index.best_fit(0x200, knows_up_to_3)->address, 0x5000u);
  const auto knows_nothing = [](const Requirements& r) { return r.met_by([](std::uint32_t) { return 0u; }); };
  EXPECT_FALSE(index.best_fit(0x200, knows_nothing));
}

TEST(FreeIndex, TakingFromTheMiddleLeavesBothEndsFreeWithTheirRequirements) {
  FreeIndex index;
  index.insert(0x1000, 0x300, Requirements::of(4, 7));
  index.take_inside(0x1000, 0x1100, 0x100);
  EXPECT_EQ(index.range_count(), 2u);
  EXPECT_EQ(index.free_bytes(), 0x200u);
  EXPECT_EQ(index.range_ending_at(0x1100)->requirements.size(), 1u);
  EXPECT_EQ(index.range_at(0x1200)->bytes, 0x100u);
  index.take(0x1000, 0x80);  // from the start: the node moves
  EXPECT_EQ(index.range_at(0x1080)->bytes, 0x80u);
  EXPECT_EQ(index.best_fit(0x80)->address, 0x1080u);
}

TEST(FreeIndex, SettlingClearsMetRequirementsAndMergesWhatNowUnites) {
  FreeIndex index;
  index.insert(0x1000, 0x100, kAnyone);
  index.insert(0x1100, 0x100, Requirements::of(1, 3));
  index.insert(0x1200, 0x100, Requirements::of(2, 5));
  ASSERT_EQ(index.range_count(), 3u);
  index.settle([](const Requirements& r) { return r.met_by([](std::uint32_t) { return 4u; }); });
  EXPECT_EQ(index.range_count(), 2u);  // stream 2's tick 5 is not known complete yet
  EXPECT_EQ(index.range_at(0x1000)->bytes, 0x200u);
  EXPECT_TRUE(index.range_at(0x1000)->requirements.empty());
}

}  // namespace
}  // namespace streampool::core

namespace streampool::core {
namespace {

// Best fit over the size classes: within a class sizes differ, so the smallest fitting range
// must win over the first one listed, and a larger class is searched only when none fits.
TEST(FreeIndex, BestFitTakesTheSmallestFittingRangeAcrossSizeClasses) {
  FreeIndex index;
  const std::size_t unit = 512;
  index.insert(0x100000, 40 * unit);  // same class as 36..39 units, too small for 41
  index.insert(0x200000, 47 * unit);
  index.insert(0x300000, 43 * unit);
  index.insert(0x400000, 64 * unit);  // a higher class
  EXPECT_EQ(index.best_fit(41 * unit)->address, 0x300000u);
  EXPECT_EQ(index.best_fit(48 * unit)->address, 0x400000u);
  EXPECT_FALSE(index.best_fit(65 * unit));
}

TEST(FreeIndex, ThousandsOfRangesKeepTheirNeighboursAndTotals) {
  FreeIndex index;
  // Every other 512-byte slot free, then the gaps freed: everything coalesces into one range.
  for (std::uintptr_t i = 0; i < 4096; i += 2) index.insert(0x10000 + i * 512, 512);
  EXPECT_EQ(index.range_count(), 2048u);
  for (std::uintptr_t i = 1; i < 4096; i += 2) index.insert(0x10000 + i * 512, 512);
  EXPECT_EQ(index.range_count(), 1u);
  EXPECT_EQ(index.free_bytes(), 4096u * 512);
  EXPECT_EQ(index.best_fit(4096 * 512)->address, 0x10000u);
}

}  // namespace
}  // namespace streampool::core
