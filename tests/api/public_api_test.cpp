// The public C interface (include/streampool/streampool.h) from C++, in a program preloaded with
// libstreampool.so over the fake driver: each function's answer against what the program did.
#include "streampool/streampool.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <cctype>
#include <sstream>
#include <string>
#include <vector>

#include "hooks_test_api.hpp"

namespace {

// The library's definitions, typed by the public header.
#define API(name) (reinterpret_cast<decltype(&::name)>(::hooks_test::streampool_symbol(#name)))

class PublicApi : public hooks_test::DriverTest {};

streampool_stats totals_now() {
  streampool_stats totals{};
  totals.struct_size = sizeof totals;
  EXPECT_GE(API(streampool_get_stats)(&totals, nullptr, 0), 0);
  return totals;
}

TEST(PublicApiLibrary, VersionMatchesTheHeaderAndTheProject) {
  ASSERT_NE(API(streampool_version), nullptr);
  EXPECT_STREQ(API(streampool_version)(), STREAMPOOL_VERSION_STRING);
  EXPECT_STREQ(STREAMPOOL_VERSION_STRING, STREAMPOOL_TEST_VERSION);
  const std::string from_parts = std::to_string(STREAMPOOL_VERSION_MAJOR) + "." +
                                 std::to_string(STREAMPOOL_VERSION_MINOR) + "." +
                                 std::to_string(STREAMPOOL_VERSION_PATCH);
  EXPECT_EQ(from_parts, STREAMPOOL_VERSION_STRING);
}

TEST(PublicApiLibrary, EveryFunctionTheHeaderDeclaresIsExported) {
  std::ifstream header(STREAMPOOL_TEST_PUBLIC_HEADER);
  std::stringstream text;
  text << header.rdbuf();
  const std::string declarations = text.str();
  // Every "streampool_<name>(" is a function the header declares.
  std::vector<std::string> names;
  for (std::size_t at = declarations.find("streampool_"); at != std::string::npos;
       at = declarations.find("streampool_", at + 1)) {
    if (at > 0 && (std::isalnum(static_cast<unsigned char>(declarations[at - 1])) || declarations[at - 1] == '_')) continue;
    std::size_t end = at + 11;
    while (end < declarations.size() && (std::islower(static_cast<unsigned char>(declarations[end])) || declarations[end] == '_')) {
      ++end;
    }
    if (end < declarations.size() && declarations[end] == '(') names.push_back(declarations.substr(at, end - at));
  }

  ASSERT_GE(names.size(), 7u) << declarations;
  for (const std::string& name : names) EXPECT_NE(hooks_test::streampool_symbol(name.c_str()), nullptr) << name;
}

TEST_F(PublicApi, ActiveWhenServing) { EXPECT_EQ(API(streampool_active)(), 1); }

TEST_F(PublicApi, StatsCountTheProgramsAllocationAndItsPool) {
  const streampool_stats before = totals_now();
  CUdeviceptr pointer = 0;
  ASSERT_EQ(SP(cuMemAllocAsync)(&pointer, 3 << 20, stream), CUDA_SUCCESS);

  const streampool_stats during = totals_now();
  std::vector<streampool_pool_stats> pools(during.pool_count + 4);
  const int count = API(streampool_get_stats)(nullptr, pools.data(), pools.size());
  ASSERT_EQ(SP(cuMemFreeAsync)(pointer, stream), CUDA_SUCCESS);
  const streampool_stats after = totals_now();

  EXPECT_EQ(during.allocation_calls, before.allocation_calls + 1);
  EXPECT_EQ(after.free_calls, before.free_calls + 1);
  EXPECT_EQ(during.used_current, before.used_current + (3 << 20));
  EXPECT_GE(during.reserved_current, during.used_current);
  EXPECT_EQ(after.used_current, before.used_current);
  ASSERT_GE(count, 1);
  bool found = false;
  for (int i = 0; i < count; ++i) {
    if (pools[static_cast<size_t>(i)].is_default == 1 && pools[static_cast<size_t>(i)].used_current >= (3u << 20)) {
      found = true;
      EXPECT_EQ(pools[static_cast<size_t>(i)].kind, 1);
      EXPECT_EQ(pools[static_cast<size_t>(i)].location_type, 1);
      EXPECT_EQ(pools[static_cast<size_t>(i)].location_id, device);
    }
  }
  EXPECT_TRUE(found) << "no default device pool holds the allocation";
}

TEST_F(PublicApi, StatsReturnTheNumberOfPoolsBeyondTheCapacity) {
  const CUmemoryPool first = create_device_pool();
  const CUmemoryPool second = create_device_pool();
  streampool_pool_stats one{};

  const int count = API(streampool_get_stats)(nullptr, &one, 1);

  EXPECT_GE(count, 2);
  EXPECT_NE(one.handle, 0u);
  SP(cuMemPoolDestroy)(first);
  SP(cuMemPoolDestroy)(second);
}

TEST_F(PublicApi, AnOlderHeadersSmallerStructGetsOnlyTheFieldsItKnows) {
  struct OldStats {  // a header that ended at used_high
    uint32_t struct_size;
    uint32_t pool_count;
    uint64_t reserved_current, reserved_high, used_current, used_high;
  };
  struct Guarded {
    OldStats stats;
    uint64_t after;
  } guarded{};
  guarded.stats.struct_size = sizeof(OldStats);
  guarded.after = 0x5a5a5a5a5a5a5a5aULL;

  const int count = API(streampool_get_stats)(reinterpret_cast<streampool_stats*>(&guarded.stats), nullptr, 0);

  EXPECT_GE(count, 0);
  EXPECT_EQ(guarded.stats.struct_size, sizeof(OldStats));
  EXPECT_EQ(guarded.stats.pool_count, static_cast<uint32_t>(count));
  EXPECT_EQ(guarded.after, 0x5a5a5a5a5a5a5a5aULL);
}

TEST_F(PublicApi, AStructSizeTooSmallToHoldAnythingIsRefused) {
  streampool_stats totals{};
  totals.struct_size = 4;
  EXPECT_EQ(API(streampool_get_stats)(&totals, nullptr, 0), -1);
}

TEST_F(PublicApi, StatsJsonSaysWhatWasServed) {
  CUdeviceptr pointer = 0;
  ASSERT_EQ(SP(cuMemAllocAsync)(&pointer, 4096, stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemFreeAsync)(pointer, stream), CUDA_SUCCESS);

  const std::string report = hooks_test::stats_report();

  EXPECT_NE(report.find("\"served\":{\"allocations\":"), std::string::npos) << report;
  EXPECT_EQ(report.find("\"allocations\":0,"), std::string::npos) << report;
}

// No report before a failure: 0 and an empty string, as the Python package reads "none yet".
// After one: its JSON, truncated to a short buffer as streampool_stats_json is, its length returned.
TEST_F(PublicApi, OomReportIsEmptyUntilAnAllocationFailsThenItsJson) {
  char buffer[16] = "untouched";
  EXPECT_EQ(API(streampool_oom_report)(buffer, sizeof buffer), 0);
  EXPECT_STREQ(buffer, "");
  CUdeviceptr pointer = 0;
  ASSERT_EQ(SP(cuMemAllocAsync)(&pointer, size_t{1} << 50, stream), CUDA_ERROR_OUT_OF_MEMORY);

  const int length = API(streampool_oom_report)(nullptr, 0);
  ASSERT_GT(length, 0);
  std::string report(static_cast<std::size_t>(length) + 1, '\0');
  EXPECT_EQ(API(streampool_oom_report)(report.data(), report.size()), length);
  report.resize(static_cast<std::size_t>(length));
  EXPECT_EQ(report.rfind("{\"request\":\"pool\",\"bytes\":1125899906842624,", 0), 0u) << report;
  EXPECT_NE(report.find("\"cause\":\""), std::string::npos) << report;
  EXPECT_EQ(report.back(), '}');
  EXPECT_EQ(API(streampool_oom_report)(buffer, sizeof buffer), length);  // too small: cut, NUL-terminated
  EXPECT_EQ(std::string(buffer), report.substr(0, sizeof buffer - 1));
  EXPECT_NE(hooks_test::stats_report().find("\"out_of_memory\":1,"), std::string::npos);
}

std::string temporary_trace(const char* stem) {
  // Appended, not `"literal" + std::string(...)`: GCC 13's -Warray-bounds misreads that one.
  std::string path = "/tmp/streampool_api_";
  path += stem;
  path += "_";
  path += std::to_string(getpid());
  path += ".trace";
  return path;
}

off_t file_size(const std::string& path) {
  struct stat info {};
  return stat(path.c_str(), &info) == 0 ? info.st_size : -1;
}

TEST_F(PublicApi, TraceStartFlushStopWritesTheEvents) {
  const std::string path = temporary_trace("start");
  ASSERT_EQ(API(streampool_trace_start)(path.c_str()), 0);
  EXPECT_EQ(API(streampool_trace_start)(path.c_str()), EBUSY);
  CUdeviceptr pointer = 0;
  ASSERT_EQ(SP(cuMemAllocAsync)(&pointer, 4096, stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemFreeAsync)(pointer, stream), CUDA_SUCCESS);

  ASSERT_EQ(API(streampool_trace_flush)(), 0);
  const off_t flushed = file_size(path);
  ASSERT_EQ(API(streampool_trace_stop)(), 0);

  EXPECT_GT(flushed, 64);  // the header and a block: written by the flush, before the stop
  EXPECT_EQ(API(streampool_trace_stop)(), ENOENT);
  EXPECT_EQ(API(streampool_trace_flush)(), ENOENT);
  unlink(path.c_str());
}

TEST_F(PublicApi, TraceIntoAFolderThatDoesNotExistFailsWithItsErrno) {
  EXPECT_EQ(API(streampool_trace_start)("/nonexistent-folder/x.trace"), ENOENT);
  EXPECT_EQ(API(streampool_trace_stop)(), ENOENT);
}

// Run with STREAMPOOL_DISABLE=1.
TEST(PublicApiDisabled, NotActiveWhenPassingThrough) {
  ASSERT_NE(API(streampool_active), nullptr);
  EXPECT_EQ(API(streampool_active)(), 0);
}

}  // namespace
