// STREAMPOOL_LEAKS=1 over the fake driver: the exit report groups live allocations by call site,
// most bytes first, with the program's function names (this program is linked with -rdynamic);
// each kind of bad free is one line naming its call sites, and returns what it returns without
// the mode; two threads freeing one pointer at once are reported as racing; with the mode off
// nothing is printed. Each case runs as a child of this program (a DISABLED_ test) so that its
// exit report can be read.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <sstream>
#include <thread>

#include "hooks_test_api.hpp"

// The two call sites the exit report must name.
extern "C" [[gnu::noinline]] CUdeviceptr leaks_test_small_leak(CUstream stream) {
  CUdeviceptr pointer = 0;
  if (SP(cuMemAllocAsync)(&pointer, 1024, stream) != CUDA_SUCCESS) return 0;
  asm volatile("" ::: "memory");  // not a tail call: this frame is on the stack
  return pointer;
}
extern "C" [[gnu::noinline]] CUdeviceptr leaks_test_large_leak(CUstream stream) {
  CUdeviceptr pointer = 0;
  if (SP(cuMemAllocAsync)(&pointer, 1 << 20, stream) != CUDA_SUCCESS) return 0;
  asm volatile("" ::: "memory");
  return pointer;
}
extern "C" [[gnu::noinline]] CUresult leaks_test_free(CUdeviceptr pointer, CUstream stream) {
  const CUresult result = SP(cuMemFreeAsync)(pointer, stream);
  asm volatile("" ::: "memory");
  return result;
}

