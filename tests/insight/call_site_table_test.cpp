#include "insight/call_site_table.hpp"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace streampool::insight {
namespace {

CallStack stack_of(std::initializer_list<std::uintptr_t> frames) {
  CallStack stack;
  for (std::uintptr_t frame : frames) stack.frames[stack.depth++] = frame;
  return stack;
}

TEST(CallSiteTable, EqualStacksShareOneSite) {
  CallSiteTable table(8);
  const SiteId first = table.intern(stack_of({0x1000, 0x2000, 0x3000}));
  const SiteId again = table.intern(stack_of({0x1000, 0x2000, 0x3000}));
  const SiteId other = table.intern(stack_of({0x1000, 0x2000, 0x3001}));
  EXPECT_EQ(first, again);
  EXPECT_NE(first, other);
  EXPECT_EQ(table.site_count(), 2U);
}

TEST(CallSiteTable, AStackThatIsAPrefixOfAnotherIsAnotherSite) {
  CallSiteTable table(8);
  EXPECT_NE(table.intern(stack_of({0x1000, 0x2000})), table.intern(stack_of({0x1000, 0x2000, 0x3000})));
}

TEST(CallSiteTable, SitesPastTheLimitCountAsOtherSites) {
  CallSiteTable table(2);
  const SiteId a = table.intern(stack_of({0x10}));
  const SiteId b = table.intern(stack_of({0x20}));
  const SiteId c = table.intern(stack_of({0x30}));
  EXPECT_NE(a, kOtherSites);
  EXPECT_NE(b, kOtherSites);
  EXPECT_EQ(c, kOtherSites);
  EXPECT_EQ(table.intern(stack_of({0x10})), a);  // known sites are still found
  table.allocated(c, 100);
  table.allocated(table.intern(stack_of({0x40})), 50);
  EXPECT_EQ(table.other_sites().live_bytes, 150U);
  EXPECT_EQ(table.other_sites().live_count, 2U);
  EXPECT_EQ(table.site_count(), 2U);
}

TEST(CallSiteTable, TotalsFollowAllocationsAndFrees) {
  CallSiteTable table(4);
  const SiteId site = table.intern(stack_of({0x10, 0x20}));
  table.allocated(site, 1024);
  table.allocated(site, 512);
  table.freed(site, 1024);
  const SiteTotals totals = table.sites().at(site);
  EXPECT_EQ(totals.live_bytes, 512U);
  EXPECT_EQ(totals.live_count, 1U);
  EXPECT_EQ(totals.allocations, 2U);
}

TEST(CallSiteTable, ThreadsInterningTheSameStacksAgreeOnTheirSites) {
  CallSiteTable table(64);
  constexpr int kThreads = 4;
  std::vector<std::vector<SiteId>> seen(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (std::uintptr_t frame = 1; frame <= 32; ++frame) seen[t].push_back(table.intern(stack_of({frame * 16, 0x99})));
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(table.site_count(), 32U);
  for (int t = 1; t < kThreads; ++t) EXPECT_EQ(seen[t], seen[0]);
}

[[gnu::noinline]] void capture_here(CallStack* stack) {
  capture_call_stack(stack);
  asm volatile("" ::: "memory");  // not a tail call
}

TEST(CallSite, CaptureStartsAtTheCallerAndHashesEqualStacksEqually) {
  CallStack first;
  CallStack second;
  capture_here(&first);
  capture_here(&second);
  ASSERT_GT(first.depth, 1U);
  // Innermost is capture_here's own frame, the same for both; the next ones are this test's two
  // different call lines.
  EXPECT_EQ(first.frames[0], second.frames[0]);
  EXPECT_NE(first.frames[1], second.frames[1]);
  EXPECT_EQ(hash_frames(first.frames, 1), hash_frames(second.frames, 1));
  EXPECT_NE(hash_frames(first.frames, 2), hash_frames(second.frames, 2));
  EXPECT_NE(hash_frames(first.frames, first.depth), 0U);
}

}  // namespace
}  // namespace streampool::insight
