// STREAMPOOL_FAKE_TRACE: one line per entry point call on stderr, with what cuGetProcAddress and
// cuGetExportTable were asked for. The fake reads the setting once per process, so these tests
// re-run this binary (test_main.cpp's --make-traced-calls) and read what it wrote.
#include <string>

#include "fake_test_support.hpp"

namespace fake_test {
namespace {

std::string traced_run(const std::string& setting) {
  return run_self_with_environment(setting, "--make-traced-calls 2>&1");
}

TEST(TraceTest, EveryCallIsOneLineWithItsAnswer) {
  const std::string trace = traced_run("STREAMPOOL_FAKE_TRACE=1");

  EXPECT_NE(trace.find("fakecuda: cuInit -> 0\n"), std::string::npos) << trace;
  EXPECT_NE(trace.find("fakecuda: cuDriverGetVersion -> 0\n"), std::string::npos) << trace;
  EXPECT_NE(trace.find("fakecuda: cuDeviceGetCount -> 1\n"), std::string::npos) << trace;  // INVALID_VALUE
}

TEST(TraceTest, ProcAddressLinesNameTheSymbolVersionAndFlags) {
  const std::string trace = traced_run("STREAMPOOL_FAKE_TRACE=1");

  EXPECT_NE(trace.find("fakecuda: cuGetProcAddress_v2(cuMemAlloc, 13000, 0) -> 0\n"), std::string::npos) << trace;
}

TEST(TraceTest, ExportTableLinesNameTheUuidAndTheTable) {
  const std::string trace = traced_run("STREAMPOOL_FAKE_TRACE=1");

  EXPECT_NE(trace.find("fakecuda: cuGetExportTable(d4082055-bde6-704b-8d34-ba123c66e1f2 software validity check) -> 801\n"),
            std::string::npos)
      << trace;
}

TEST(TraceTest, NotSupportedStandInsReportThemselves) {
  const std::string trace = traced_run("STREAMPOOL_FAKE_TRACE=1");

  EXPECT_NE(trace.find("fakecuda: cuMipmappedArrayGetSparseProperties -> 801\n"), std::string::npos) << trace;
}

TEST(TraceTest, NothingIsWrittenUnlessAsked) {
  EXPECT_EQ(traced_run(""), "");
  EXPECT_EQ(traced_run("STREAMPOOL_FAKE_TRACE=0"), "");
}

}  // namespace
}  // namespace fake_test
