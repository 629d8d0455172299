#include "core/usage_counter.hpp"

#include <gtest/gtest.h>

#include <mutex>

namespace streampool::core {
namespace {

// A stream's allocation as the engine makes it: under the shard's lock, slow path outside it.
void charge(UsageCounter& usage, UsageShard& shard, std::uint64_t bytes) {
  bool charged = false;
  {
    std::lock_guard guard(shard.lock);
    charged = UsageCounter::try_charge(shard, bytes);
  }
  if (!charged) usage.charge_slow(shard, bytes);
}

class UsageCounterTest : public ::testing::Test {
 protected:
  UsageCounter usage;
  SpinLock lock_a, lock_b;
  UsageShard* a = usage.new_shard(lock_a);
  UsageShard* b = usage.new_shard(lock_b);
};

TEST_F(UsageCounterTest, TheHighWatermarkIsTheMaximumOfTheSumAcrossShards) {
  charge(usage, *a, 100);
  usage.credit_locking(*a, 100);  // a now holds 100 of quota
  charge(usage, *b, 60);          // b has none: the slow path takes a's quota, no new high
  EXPECT_EQ(usage.high(), 100u);
  charge(usage, *a, 50);          // 110 in use: the high rises by exactly 10
  EXPECT_EQ(usage.used(), 110u);
  EXPECT_EQ(usage.high(), 110u);
}

TEST_F(UsageCounterTest, ResettingTheHighLowersItToTheCurrentSum) {
  charge(usage, *a, 300);
  usage.credit_locking(*a, 200);
  usage.reset_high();
  EXPECT_EQ(usage.high(), 100u);
  charge(usage, *a, 50);
  EXPECT_EQ(usage.high(), 150u);
}

TEST_F(UsageCounterTest, AFreeOnAnotherShardStillBalances) {
  charge(usage, *a, 1000);
  usage.credit_locking(*b, 1000);
  EXPECT_EQ(usage.used(), 0u);
  {
    std::lock_guard guard(lock_b);
    EXPECT_TRUE(UsageCounter::try_charge(*b, 1000));  // within b's quota: no slow path
  }
  EXPECT_EQ(usage.high(), 1000u);
}

}  // namespace
}  // namespace streampool::core
