// Where the STREAMPOOL_STATS report goes: %p in the path stands for the process id, a forked child
// does not overwrite its parent's report, and a report that cannot be written (no such folder, a
// device, a FIFO with no reader: never waited for) says so in one line on stderr at any log level
// but off, without changing the program's exit status.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "hooks_test_api.hpp"

namespace {

std::string temporary_stem(const char* name) {
  return "/tmp/streampool_" + std::string(name) + "_" + std::to_string(getpid());
}

std::string file_text(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

bool file_exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

struct ChildRun {
  pid_t pid = -1;
  int exit_status = -1;
  std::string standard_error;
};

// Runs this program again as a child running only `test_name` (a DISABLED_ test) with extra
// environment, and keeps what it wrote to stderr.
ChildRun run_child(const std::string& test_name, const std::vector<std::string>& environment) {
  ChildRun run;
  const std::string stderr_path = temporary_stem("child_stderr") + ".txt";
  run.pid = fork();
  if (run.pid == 0) {
    // A child that blocks (on a FIFO, say) is killed by the alarm, which survives the exec: the
    // test fails instead of hanging.
    alarm(20);
    const int sink = open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (sink < 0 || dup2(sink, STDERR_FILENO) < 0) _exit(126);
    for (const std::string& assignment : environment) putenv(strdup(assignment.c_str()));
    const std::string filter = "--gtest_filter=" + test_name;
    execl("/proc/self/exe", "child", filter.c_str(), "--gtest_also_run_disabled_tests", static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  if (run.pid > 0 && waitpid(run.pid, &status, 0) == run.pid && WIFEXITED(status)) {
    run.exit_status = WEXITSTATUS(status);
  }
  run.standard_error = file_text(stderr_path);
  std::remove(stderr_path.c_str());
  return run;
}

TEST(StatsFile, PercentPInThePathIsTheProcessId) {
  const std::string stem = temporary_stem("stats_pid");

  const ChildRun child = run_child("StatsFileChild.DISABLED_Allocates", {"STREAMPOOL_STATS=" + stem + ".%p.json"});

  ASSERT_EQ(child.exit_status, 0) << child.standard_error;
  const std::string path = stem + "." + std::to_string(child.pid) + ".json";
  EXPECT_NE(file_text(path).find("\"cuMemAllocAsync\":3"), std::string::npos) << path;
  EXPECT_FALSE(file_exists(stem + ".%p.json"));
  std::remove(path.c_str());
}

TEST(StatsFile, DoublePercentInThePathIsOnePercentSign) {
  const std::string stem = temporary_stem("stats_percent");

  const ChildRun child = run_child("StatsFileChild.DISABLED_Allocates", {"STREAMPOOL_STATS=" + stem + ".%%p.json"});

  ASSERT_EQ(child.exit_status, 0) << child.standard_error;
  EXPECT_TRUE(file_exists(stem + ".%p.json"));
  std::remove((stem + ".%p.json").c_str());
}

TEST(StatsFile, AForkedChildDoesNotOverwriteItsParentsReport) {
  const std::string path = temporary_stem("stats_fork") + ".json";
  std::remove(path.c_str());

  const ChildRun child = run_child("StatsFileChild.DISABLED_ForksAChildThatExits", {"STREAMPOOL_STATS=" + path});

  ASSERT_EQ(child.exit_status, 0) << child.standard_error;
  // The parent allocated 3 times before the fork, the forked child 5 times more.
  EXPECT_NE(file_text(path).find("\"cuMemAllocAsync\":3"), std::string::npos) << file_text(path);
  std::remove(path.c_str());
}

TEST(StatsFile, AForkedChildWritesItsOwnReportWhereThePathHasPercentP) {
  const std::string stem = temporary_stem("stats_fork_pid");

  const ChildRun child = run_child("StatsFileChild.DISABLED_ForksAChildThatExits",
                                   {"STREAMPOOL_STATS=" + stem + ".%p.json"});

  ASSERT_EQ(child.exit_status, 0) << child.standard_error;
  const std::string parent_report = stem + "." + std::to_string(child.pid) + ".json";
  EXPECT_NE(file_text(parent_report).find("\"cuMemAllocAsync\":3"), std::string::npos) << parent_report;
  std::remove(parent_report.c_str());
}

// The number of lines of `text` that contain `part`.
std::size_t lines_with(const std::string& text, const std::string& part) {
  std::size_t count = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) count += line.find(part) != std::string::npos ? 1 : 0;
  return count;
}

TEST(StatsFile, AReportThatCannotBeWrittenIsAWarningAndLeavesTheExitStatusAlone) {
  const ChildRun device =
      run_child("StatsFileChild.DISABLED_Allocates", {"STREAMPOOL_STATS=/dev/full", "STREAMPOOL_LOG=warn"});
  const ChildRun no_folder = run_child("StatsFileChild.DISABLED_Allocates",
                                       {"STREAMPOOL_STATS=/nonexistent-folder/stats.json", "STREAMPOOL_LOG=warn"});

  EXPECT_EQ(device.exit_status, 0);
  EXPECT_NE(device.standard_error.find("streampool: warn: cannot write the STREAMPOOL_STATS report to /dev/full: "
                                       "not a regular file"),
            std::string::npos)
      << device.standard_error;
  EXPECT_EQ(no_folder.exit_status, 0);
  EXPECT_NE(no_folder.standard_error.find("streampool: warn: cannot write the STREAMPOOL_STATS report to "
                                          "/nonexistent-folder/stats.json: No such file or directory"),
            std::string::npos)
      << no_folder.standard_error;
}

TEST(StatsFile, AReportThatCannotBeWrittenIsOneLineAtTheDefaultLogLevel) {
  const ChildRun child =
      run_child("StatsFileChild.DISABLED_Allocates", {"STREAMPOOL_STATS=/nonexistent-folder/stats.json"});

  EXPECT_EQ(child.exit_status, 0);
  EXPECT_EQ(lines_with(child.standard_error, "streampool:"), 1u) << child.standard_error;
  EXPECT_EQ(lines_with(child.standard_error, "streampool: warn: cannot write the STREAMPOOL_STATS report to "
                                             "/nonexistent-folder/stats.json: No such file or directory"),
            1u)
      << child.standard_error;
}

TEST(StatsFile, AReportThatCannotBeWrittenIsSilentWithLoggingOff) {
  const ChildRun child = run_child("StatsFileChild.DISABLED_Allocates",
                                   {"STREAMPOOL_STATS=/nonexistent-folder/stats.json", "STREAMPOOL_LOG=off"});

  EXPECT_EQ(child.exit_status, 0);
  EXPECT_EQ(child.standard_error.find("streampool:"), std::string::npos) << child.standard_error;
}

TEST(StatsFile, AFifoWithNoReaderIsRefusedAtOnceInsteadOfHoldingTheProgramAtExit) {
  const std::string fifo = temporary_stem("stats_fifo");
  std::remove(fifo.c_str());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);

  const ChildRun child = run_child("StatsFileChild.DISABLED_Allocates", {"STREAMPOOL_STATS=" + fifo});

  EXPECT_EQ(child.exit_status, 0) << "blocked until the alarm, or failed: " << child.standard_error;
  EXPECT_EQ(lines_with(child.standard_error, "cannot write the STREAMPOOL_STATS report to " + fifo +
                                                 ": not a regular file"),
            1u)
      << child.standard_error;
  std::remove(fifo.c_str());
}

// Run only as children of the tests above.
class StatsFileChild : public hooks_test::DriverTest {
 protected:
  void allocate_and_free(int rounds) {
    for (int round = 0; round < rounds; ++round) {
      CUdeviceptr pointer = 0;
      ASSERT_EQ(SP(cuMemAllocAsync)(&pointer, 4096, stream), CUDA_SUCCESS);
      ASSERT_EQ(SP(cuMemFreeAsync)(pointer, stream), CUDA_SUCCESS);
    }
  }
};

TEST_F(StatsFileChild, DISABLED_Allocates) { allocate_and_free(3); }

TEST_F(StatsFileChild, DISABLED_ForksAChildThatExits) {
  allocate_and_free(3);
  const char* setting = std::getenv("STREAMPOOL_STATS");
  ASSERT_NE(setting, nullptr);
  const pid_t grandchild = fork();
  if (grandchild == 0) {
    // A fresh streampool state in the child: its report would count these five.
    for (int round = 0; round < 5; ++round) {
      CUdeviceptr pointer = 0;
      if (SP(cuMemAllocAsync)(&pointer, 4096, nullptr) == CUDA_SUCCESS) SP(cuMemFreeAsync)(pointer, nullptr);
    }
    std::exit(0);  // runs the atexit handlers it inherited, streampool's report among them
  }
  int status = 0;
  ASSERT_EQ(waitpid(grandchild, &status, 0), grandchild);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  const std::string value = setting;
  const std::size_t percent_p = value.find("%p");
  if (percent_p == std::string::npos) {
    EXPECT_FALSE(file_exists(value)) << "the forked child wrote the parent's report";
  } else {
    const std::string own = value.substr(0, percent_p) + std::to_string(grandchild) + value.substr(percent_p + 2);
    EXPECT_TRUE(file_exists(own)) << own;
    std::remove(own.c_str());
  }
}

}  // namespace
