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
  auto range = index.range_containing(0x1150);
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
  EXPECT_EQ(index.range_containing(0x1180)->bytes, 0x80u);
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
  index.take(0x1100, 0x100);
  EXPECT_EQ(index.range_count(), 2u);
  EXPECT_EQ(index.free_bytes(), 0x200u);
  EXPECT_EQ(index.range_ending_at(0x1100)->requirements.size(), 1u);
  EXPECT_EQ(index.range_containing(0x1250)->address, 0x1200u);
  index.take(0x1000, 0x80);  // from the start: the node moves
  EXPECT_EQ(index.range_containing(0x1080)->bytes, 0x80u);
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
  EXPECT_EQ(index.range_containing(0x1000)->bytes, 0x200u);
  EXPECT_TRUE(index.range_containing(0x1000)->requirements.empty());
}

}  // namespace
}  // namespace streampool::core
