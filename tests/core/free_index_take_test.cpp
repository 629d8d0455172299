// Taking part of a free range leaves the rest free with exactly what it waited on before. The
// engine takes from the middle of a range only when releasing whole mapping units of memory
// anyone may use, so a tail that lost its requirements there would go unnoticed by every test
// of the engine: the index keeps the rule on its own.
#include <gtest/gtest.h>

#include "core/free_index.hpp"

namespace streampool::core {
namespace {

TEST(FreeIndexTake, TakingFromTheMiddleOfARangeLeavesBothEndsWaitingOnTheSameFree) {
  FreeIndex index;
  index.insert(0x10000, 0x3000, Requirements::of(2, 7));

  index.take_inside(0x10000, 0x11000, 0x1000);

  const auto head = index.range_at(0x10000);
  const auto tail = index.range_at(0x12000);
  ASSERT_TRUE(head && tail);
  EXPECT_EQ(head->bytes, 0x1000u);
  EXPECT_EQ(tail->bytes, 0x1000u);
  EXPECT_TRUE(head->requirements.same_as(Requirements::of(2, 7)));
  EXPECT_TRUE(tail->requirements.same_as(Requirements::of(2, 7))) << "the tail became free for anyone";
}

TEST(FreeIndexTake, TakingTheStartOfARangeLeavesTheRestWaitingOnTheSameFree) {
  FreeIndex index;
  index.insert(0x10000, 0x3000, Requirements::of(2, 7));

  index.take(0x10000, 0x1000);

  const auto rest = index.range_at(0x11000);
  ASSERT_TRUE(rest);
  EXPECT_EQ(rest->bytes, 0x2000u);
  EXPECT_TRUE(rest->requirements.same_as(Requirements::of(2, 7)));
}

}  // namespace
}  // namespace streampool::core
