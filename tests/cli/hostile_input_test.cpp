// The streampool command given files it must not trust: each case runs the command in a child
// with its address space limited (1 GiB, in builds without a sanitizer) and an alarm, so that
// unbounded reading, unbounded growth or a hang fails the test instead of the machine. Each
// checks the exit status and the one line that names the file and the offset.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "trace/format.hpp"

namespace {

const std::string kData = STREAMPOOL_TEST_DATA;

struct CommandRun {
  int exit_status = -1;  // -1: killed (the alarm, or the memory limit)
  std::string standard_error;
};

std::string file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string temporary(const std::string& stem) { return "/tmp/streampool_cli_" + stem + "_" + std::to_string(getpid()); }

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

// `streampool ARGS...`, its stdout discarded, its stderr kept.
CommandRun run_command(const std::vector<std::string>& args) {
  const std::string stderr_path = temporary("stderr");
  const pid_t child = fork();
  if (child == 0) {
    alarm(20);  // survives the exec: a hang is killed
#if !STREAMPOOL_TEST_SANITIZED  // sanitizers reserve terabytes of shadow memory
    const rlimit memory{rlim_t{1} << 30, rlim_t{1} << 30};
    if (setrlimit(RLIMIT_AS, &memory) != 0) _exit(126);
#endif
    const int sink = open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int null = open("/dev/null", O_WRONLY);
    if (sink < 0 || null < 0 || dup2(sink, STDERR_FILENO) < 0 || dup2(null, STDOUT_FILENO) < 0) _exit(126);
    std::vector<char*> argv{const_cast<char*>(STREAMPOOL_TEST_CLI)};
    for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  CommandRun run;
  int status = 0;
  if (child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status)) run.exit_status = WEXITSTATUS(status);
  run.standard_error = file_text(stderr_path);
  std::remove(stderr_path.c_str());
  return run;
}

// A trace header (format.hpp) followed by `blocks`.
std::string trace_file(const std::string& blocks) {
  streampool::trace::FileHeader header{};
  std::memcpy(header.magic, streampool::trace::kMagic, sizeof header.magic);
  header.version = streampool::trace::kFormatVersion;
  header.header_bytes = sizeof header;
  header.block_version = streampool::trace::kBlockVersion;
  return std::string(reinterpret_cast<const char*>(&header), sizeof header) + blocks;
}

// `replay PATH --granule 4096` fails, naming the allocation of `bytes` at `offset`.
void expect_beyond_the_replay(const std::string& path, const std::string& bytes, int offset) {
  const CommandRun run = run_command({"replay", path, "--granule", "4096"});

  EXPECT_EQ(run.exit_status, 1);
  EXPECT_EQ(run.standard_error, "streampool: " + path + ": alloc of " + bytes + " bytes at offset " +
                                    std::to_string(offset) +
                                    " is more than the replay can represent"
                                    " (33554432 granules of 4096 bytes in all)\n");
}

TEST(HostileInput, AReportOfAHundredThousandOpenBracketsStopsAtTheNestingLimit) {
  const std::string path = temporary("brackets") + ".json";
  write_file(path, std::string(100000, '['));

  const CommandRun run = run_command({"report", path});

  EXPECT_EQ(run.exit_status, 1);
  EXPECT_EQ(run.standard_error, "streampool: " + path + ": nested more than 64 levels deep at offset 64\n");
  std::remove(path.c_str());
}

TEST(HostileInput, AReportFromDevZeroIsRefusedAsNotARegularFile) {
  const CommandRun run = run_command({"report", "/dev/zero"});

  EXPECT_EQ(run.exit_status, 1);
  EXPECT_EQ(run.standard_error, "streampool: /dev/zero: not a regular file\n");
}

TEST(HostileInput, AReplayOfDevZeroIsRefusedAsNotARegularFile) {
  const CommandRun run = run_command({"replay", "/dev/zero"});

  EXPECT_EQ(run.exit_status, 1);
  EXPECT_EQ(run.standard_error, "streampool: /dev/zero: not a regular file\n");
}

TEST(HostileInput, ADirectoryIsRefusedAsAReportAndAsATrace) {
  const CommandRun report = run_command({"report", "/tmp"});
  const CommandRun replay = run_command({"replay", "/tmp"});
  const CommandRun plot = run_command({"plot", "/tmp", "-o", temporary("plot") + ".svg"});

  EXPECT_EQ(report.exit_status, 1);
  EXPECT_EQ(report.standard_error, "streampool: /tmp: a directory, not a regular file\n");
  EXPECT_EQ(replay.exit_status, 1);
  EXPECT_EQ(replay.standard_error, "streampool: /tmp: a directory, not a regular file\n");
  EXPECT_EQ(plot.exit_status, 1);
  EXPECT_EQ(plot.standard_error, "streampool: /tmp: a directory, not a regular file\n");
}

TEST(HostileInput, AFifoIsRefusedWithoutWaitingForAWriter) {
  const std::string fifo = temporary("fifo");
  std::remove(fifo.c_str());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);

  const CommandRun run = run_command({"replay", fifo});

  EXPECT_EQ(run.exit_status, 1);
  EXPECT_EQ(run.standard_error, "streampool: " + fifo + ": not a regular file\n");
  std::remove(fifo.c_str());
}

