#include "insight/leak_report.hpp"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>

// Named functions at global scope, linked with -rdynamic: the report must name them.
extern "C" [[gnu::noinline]] void insight_test_small_site(streampool::insight::CallStack* stack) {
  streampool::insight::capture_call_stack(stack);
  asm volatile("" ::: "memory");  // not a tail call: this frame stays on the stack
}
extern "C" [[gnu::noinline]] void insight_test_large_site(streampool::insight::CallStack* stack) {
  streampool::insight::capture_call_stack(stack);
  asm volatile("" ::: "memory");
}

namespace streampool::insight {
namespace {

struct TwoSites : ::testing::Test {
  LeakLedger ledger{LedgerLimits{}};
  void SetUp() override {
    CallStack small;
    CallStack large;
    insight_test_small_site(&small);
    insight_test_large_site(&large);
    const SiteId small_site = ledger.sites().intern(small);
    const SiteId large_site = ledger.sites().intern(large);
    // The small site allocates first and more often, the large one more bytes.
    for (std::uintptr_t i = 0; i < 3; ++i) ledger.allocated(0x10000 + i * 0x200, 512, small_site, 0);
    ledger.allocated(0x90000, 1 << 20, large_site, 0);
  }
};

TEST_F(TwoSites, TheTextReportGroupsBySiteMostBytesFirstWithSymbolNames) {
  const std::string text = leak_report_text(ledger, ReportOptions{});
  EXPECT_NE(text.find("4 allocations (1050112 bytes) still live at exit, from 2 call sites"), std::string::npos) << text;
  const std::size_t large = text.find("1048576 bytes in 1 allocations at");
  const std::size_t small = text.find("1536 bytes in 3 allocations at");
  ASSERT_NE(large, std::string::npos) << text;
  ASSERT_NE(small, std::string::npos) << text;
  EXPECT_LT(large, small);
  const std::size_t large_name = text.find("insight_test_large_site+0x");
  const std::size_t small_name = text.find("insight_test_small_site+0x");
  ASSERT_NE(large_name, std::string::npos) << text;
  ASSERT_NE(small_name, std::string::npos) << text;
  EXPECT_LT(large, large_name);
  EXPECT_LT(large_name, small);
  EXPECT_LT(small, small_name);
}

TEST_F(TwoSites, TheJsonReportNamesTheObjectAndOffsetOfEachFrame) {
  const std::string json = leak_report_json(ledger, ReportOptions{});
  EXPECT_EQ(json.rfind("{\"live\":{\"allocations\":4,\"bytes\":1050112,\"sites\":2}", 0), 0U) << json;
  const std::size_t large = json.find("\"symbol\":\"insight_test_large_site\"");
  const std::size_t small = json.find("\"symbol\":\"insight_test_small_site\"");
  ASSERT_NE(large, std::string::npos) << json;
  ASSERT_NE(small, std::string::npos) << json;
  EXPECT_LT(large, small);
  EXPECT_NE(json.find("insight_leak_tests\",\"offset\":\"0x"), std::string::npos) << json;
}

TEST_F(TwoSites, FramesOfTheAllocatorsOwnObjectAreNotShown) {
  // Taking the test binary as "the allocator": its innermost frames (the named functions) go.
  Dl_info info{};
  ASSERT_NE(dladdr(reinterpret_cast<void*>(&insight_test_small_site), &info), 0);
  ReportOptions options;
  options.own_object = info.dli_fbase;
  const std::string text = leak_report_text(ledger, options);
  EXPECT_EQ(text.find("insight_test_small_site"), std::string::npos) << text;
}

TEST_F(TwoSites, FreedAllocationsLeaveTheReport) {
  LiveAllocation live;
  ledger.begin_free(0x90000, 1, &live);
  ledger.end_free(0x90000, 1, true, kOtherSites);
  const std::string text = leak_report_text(ledger, ReportOptions{});
  EXPECT_NE(text.find("3 allocations (1536 bytes) still live at exit, from 1 call sites"), std::string::npos) << text;
  EXPECT_EQ(text.find("insight_test_large_site"), std::string::npos) << text;
}

TEST(LeakReport, BadFreesAreCountedByKindInBothReports) {
  LeakLedger ledger{LedgerLimits{}};
  BadFreeEvent event;
  event.kind = BadFree::double_free;
  event.address = 0x1234;
  event.error = 1;
  ledger.record_bad_free(event);
  EXPECT_NE(leak_report_text(ledger, ReportOptions{}).find("1 bad frees: double_free 1"), std::string::npos);
  const std::string json = leak_report_json(ledger, ReportOptions{});
  EXPECT_NE(json.find("\"double_free\":1,"), std::string::npos) << json;
  EXPECT_NE(json.find("{\"kind\":\"double_free\",\"address\":\"0x1234\""), std::string::npos) << json;
}

TEST_F(TwoSites, ASiteInOneLineNamesItsFramesBySymbolWithoutTheirObjects) {
  const std::string line = describe_site(ledger.sites(), 1, 2, nullptr);
  EXPECT_EQ(line.rfind("insight_test_large_site+0x", 0), 0U) << line;
  EXPECT_NE(line.find(" < "), std::string::npos) << line;
  EXPECT_EQ(line.find("/insight_leak_tests"), std::string::npos) << line;
}

TEST(LeakReport, AnUnknownAddressShowsAsItsNumber) {
  EXPECT_EQ(describe_frame(0x10), "0x10");
}

}  // namespace
}  // namespace streampool::insight
