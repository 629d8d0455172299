#include "insight/leak_ledger.hpp"

#include <gtest/gtest.h>

namespace streampool::insight {
namespace {

CallStack stack_of(std::uintptr_t frame) {
  CallStack stack;
  stack.frames[0] = frame;
  stack.depth = 1;
  return stack;
}

LedgerLimits small_limits() {
  LedgerLimits limits;
  limits.max_sites = 8;
  limits.recent_frees = 2;
  limits.recent_streams = 2;
  limits.bad_frees_kept = 2;
  return limits;
}

TEST(LeakLedger, AFreeThatTookEffectLeavesItsSitesLiveTotalsAndIsRemembered) {
  LeakLedger ledger(small_limits());
  const SiteId alloc_site = ledger.sites().intern(stack_of(0x100));
  const SiteId free_site = ledger.sites().intern(stack_of(0x200));
  ledger.allocated(0x7000, 4096, alloc_site, 0);
  LiveAllocation live;
  ASSERT_EQ(ledger.begin_free(0x7000, 1, &live), LeakLedger::Claim::live);
  EXPECT_EQ(live.bytes, 4096U);
  ledger.end_free(0x7000, 1, true, free_site);
  EXPECT_EQ(ledger.sites().sites().at(alloc_site).live_bytes, 0U);
  FreedAllocation freed;
  ASSERT_TRUE(ledger.recently_freed(0x7000, &freed));
  EXPECT_EQ(freed.allocation_site, alloc_site);
  EXPECT_EQ(freed.free_site, free_site);
  EXPECT_EQ(ledger.begin_free(0x7000, 1, &live), LeakLedger::Claim::unknown);
}

TEST(LeakLedger, ARefusedFreeLeavesTheAllocationLiveAndUnclaimed) {
  LeakLedger ledger(small_limits());
  const SiteId site = ledger.sites().intern(stack_of(0x100));
  ledger.allocated(0x7000, 64, site, 0);
  LiveAllocation live;
  ASSERT_EQ(ledger.begin_free(0x7000, 1, &live), LeakLedger::Claim::live);
  ledger.end_free(0x7000, 1, false, site);
  EXPECT_EQ(ledger.sites().sites().at(site).live_count, 1U);
  EXPECT_EQ(ledger.begin_free(0x7000, 2, &live), LeakLedger::Claim::live);  // not racing thread 1
}

TEST(LeakLedger, ASecondThreadFreeingAClaimedAllocationIsRacing) {
  LeakLedger ledger(small_limits());
  ledger.allocated(0x7000, 64, ledger.sites().intern(stack_of(0x100)), 0);
  LiveAllocation live;
  ASSERT_EQ(ledger.begin_free(0x7000, 1, &live), LeakLedger::Claim::live);
  EXPECT_EQ(ledger.begin_free(0x7000, 2, &live), LeakLedger::Claim::racing);
  EXPECT_EQ(live.freeing_thread, 1U);
}

TEST(LeakLedger, TheRingForgetsTheOldestFreesFirst) {
  LeakLedger ledger(small_limits());  // two frees remembered
  const SiteId site = ledger.sites().intern(stack_of(0x100));
  LiveAllocation live;
  for (std::uintptr_t address : {0x1000U, 0x2000U, 0x3000U}) {
    ledger.allocated(address, 8, site, 0);
    ledger.begin_free(address, 1, &live);
    ledger.end_free(address, 1, true, site);
  }
  FreedAllocation freed;
  EXPECT_FALSE(ledger.recently_freed(0x1000, &freed));
  EXPECT_TRUE(ledger.recently_freed(0x2000, &freed));
  EXPECT_TRUE(ledger.recently_freed(0x3000, &freed));
}

TEST(LeakLedger, DestroyedStreamsAreRememberedBoundedly) {
  LeakLedger ledger(small_limits());
  ledger.stream_destroyed(0xa0);
  ledger.stream_destroyed(0xb0);
  ledger.stream_destroyed(0xc0);
  EXPECT_FALSE(ledger.was_destroyed(0xa0));
  EXPECT_TRUE(ledger.was_destroyed(0xb0));
  EXPECT_TRUE(ledger.was_destroyed(0xc0));
  EXPECT_FALSE(ledger.was_destroyed(0));
}

TEST(LeakLedger, EveryBadFreeIsCountedAndTheFirstFewKept) {
  LeakLedger ledger(small_limits());  // two events kept
  for (int i = 0; i < 3; ++i) {
    BadFreeEvent event;
    event.kind = BadFree::double_free;
    event.address = 0x1000U + static_cast<unsigned>(i);
    ledger.record_bad_free(event);
  }
  EXPECT_EQ(ledger.bad_free_count(BadFree::double_free), 3U);
  EXPECT_EQ(ledger.bad_free_count(BadFree::racing), 0U);
  EXPECT_EQ(ledger.bad_frees().size(), 2U);
}

TEST(LeakLedger, AnAddressHandedOutAgainReplacesTheUnseenFreesAllocation) {
  LeakLedger ledger(small_limits());
  const SiteId first = ledger.sites().intern(stack_of(0x100));
  const SiteId second = ledger.sites().intern(stack_of(0x200));
  ledger.allocated(0x7000, 64, first, 0);
  ledger.allocated(0x7000, 32, second, 0);
  EXPECT_EQ(ledger.sites().sites().at(first).live_count, 0U);
  EXPECT_EQ(ledger.sites().sites().at(second).live_bytes, 32U);
  EXPECT_EQ(ledger.live_allocations(), 1U);
}

}  // namespace
}  // namespace streampool::insight