TEST(HostileInput, AnExportOfATraceBeyondTheReplayFailsWithTheReplaysMessage) {
  const std::string path = kData + "/alloc_64tib.trace";
  const std::string output = temporary("export") + ".pickle";

  const CommandRun run = run_command({"export", path, "-o", output, "--granule", "4096"});

  EXPECT_EQ(run.exit_status, 1);
  EXPECT_EQ(run.standard_error, "streampool: " + path +
                                    ": alloc of 70368744177664 bytes at offset 80 is more than the replay can represent"
                                    " (33554432 granules of 4096 bytes in all)\n");
  std::remove(output.c_str());
}

TEST(HostileInput, AnExportIntoAFifoIsRefusedWithoutWaitingForAReader) {
  const std::string fifo = temporary("export_fifo");
  std::remove(fifo.c_str());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);

  const CommandRun run = run_command({"export", kData + "/demo.trace", "--format", "perfetto", "-o", fifo});

  EXPECT_EQ(run.exit_status, 1);
  EXPECT_EQ(run.standard_error, "streampool export: " + fifo + ": not a regular file\n");
  std::remove(fifo.c_str());
}

TEST(HostileInput, AWellFormedTraceWithOne64TiBAllocationIsMoreThanTheReplayCanRepresent) {
  const std::string path = kData + "/alloc_64tib.trace";  // 99 bytes: a header, one block, one alloc

  expect_beyond_the_replay(path, "70368744177664", 80);
}

TEST(HostileInput, ATraceWithOneBitFlippedIsMoreThanTheReplayCanRepresent) {
  // demo.trace (pool_demo over the fake driver) with bit 6 of byte 133 flipped: an allocation's
  // size grows by 2^48.
  const std::string path = kData + "/bitflip.trace";

  expect_beyond_the_replay(path, "279623476707328", 132);
}

TEST(HostileInput, TheTraceBeforeTheBitFlipReplaysAtTheSameGranule) {
  const CommandRun run = run_command({"replay", kData + "/demo.trace", "--granule", "4096"});

  EXPECT_EQ(run.exit_status, 0) << run.standard_error;
  EXPECT_EQ(run.standard_error, "");
}

TEST(HostileInput, ABlockHeaderCountingMoreRecordsThanItsBytesHoldIsRefusedBeforeAllocating) {
  // 16 Mi records announced over 16 MiB: 896 MiB as records, refused before any is decoded.
  const std::uint32_t count = 16u << 20;
  streampool::trace::BlockHeader block{};
  std::memcpy(block.magic, streampool::trace::kBlockMagic, sizeof block.magic);
  block.thread = 1;
  block.count = count;
  block.bytes = count;
  const std::string path = temporary("huge_count") + ".trace";
  write_file(path, trace_file(std::string(reinterpret_cast<const char*>(&block), sizeof block) + std::string(count, '\0')));

  const CommandRun run = run_command({"replay", path});

  EXPECT_EQ(run.exit_status, 1);
  EXPECT_EQ(run.standard_error,
            "streampool: " + path + ": damaged block (more records than its bytes can hold) at offset 64\n");
  std::remove(path.c_str());
}

TEST(HostileInput, RunWithTheReportOnDevFullRefusesBeforeRunningTheProgram) {
  const CommandRun run = run_command({"run", "--stats", "/dev/full", "--", "true"});

  EXPECT_EQ(run.exit_status, 2);
  EXPECT_EQ(run.standard_error, "streampool run: cannot write the report to /dev/full: not a regular file\n");
}

TEST(HostileInput, RunWithTheTraceInAMissingFolderRefusesBeforeRunningTheProgram) {
  const CommandRun run = run_command({"run", "--trace", "/proc/nope/t", "--", "true"});

  EXPECT_EQ(run.exit_status, 2);
  EXPECT_EQ(run.standard_error,
            "streampool run: cannot write the trace to /proc/nope/t: /proc/nope: No such file or directory\n");
}

TEST(HostileInput, RunSaysSoAndFailsWhenTheReportAndTraceItWasAskedForAreNotThere) {
  // `true` never reaches the CUDA driver: no report, no trace.
  const std::string report = temporary("missing") + ".json";
  const std::string trace = temporary("missing") + ".trace";
  std::remove(report.c_str());
  std::remove(trace.c_str());

  const CommandRun run = run_command({"run", "--quiet", "--stats", report, "--trace", trace, "--", "true"});

  EXPECT_EQ(run.exit_status, 1);
  EXPECT_NE(run.standard_error.find("streampool run: no trace in " + trace + ": No such file or directory"),
            std::string::npos)
      << run.standard_error;
  EXPECT_NE(run.standard_error.find("streampool run: no report in " + report + ": No such file or directory"),
            std::string::npos)
      << run.standard_error;
}

TEST(HostileInput, ASizeArgumentThatOverflowsIsABadValue) {
  const CommandRun negative = run_command({"replay", kData + "/demo.trace", "--granule", "-1"});
  const CommandRun huge = run_command({"replay", kData + "/demo.trace", "--max-pool-size", "18446744073709551615G"});

  EXPECT_EQ(negative.exit_status, 2);
  EXPECT_EQ(negative.standard_error, "streampool: bad or missing value for --granule (a power of two from 4096 to 1G)\n");
  EXPECT_EQ(huge.exit_status, 2);
  EXPECT_EQ(huge.standard_error, "streampool: bad or missing value for --max-pool-size\n");
}

}  // namespace
