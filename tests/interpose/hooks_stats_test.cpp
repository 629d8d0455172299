// Configuration by environment and the report: streampool_stats_json, STREAMPOOL_STATS at exit,
// STREAMPOOL_DISABLE=1 as a pure pass-through.
#include <fstream>
#include <sstream>

#include "hooks_test_api.hpp"

namespace {

using hooks_test::fake_calls;

class StatsHooks : public hooks_test::DriverTest {};

std::string temporary_path(const char* stem) {
  return "/tmp/streampool_" + std::string(stem) + "_" + std::to_string(getpid()) + ".json";
}

TEST_F(StatsHooks, ReportCountsEachHookedCallAndListsPools) {
  CUdeviceptr pointer = 0;
  for (int round = 0; round < 3; ++round) {
    ASSERT_EQ(SP(cuMemAllocAsync)(&pointer, 1000, stream), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuMemFreeAsync)(pointer, stream), CUDA_SUCCESS);
  }

  const std::string report = hooks_test::stats_report();

  EXPECT_NE(report.find("\"cuMemAllocAsync\":"), std::string::npos) << report;
  EXPECT_NE(report.find("\"cuMemFreeAsync\":"), std::string::npos) << report;
  EXPECT_EQ(report.find("\"cuMemAllocAsync\":0"), std::string::npos) << report;
  EXPECT_NE(report.find("\"kind\":\"device\""), std::string::npos) << report;
  EXPECT_NE(report.find("\"used_high\":"), std::string::npos) << report;
}

TEST_F(StatsHooks, ReportIntoASmallBufferIsTruncatedAndSaysHowMuchIsNeeded) {
  auto stats = reinterpret_cast<hooks_test::StatsJson>(hooks_test::streampool_symbol("streampool_stats_json"));
  ASSERT_NE(stats, nullptr);
  char small[8] = {'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x'};

  const int needed = stats(small, sizeof small);

  EXPECT_GT(needed, static_cast<int>(sizeof small));
  EXPECT_EQ(small[7], '\0');
  EXPECT_EQ(std::string(small), "{\"strea");
}

TEST_F(StatsHooks, StatsFileIsWrittenAtExitWithCallCounters) {
  const std::string path = temporary_path("stats");
  std::remove(path.c_str());

  ASSERT_EQ(hooks_test::run_child_test("StatsChild.DISABLED_AllocatesAndFrees", {"STREAMPOOL_STATS=" + path}), 0);

  std::ifstream file(path);
  ASSERT_TRUE(file.good()) << path;
  std::stringstream text;
  text << file.rdbuf();
  EXPECT_NE(text.str().find("\"cuMemAllocAsync\":5"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("\"pools\":[{"), std::string::npos) << text.str();
  std::remove(path.c_str());
}

TEST_F(StatsHooks, DisabledStreampoolPassesAllocationsToTheDriver) {
  ASSERT_EQ(hooks_test::run_child_test("StatsChild.DISABLED_PassesThrough", {"STREAMPOOL_DISABLE=1"}), 0);
}

// Run only as children of the tests above.
class StatsChild : public hooks_test::DriverTest {};

TEST_F(StatsChild, DISABLED_AllocatesAndFrees) {
  for (int round = 0; round < 5; ++round) {
    CUdeviceptr pointer = 0;
    ASSERT_EQ(SP(cuMemAllocAsync)(&pointer, 4096, stream), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuMemFreeAsync)(pointer, stream), CUDA_SUCCESS);
  }
}

TEST_F(StatsChild, DISABLED_PassesThrough) {
  const auto driver_allocs = fake_calls("cuMemAllocAsync");
  const auto driver_frees = fake_calls("cuMemFreeAsync");
  CUdeviceptr pointer = 0;

  ASSERT_EQ(SP(cuMemAllocAsync)(&pointer, 4096, stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemFreeAsync)(pointer, stream), CUDA_SUCCESS);

  EXPECT_EQ(fake_calls("cuMemAllocAsync"), driver_allocs + 1);
  EXPECT_EQ(fake_calls("cuMemFreeAsync"), driver_frees + 1);
  EXPECT_NE(hooks_test::stats_report().find("\"disabled\":true"), std::string::npos);
}

}  // namespace
