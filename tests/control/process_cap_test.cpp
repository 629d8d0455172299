// The process cap's counters (src/control/process_cap.hpp): the limit applies to the sum of what
// the pools and the forwarded allocations hold, a refused charge changes nothing, and the counts
// stay exact under concurrent charges and never go below zero.
#include "control/process_cap.hpp"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace streampool::control {
namespace {

constexpr std::uint64_t MiB = 1ull << 20;

TEST(ProcessCap, WithoutALimitEverythingIsChargedAndCounted) {
  ProcessCap cap;
  EXPECT_TRUE(cap.try_charge(0, 100 * MiB));
  EXPECT_EQ(cap.charged(0), 100 * MiB);
  EXPECT_EQ(cap.limit(0), kNoLimit);
  EXPECT_EQ(cap.headroom(0), kNoLimit);
  EXPECT_FALSE(cap.any_limit());
}

TEST(ProcessCap, AChargePastTheLimitIsRefusedAndChangesNothing) {
  ProcessCap cap;
  cap.set_limit(1, 64 * MiB);
  EXPECT_TRUE(cap.try_charge(1, 60 * MiB));
  EXPECT_FALSE(cap.try_charge(1, 8 * MiB));
  EXPECT_EQ(cap.charged(1), 60 * MiB);
  EXPECT_TRUE(cap.try_charge(1, 4 * MiB));
  EXPECT_EQ(cap.headroom(1), 0u);
  EXPECT_TRUE(cap.any_limit());
}

TEST(ProcessCap, TheLimitAppliesToPoolsAndForwardedAllocationsTogether) {
  ProcessCap cap;
  cap.set_limit(0, 10 * MiB);
  EXPECT_TRUE(cap.try_charge(Holder::pools, 0, 6 * MiB));
  EXPECT_FALSE(cap.try_charge(Holder::forwarded, 0, 6 * MiB));
  EXPECT_TRUE(cap.try_charge(Holder::forwarded, 0, 4 * MiB));
  EXPECT_EQ(cap.held(Holder::pools, 0), 6 * MiB);
  EXPECT_EQ(cap.held(Holder::forwarded, 0), 4 * MiB);
  cap.uncharge(Holder::pools, 0, 6 * MiB);
  EXPECT_EQ(cap.charged(0), 4 * MiB);
}

TEST(ProcessCap, ThePeakIsTheMostEverChargedAtOnce) {
  ProcessCap cap;
  ASSERT_TRUE(cap.try_charge(0, 5 * MiB));
  ASSERT_TRUE(cap.try_charge(Holder::forwarded, 0, 3 * MiB));
  cap.uncharge(0, 5 * MiB);
  ASSERT_TRUE(cap.try_charge(0, 1 * MiB));
  EXPECT_EQ(cap.peak(0), 8 * MiB);
  EXPECT_EQ(cap.charged(0), 4 * MiB);
}

TEST(ProcessCap, DevicesAreCountedApart) {
  ProcessCap cap;
  cap.set_limit(0, 8 * MiB);
  EXPECT_TRUE(cap.try_charge(0, 8 * MiB));
  EXPECT_TRUE(cap.try_charge(1, 800 * MiB));
  EXPECT_EQ(cap.charged(0), 8 * MiB);
  EXPECT_EQ(cap.charged(1), 800 * MiB);
}

TEST(ProcessCap, GivingBackMoreThanWasChargedStopsAtZero) {
  ProcessCap cap;
  cap.set_limit(0, 8 * MiB);
  ASSERT_TRUE(cap.try_charge(Holder::forwarded, 0, 2 * MiB));
  ASSERT_TRUE(cap.try_charge(Holder::pools, 0, 2 * MiB));
  cap.uncharge(Holder::forwarded, 0, 5 * MiB);
  EXPECT_EQ(cap.held(Holder::forwarded, 0), 0u);
  EXPECT_EQ(cap.charged(0), 2 * MiB);  // the pools' part is untouched
  EXPECT_TRUE(cap.try_charge(0, 6 * MiB));
}

TEST(ProcessCap, AChargeThatWouldWrapAroundIsRefused) {
  ProcessCap cap;
  ASSERT_TRUE(cap.try_charge(0, UINT64_MAX - 1));
  EXPECT_FALSE(cap.try_charge(0, 2));
  EXPECT_EQ(cap.charged(0), UINT64_MAX - 1);
}

TEST(ProcessCap, DevicesPastTheTableAreNeitherLimitedNorCounted) {
  ProcessCap cap;
  cap.set_limit(kMaxDevices, 1);
  EXPECT_TRUE(cap.try_charge(kMaxDevices, 100));
  EXPECT_TRUE(cap.try_charge(-1, 100));
  EXPECT_EQ(cap.charged(kMaxDevices), 0u);
  EXPECT_FALSE(cap.any_limit());
}

TEST(ProcessCap, ConcurrentChargesNeverPassTheLimitAndCountExactly) {
  ProcessCap cap;
  cap.set_limit(0, 1000 * MiB);
  std::vector<std::thread> threads;
  std::atomic<std::uint64_t> granted{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20000; ++i) {
        if (cap.try_charge(Holder::pools, 0, 3 * MiB)) {
          granted.fetch_add(3 * MiB);
          if (i % 2 == 0) {
            cap.uncharge(Holder::pools, 0, 3 * MiB);
            granted.fetch_sub(3 * MiB);
          }
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_LE(cap.charged(0), 1000 * MiB);
  EXPECT_EQ(cap.charged(0), granted.load());
  EXPECT_EQ(cap.held(Holder::pools, 0), granted.load());
}

}  // namespace
}  // namespace streampool::control


namespace streampool::control {
namespace {

// A budget of one fixed limit, standing in for the group's (STREAMPOOL_GROUP).
class FixedBudget final : public Budget {
 public:
  explicit FixedBudget(std::uint64_t limit) : limit_(limit) {}
  bool try_charge(int, std::uint64_t bytes) noexcept override {
    if (charged_ + bytes > limit_) return false;
    charged_ += bytes;
    return true;
  }
  void uncharge(int, std::uint64_t bytes) noexcept override { charged_ -= bytes < charged_ ? bytes : charged_; }
  std::uint64_t limit(int) const noexcept override { return limit_; }
  std::uint64_t charged(int) const noexcept override { return charged_; }

