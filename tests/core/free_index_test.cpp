#include "core/free_index.hpp"

#include <gtest/gtest.h>

namespace streampool::core {
namespace {

TEST(FreeIndex, NeighboursMergeIntoOneRangeWithTheLatestTick) {
  FreeIndex index;
  index.insert(0x1000, 0x100, 1);
  index.insert(0x1200, 0x100, 3);
  index.insert(0x1100, 0x100, 2);
  ASSERT_EQ(index.range_count(), 1u);
  auto range = index.range_containing(0x1150);
  ASSERT_TRUE(range);
  EXPECT_EQ(range->address, 0x1000u);
  EXPECT_EQ(range->bytes, 0x300u);
  EXPECT_EQ(range->tick, 3u);
}

TEST(FreeIndex, BestFitPrefersTheSmallestThenTheLowestAddress) {
  FreeIndex index;
  index.insert(0x9000, 0x400, 0);
  index.insert(0x1000, 0x200, 0);
  index.insert(0x5000, 0x200, 0);
  auto fit = index.best_fit(0x200);
  ASSERT_TRUE(fit);
  EXPECT_EQ(fit->address, 0x1000u);
  EXPECT_EQ(index.best_fit(0x300)->address, 0x9000u);
  EXPECT_FALSE(index.best_fit(0x500));
}

TEST(FreeIndex, BestFitSkipsRangesFreedAfterTheTickBound) {
  FreeIndex index;
  index.insert(0x1000, 0x200, 5);
  index.insert(0x5000, 0x400, 2);
  EXPECT_EQ(index.best_fit(0x200, 3)->address, 0x5000u);
  EXPECT_FALSE(index.best_fit(0x200, 1));
}

TEST(FreeIndex, TakingFromTheMiddleLeavesBothEndsFree) {
  FreeIndex index;
  index.insert(0x1000, 0x300, 7);
  index.take(0x1100, 0x100);
  EXPECT_EQ(index.range_count(), 2u);
  EXPECT_EQ(index.free_bytes(), 0x200u);
  EXPECT_EQ(index.range_ending_at(0x1100)->tick, 7u);
  EXPECT_EQ(index.range_containing(0x1250)->address, 0x1200u);
}

}  // namespace
}  // namespace streampool::core
