#include "core/usage_counter.hpp"

#include <gtest/gtest.h>

namespace streampool::core {
namespace {

TEST(UsageCounter, TheHighWatermarkIsTheMaximumOfTheSumAcrossShards) {
  UsageCounter usage;
  UsageShard* a = usage.new_shard();
  UsageShard* b = usage.new_shard();
  usage.charge(*a, 100);
  usage.credit(*a, 100);  // a now holds 100 of quota
  usage.charge(*b, 60);   // b has none: the slow path uses a's quota, no new high
  EXPECT_EQ(usage.high(), 100u);
  usage.charge(*a, 50);   // 110 in use: high rises by exactly 10
  EXPECT_EQ(usage.used(), 110u);
  EXPECT_EQ(usage.high(), 110u);
}

TEST(UsageCounter, ResettingTheHighLowersItToTheCurrentSum) {
  UsageCounter usage;
  UsageShard* a = usage.new_shard();
  usage.charge(*a, 300);
  usage.credit(*a, 200);
  usage.reset_high();
  EXPECT_EQ(usage.high(), 100u);
  usage.charge(*a, 50);
  EXPECT_EQ(usage.high(), 150u);
}

TEST(UsageCounter, AFreeOnAnotherShardStillBalances) {
  UsageCounter usage;
  UsageShard* a = usage.new_shard();
  UsageShard* b = usage.new_shard();
  usage.charge(*a, 1000);
  usage.credit(*b, 1000);
  EXPECT_EQ(usage.used(), 0u);
  usage.charge(*b, 1000);  // within b's quota
  EXPECT_EQ(usage.high(), 1000u);
}

}  // namespace
}  // namespace streampool::core