 private:
  std::uint64_t limit_;
  std::uint64_t charged_ = 0;
};

TEST(ProcessCap, AChargeTheSharedBudgetRefusesIsTakenBackFromTheProcess) {
  ProcessCap cap;
  FixedBudget group(100);
  cap.set_limit(0, 1000);
  cap.share_with(&group);
  ASSERT_TRUE(cap.try_charge(Holder::pools, 0, 80));
  EXPECT_FALSE(cap.try_charge(Holder::forwarded, 0, 30));
  EXPECT_EQ(cap.charged(0), 80u);
  EXPECT_EQ(cap.held(Holder::forwarded, 0), 0u);
  EXPECT_EQ(group.charged(0), 80u);
}

TEST(ProcessCap, WhatIsGivenBackIsGivenBackToTheSharedBudgetToo) {
  ProcessCap cap;
  FixedBudget group(100);
  cap.share_with(&group);
  ASSERT_TRUE(cap.try_charge(Holder::pools, 0, 60));
  cap.uncharge(Holder::pools, 0, 100);  // more than was charged: only the 60 go back, both sides
  EXPECT_EQ(cap.charged(0), 0u);
  EXPECT_EQ(group.charged(0), 0u);
  EXPECT_TRUE(cap.any_limit());
}

TEST(ProcessCap, TheEffectiveLimitAndHeadroomAreTheLowerOfTheProcessAndTheGroup) {
  ProcessCap cap;
  FixedBudget group(100);
  cap.set_limit(0, 1000);
  cap.share_with(&group);
  ASSERT_TRUE(group.try_charge(0, 70));  // another member's share
  ASSERT_TRUE(cap.try_charge(Holder::pools, 0, 10));
  EXPECT_EQ(cap.effective_limit(0), 100u);
  EXPECT_EQ(cap.effective_headroom(0), 20u);
  EXPECT_EQ(cap.headroom(0), 990u);
}

}  // namespace
}  // namespace streampool::control