namespace {

using hooks_test::DriverTest;

std::string file_text(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

struct ChildRun {
  int exit_status = -1;
  std::string standard_error;
};

ChildRun run_child(const std::string& test_name, const std::vector<std::string>& environment) {
  ChildRun run;
  const std::string stderr_path = "/tmp/streampool_leaks_stderr_" + std::to_string(getpid()) + ".txt";
  const pid_t pid = fork();
  if (pid == 0) {
    alarm(20);
    const int sink = open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (sink < 0 || dup2(sink, STDERR_FILENO) < 0) _exit(126);
    unsetenv("STREAMPOOL_LEAKS");
    for (const std::string& assignment : environment) putenv(strdup(assignment.c_str()));
    const std::string filter = "--gtest_filter=" + test_name;
    execl("/proc/self/exe", "child", filter.c_str(), "--gtest_also_run_disabled_tests", static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  if (pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status)) run.exit_status = WEXITSTATUS(status);
  run.standard_error = file_text(stderr_path);
  std::remove(stderr_path.c_str());
  return run;
}

std::vector<std::string> lines_with(const std::string& text, const std::string& part) {
  std::vector<std::string> found;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.find(part) != std::string::npos) found.push_back(line);
  }
  return found;
}

// What a child's frees returned ("result <name> <code>" lines), to compare with and without the mode.
void say_result(const char* name, CUresult result) { std::fprintf(stderr, "result %s %d\n", name, result); }

// ---- the children ----

TEST_F(DriverTest, DISABLED_LeaksFromTwoSites) {
  for (int i = 0; i < 3; ++i) ASSERT_NE(leaks_test_small_leak(stream), 0U);
  ASSERT_NE(leaks_test_large_leak(stream), 0U);
  const CUdeviceptr freed = leaks_test_small_leak(stream);  // freed again: not in the report
  ASSERT_EQ(leaks_test_free(freed, stream), CUDA_SUCCESS);
  const CUdeviceptr freed_at_once = leaks_test_small_leak(stream);  // cuMemFree: not in the report either
  ASSERT_EQ(SP(cuMemFree_v2)(freed_at_once), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
  stream = nullptr;  // left alive: the report runs at exit
}

TEST_F(DriverTest, DISABLED_ReportsThroughTheCInterface) {
  ASSERT_NE(leaks_test_large_leak(stream), 0U);
  using Report = int (*)(char*, size_t);
  auto report = reinterpret_cast<Report>(hooks_test::streampool_symbol("streampool_leak_report"));
  ASSERT_NE(report, nullptr);
  const int length = report(nullptr, 0);
  ASSERT_GT(length, 0);
  std::string json(static_cast<std::size_t>(length) + 1, '\0');
  ASSERT_EQ(report(json.data(), json.size()), length);
  std::fprintf(stderr, "json %s\n", json.c_str());
}

TEST_F(DriverTest, DISABLED_FreesTwice) {
  const CUdeviceptr pointer = leaks_test_small_leak(stream);
  say_result("first", leaks_test_free(pointer, stream));
  say_result("second", leaks_test_free(pointer, stream));
}

TEST_F(DriverTest, DISABLED_FreesWhatWasNeverAllocated) {
  const CUdeviceptr pointer = leaks_test_small_leak(stream);
  say_result("inside", leaks_test_free(pointer + 256, stream));
  say_result("elsewhere", leaks_test_free(0xdead0000, stream));
  say_result("real", leaks_test_free(pointer, stream));
}

TEST_F(DriverTest, DISABLED_FreesOnADestroyedStream) {
  CUstream doomed = nullptr;
  ASSERT_EQ(SP(cuStreamCreate)(&doomed, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  const CUdeviceptr pointer = leaks_test_small_leak(stream);
  ASSERT_EQ(SP(cuStreamDestroy_v2)(doomed), CUDA_SUCCESS);
  say_result("destroyed", leaks_test_free(pointer, doomed));
  say_result("alive", leaks_test_free(pointer, stream));
}

TEST_F(DriverTest, DISABLED_FreesOnAnotherDevicesStream) {
  const CUdeviceptr pointer = leaks_test_small_leak(stream);
  ASSERT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
  CUdevice other_device = 0;
  CUcontext other_context = nullptr;
  CUstream other_stream = nullptr;
  ASSERT_EQ(SP(cuDeviceGet)(&other_device, 1), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuDevicePrimaryCtxRetain)(&other_context, other_device), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuCtxSetCurrent)(other_context), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuStreamCreate)(&other_stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  say_result("foreign", leaks_test_free(pointer, other_stream));
  ASSERT_EQ(SP(cuStreamSynchronize)(other_stream), CUDA_SUCCESS);
}

TEST_F(DriverTest, DISABLED_TwoThreadsFreeOnePointer) {
  std::atomic<int> arrived{0};
  std::atomic<int> successes{0};
  CUdeviceptr pointer = 0;
  constexpr int kRounds = 200;
  auto free_it = [&](int round) {
    arrived.fetch_add(1);
    while (arrived.load() < 2 * (round + 1)) {
    }
    if (leaks_test_free(pointer, stream) == CUDA_SUCCESS) successes.fetch_add(1);
  };
  for (int round = 0; round < kRounds; ++round) {
    pointer = leaks_test_small_leak(stream);
    std::thread other(free_it, round);
    free_it(round);
    other.join();
  }
  // The pointer was freed once each round, however the two calls met.
  EXPECT_EQ(successes.load(), kRounds);
}

TEST_F(DriverTest, DISABLED_ForksAChildThatLeaks) {
  ASSERT_NE(leaks_test_large_leak(stream), 0U);
  ASSERT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
  const pid_t child = fork();
  if (child == 0) {
    // The child's streampool starts afresh (as CUDA does not survive a fork): a context of its own.
    CUcontext context_here = nullptr;
    CUstream stream_here = nullptr;
    const bool ready = SP(cuDevicePrimaryCtxRetain)(&context_here, 0) == CUDA_SUCCESS &&
                       SP(cuCtxSetCurrent)(context_here) == CUDA_SUCCESS &&
                       SP(cuStreamCreate)(&stream_here, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS;
    std::exit(ready && leaks_test_small_leak(stream_here) != 0 ? 0 : 3);  // exit: the report runs
  }
  int status = -1;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  stream = nullptr;
}

// ---- the checks ----

TEST(Leaks, TheExitReportGroupsLiveAllocationsBySiteMostBytesFirstWithSymbolNames) {
  const std::string json_path = "/tmp/streampool_leaks_" + std::to_string(getpid()) + ".json";
  const ChildRun child = run_child("DriverTest.DISABLED_LeaksFromTwoSites",
                                   {"STREAMPOOL_LEAKS=1", "STREAMPOOL_LEAKS_FILE=" + json_path});
  ASSERT_EQ(child.exit_status, 0) << child.standard_error;
  const std::string& text = child.standard_error;
  EXPECT_NE(text.find("streampool: leaks: 4 allocations (1051648 bytes) still live at exit, from 2 call sites"),
            std::string::npos)
      << text;
  const std::size_t large = text.find("streampool: leaks: 1048576 bytes in 1 allocations at");
  const std::size_t small = text.find("streampool: leaks: 3072 bytes in 3 allocations at");
  ASSERT_NE(large, std::string::npos) << text;
  ASSERT_NE(small, std::string::npos) << text;
  EXPECT_LT(large, small);
  // Each group's first frame is the program's function, not streampool's own.
  EXPECT_EQ(text.find("#0 leaks_test_large_leak+0x", large), text.find("#0 ", large)) << text;
  EXPECT_EQ(text.find("#0 leaks_test_small_leak+0x", small), text.find("#0 ", small)) << text;
  EXPECT_NE(text.find("#0 leaks_test_large_leak+0x"), std::string::npos) << text;
  EXPECT_NE(text.find("#0 leaks_test_small_leak+0x"), std::string::npos) << text;

  const std::string json = file_text(json_path);
  std::remove(json_path.c_str());
  EXPECT_NE(json.find("\"live\":{\"allocations\":4,\"bytes\":1051648,\"sites\":2}"), std::string::npos) << json;
  const std::size_t json_large = json.find("\"symbol\":\"leaks_test_large_leak\"");
  const std::size_t json_small = json.find("\"symbol\":\"leaks_test_small_leak\"");
  ASSERT_NE(json_large, std::string::npos) << json;
  ASSERT_NE(json_small, std::string::npos) << json;
  EXPECT_LT(json_large, json_small);
}

TEST(Leaks, TheCInterfaceGivesTheSameReportWhileTheProgramRuns) {
  const ChildRun child = run_child("DriverTest.DISABLED_ReportsThroughTheCInterface", {"STREAMPOOL_LEAKS=1"});
  ASSERT_EQ(child.exit_status, 0) << child.standard_error;
  const std::vector<std::string> json = lines_with(child.standard_error, "json {");
  ASSERT_EQ(json.size(), 1U) << child.standard_error;
  EXPECT_NE(json[0].find("{\"enabled\":true,\"live\":{\"allocations\":1,\"bytes\":1048576,\"sites\":1}"),
            std::string::npos)
      << json[0];
  EXPECT_NE(json[0].find("\"symbol\":\"leaks_test_large_leak\""), std::string::npos) << json[0];
}

TEST(Leaks, WithTheModeOffNothingIsPrinted) {
  const ChildRun child = run_child("DriverTest.DISABLED_LeaksFromTwoSites", {});
  ASSERT_EQ(child.exit_status, 0) << child.standard_error;
  EXPECT_TRUE(lines_with(child.standard_error, "streampool").empty()) << child.standard_error;
}

TEST(Leaks, ASettingOtherThanZeroOrOneIsOneLineAndLeavesTheModeOff) {
  const ChildRun child = run_child("DriverTest.DISABLED_LeaksFromTwoSites", {"STREAMPOOL_LEAKS=yes"});
  ASSERT_EQ(child.exit_status, 0) << child.standard_error;
  const std::vector<std::string> lines = lines_with(child.standard_error, "streampool");
  ASSERT_EQ(lines.size(), 1U) << child.standard_error;
  EXPECT_NE(lines[0].find("streampool: warn: STREAMPOOL_LEAKS=yes is not 0 or 1: the leak check stays off"),
            std::string::npos)
      << lines[0];
}

TEST(Leaks, AForkedChildReportsOnlyWhatItAllocated) {
  const ChildRun child = run_child("DriverTest.DISABLED_ForksAChildThatLeaks", {"STREAMPOOL_LEAKS=1"});
  ASSERT_EQ(child.exit_status, 0) << child.standard_error;
  const std::vector<std::string> totals = lines_with(child.standard_error, "still live at exit");
  ASSERT_EQ(totals.size(), 2U) << child.standard_error;
  // The forked child exits first.
  EXPECT_NE(totals[0].find("leaks: 1 allocations (1024 bytes) still live"), std::string::npos) << totals[0];
  EXPECT_NE(totals[1].find("leaks: 1 allocations (1048576 bytes) still live"), std::string::npos) << totals[1];
}

// The bad-free lines of a child run with the mode, after checking that its frees returned what
// they return without it.
std::vector<std::string> bad_frees_of(const std::string& test_name, const std::vector<std::string>& environment = {}) {
  const ChildRun off = run_child(test_name, environment);
  std::vector<std::string> with_mode = environment;
  with_mode.push_back("STREAMPOOL_LEAKS=1");
  const ChildRun on = run_child(test_name, with_mode);
  EXPECT_EQ(off.exit_status, 0) << off.standard_error;
  EXPECT_EQ(on.exit_status, 0) << on.standard_error;
  const std::vector<std::string> results = lines_with(off.standard_error, "result ");
  EXPECT_FALSE(results.empty()) << off.standard_error;
  EXPECT_EQ(lines_with(on.standard_error, "result "), results) << on.standard_error;
  return lines_with(on.standard_error, "streampool: warn: leaks: ");
}

TEST(Leaks, ADoubleFreeNamesWhereItWasAllocatedAndFirstFreed) {
  const std::vector<std::string> lines = bad_frees_of("DriverTest.DISABLED_FreesTwice");
  ASSERT_EQ(lines.size(), 1U);
  EXPECT_NE(lines[0].find("leaks: double_free of 0x"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("freed at leaks_test_free+0x"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("1024 bytes allocated at leaks_test_small_leak+0x"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("first freed at leaks_test_free+0x"), std::string::npos) << lines[0];
}

TEST(Leaks, AFreeOfWhatIsNoAllocationIsReportedAsSuch) {
  const std::vector<std::string> lines = bad_frees_of("DriverTest.DISABLED_FreesWhatWasNeverAllocated");
  ASSERT_EQ(lines.size(), 2U);
  for (const std::string& line : lines) {
    EXPECT_NE(line.find("leaks: not_allocated of 0x"), std::string::npos) << line;
    EXPECT_NE(line.find("freed at leaks_test_free+0x"), std::string::npos) << line;
  }
  EXPECT_NE(lines[1].find("not_allocated of 0xdead0000"), std::string::npos) << lines[1];
}

TEST(Leaks, AFreeOnADestroyedStreamIsReportedWithTheAllocationsSite) {
  const std::vector<std::string> lines = bad_frees_of("DriverTest.DISABLED_FreesOnADestroyedStream");
  ASSERT_EQ(lines.size(), 1U);
  EXPECT_NE(lines[0].find("leaks: destroyed_stream of 0x"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("allocated at leaks_test_small_leak+0x"), std::string::npos) << lines[0];
}

TEST(Leaks, AFreeOnAnotherDevicesStreamIsReportedAsForeign) {
  const std::vector<std::string> lines =
      bad_frees_of("DriverTest.DISABLED_FreesOnAnotherDevicesStream", {"STREAMPOOL_FAKE_DEVICES=2"});
  ASSERT_EQ(lines.size(), 1U);
  EXPECT_NE(lines[0].find("leaks: foreign_stream of 0x"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("allocated at leaks_test_small_leak+0x"), std::string::npos) << lines[0];
}

TEST(Leaks, TwoThreadsFreeingOnePointerAtOnceAreReportedAsRacing) {
  const ChildRun child = run_child("DriverTest.DISABLED_TwoThreadsFreeOnePointer", {"STREAMPOOL_LEAKS=1"});
  ASSERT_EQ(child.exit_status, 0) << child.standard_error;
  const std::vector<std::string> racing = lines_with(child.standard_error, "leaks: racing of 0x");
  ASSERT_FALSE(racing.empty()) << child.standard_error;
  EXPECT_NE(racing[0].find(" while thread "), std::string::npos) << racing[0];
  EXPECT_NE(racing[0].find("allocated at leaks_test_small_leak+0x"), std::string::npos) << racing[0];
}

}  // namespace
