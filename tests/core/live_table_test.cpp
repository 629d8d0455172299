#include "core/live_table.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace streampool::core {
namespace {

TEST(LiveTable, FindsWhatWasInsertedAndForgetsWhatWasErased) {
  LiveTable table;
  table.insert(LiveBlock{0x10000, 512, 100, nullptr});
  ASSERT_TRUE(table.find(0x10000));
  EXPECT_EQ(table.find(0x10000)->requested_bytes, 100u);
  EXPECT_TRUE(table.erase(0x10000));
  EXPECT_FALSE(table.find(0x10000));
  EXPECT_FALSE(table.erase(0x10000));
}

TEST(LiveTable, ManyEntriesSurviveGrowthAndBackwardShiftDeletion) {
  LiveTable table;
  std::vector<std::uintptr_t> addresses;
  for (std::uintptr_t i = 1; i <= 20000; ++i) addresses.push_back(i * 512);
  for (std::uintptr_t address : addresses) table.insert(LiveBlock{address, 512, address, nullptr});
  for (std::size_t i = 0; i < addresses.size(); i += 2) ASSERT_TRUE(table.erase(addresses[i]));
  for (std::size_t i = 0; i < addresses.size(); ++i) {
    auto found = table.find(addresses[i]);
    if (i % 2 == 0) {
      EXPECT_FALSE(found) << i;
    } else {
      ASSERT_TRUE(found) << i;
      EXPECT_EQ(found->requested_bytes, addresses[i]);
    }
  }
}

TEST(LiveTable, FindsTheBlockHoldingAnInteriorAddress) {
  LiveTable table;
  table.insert(LiveBlock{0x100000, 0x10000, 0x10000, nullptr});
  auto found = table.find_containing(0x100000 + 0x1234);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->address, 0x100000u);
  EXPECT_FALSE(table.find_containing(0x100000 + 0x10000));
}

}  // namespace
}  // namespace streampool::core
