// STREAMPOOL_TRACE as a program sees it: preloaded over the fake driver, each case runs in a child
// process (this program again, one DISABLED_ test) with the environment it needs; the parent
// reads the files the child left.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>
#include <vector>

#include "hooks_test_api.hpp"
#include "trace/reader.hpp"

namespace {

using streampool::trace::Op;
using streampool::trace::Record;

std::string temporary(const std::string& stem) {
  return "/tmp/streampool_trace_" + stem + "_" + std::to_string(getpid());
}

// This program again, running only `test_name`, with `environment` and stderr into `stderr_path`.
int run_child(const std::string& test_name, const std::vector<std::string>& environment,
              const std::string& stderr_path = "/dev/null") {
  const pid_t child = fork();
  if (child == 0) {
    // A child that blocks (opening a FIFO, say) is killed by the alarm, which survives the exec:
    // the test fails instead of hanging.
    alarm(20);
    for (const std::string& assignment : environment) putenv(strdup(assignment.c_str()));
    const int err = open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (err >= 0) dup2(err, STDERR_FILENO);
    const std::string filter = "--gtest_filter=" + test_name;
    execl("/proc/self/exe", "child", filter.c_str(), "--gtest_also_run_disabled_tests", static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

streampool::trace::Trace read(const std::string& path) {
  streampool::trace::Trace trace;
  std::string error;
  EXPECT_TRUE(streampool::trace::read_trace(path, &trace, &error)) << error;
  return trace;
}

std::vector<Record> of_op(const streampool::trace::Trace& trace, Op op) {
  std::vector<Record> found;
  for (const Record& record : trace.records) {
    if (record.op == static_cast<std::uint16_t>(op)) found.push_back(record);
  }
  return found;
}

std::string file_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class TraceChild : public hooks_test::DriverTest {};

// --- the children --------------------------------------------------------------------------------

TEST_F(TraceChild, DISABLED_AllocRecordWaitFreeSync) {
  CUstream other = nullptr;
  ASSERT_EQ(SP(cuStreamCreate)(&other, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  CUevent event = nullptr;
  ASSERT_EQ(SP(cuEventCreate)(&event, 0), CUDA_SUCCESS);
  CUdeviceptr pointer = 0;
  ASSERT_EQ(SP(cuMemAllocAsync)(&pointer, 12345, stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuEventRecord)(event, stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuStreamWaitEvent)(other, event, 0), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemFreeAsync)(pointer, other), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuStreamSynchronize)(other), CUDA_SUCCESS);
  const CUmemoryPool pool = create_device_pool();
  std::uint64_t threshold = 1 << 20;
  ASSERT_EQ(SP(cuMemPoolSetAttribute)(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemAllocFromPoolAsync)(&pointer, 777, pool, other), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemFreeAsync)(pointer, other), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuStreamSynchronize)(other), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemPoolDestroy)(pool), CUDA_SUCCESS);
  std::printf("stream %#llx other %#llx event %#llx pool %#llx\n",
              static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(stream)),
              static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(other)),
              static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(event)),
              static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(pool)));
  std::fflush(stdout);
}

constexpr int kThreads = 4;
constexpr int kPairsPerThread = 3000;  // each thread's buffer (1024 records) fills several times

TEST_F(TraceChild, DISABLED_ManyThreads) {
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([this] {
      SP(cuCtxSetCurrent)(context);
      CUstream own = nullptr;
      SP(cuStreamCreate)(&own, CU_STREAM_NON_BLOCKING);
      for (int i = 0; i < kPairsPerThread; ++i) {
        CUdeviceptr pointer = 0;
        SP(cuMemAllocAsync)(&pointer, 1024, own);
        SP(cuMemFreeAsync)(pointer, own);
      }
      SP(cuStreamSynchronize)(own);
      // the stream stays: the records of this thread are written when it ends
    });
  }
  for (std::thread& thread : threads) thread.join();
  // The main thread's last few events are written at exit.
  CUdeviceptr pointer = 0;
  ASSERT_EQ(SP(cuMemAllocAsync)(&pointer, 1, stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemFreeAsync)(pointer, stream), CUDA_SUCCESS);
}

TEST_F(TraceChild, DISABLED_Forks) {
  CUdeviceptr pointer = 0;
  ASSERT_EQ(SP(cuMemAllocAsync)(&pointer, 1000, stream), CUDA_SUCCESS);
  const pid_t grandchild = fork();
  if (grandchild == 0) {
    // CUDA does not survive a fork: the grandchild only records what it calls. It writes its trace
    // and leaves with _exit: exit handlers in a forked child of a threaded process may wait for
    // locks another thread of the parent held at the fork (LeakSanitizer's at-exit check waited
    // for ASan's allocator lock so, once in 40 runs under load).
    CUdeviceptr ignored = 0;
    SP(cuMemAllocAsync)(&ignored, 2000, nullptr);
    const auto flush = reinterpret_cast<int (*)()>(hooks_test::streampool_symbol("streampool_trace_flush"));
    _exit(flush != nullptr && flush() == 0 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(grandchild, &status, 0), grandchild);
  ASSERT_EQ(SP(cuMemFreeAsync)(pointer, stream), CUDA_SUCCESS);
  std::printf("grandchild %d\n", static_cast<int>(grandchild));
  std::fflush(stdout);
}

TEST_F(TraceChild, DISABLED_TwoPairs) {
  for (int i = 0; i < 2; ++i) {
    CUdeviceptr pointer = 0;
    ASSERT_EQ(SP(cuMemAllocAsync)(&pointer, 4096, stream), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuMemFreeAsync)(pointer, stream), CUDA_SUCCESS);
  }
  const std::string report = hooks_test::stats_report();
  std::printf("%s\n", report.c_str());
  std::fflush(stdout);
}

// An allocation larger than the 1 GiB fake device: refused, and reported.
TEST_F(TraceChild, DISABLED_OutOfMemory) {
  CUdeviceptr pointer = 0;
  ASSERT_EQ(SP(cuMemAllocAsync)(&pointer, size_t{2} << 30, stream), CUDA_ERROR_OUT_OF_MEMORY);
  std::printf("stream %p\n", static_cast<void*>(stream));
  std::fflush(stdout);
}

// --- the checks ----------------------------------------------------------------------------------

TEST(Trace, RecordsAllocatorAndOrderingEventsWithTheirFieldsAndWritesThemAtExit) {
  const std::string path = temporary("events") + ".trace";

  ASSERT_EQ(run_child("TraceChild.DISABLED_AllocRecordWaitFreeSync", {"STREAMPOOL_TRACE=" + path, "STREAMPOOL_TIMING=1"}), 0);

  const streampool::trace::Trace trace = read(path);
  EXPECT_EQ(trace.trailing_bytes, 0u);
  const auto allocs = of_op(trace, Op::alloc);
  const auto from_pool = of_op(trace, Op::alloc_from_pool);
  const auto frees = of_op(trace, Op::free);
  const auto records = of_op(trace, Op::event_record);
  const auto waits = of_op(trace, Op::stream_wait_event);
  const auto syncs = of_op(trace, Op::stream_synchronize);
  const auto creates = of_op(trace, Op::pool_create);
  const auto attributes = of_op(trace, Op::pool_set_attribute);
  const auto destroys = of_op(trace, Op::pool_destroy);
  const auto streams = of_op(trace, Op::stream_create);
  ASSERT_EQ(allocs.size(), 1u);
  ASSERT_EQ(from_pool.size(), 1u);
  ASSERT_EQ(frees.size(), 2u);
  ASSERT_EQ(records.size(), 1u);
  ASSERT_EQ(waits.size(), 1u);
  EXPECT_EQ(syncs.size(), 2u);
  ASSERT_EQ(creates.size(), 1u);
  ASSERT_EQ(attributes.size(), 1u);
  ASSERT_EQ(destroys.size(), 1u);
  EXPECT_EQ(streams.size(), 2u);  // the fixture's stream and the test's
  // An allocation names its stream, the pool that served it, its size and address.
  EXPECT_EQ(allocs[0].size, 12345u);
  EXPECT_NE(allocs[0].address, 0u);
  EXPECT_NE(allocs[0].pool, 0u);
  EXPECT_EQ(allocs[0].result, 0);
  // Its free on the other stream, after that stream waited for the event recorded on the first.
  EXPECT_EQ(frees[0].address, allocs[0].address);  // pool and size: those of the allocation
  EXPECT_EQ(records[0].stream, allocs[0].stream);
  EXPECT_EQ(waits[0].address, records[0].address);
  EXPECT_EQ(waits[0].stream, frees[0].stream);
  EXPECT_NE(waits[0].stream, records[0].stream);
  // The pool the program created: its creation, attribute, allocation and destruction.
  EXPECT_EQ(from_pool[0].pool, creates[0].pool);
  EXPECT_EQ(attributes[0].pool, creates[0].pool);
  EXPECT_EQ(attributes[0].address, 4u);  // CU_MEMPOOL_ATTR_RELEASE_THRESHOLD
  EXPECT_EQ(attributes[0].size, 1u << 20);
  EXPECT_EQ(destroys[0].pool, creates[0].pool);
  EXPECT_EQ(creates[0].address >> 32, 1u);  // a device location
  // Times rise in one thread's order; with STREAMPOOL_TIMING each call says how long it took.
  for (std::size_t i = 1; i < trace.records.size(); ++i) EXPECT_GE(trace.records[i].time_ns, trace.records[i - 1].time_ns);
  EXPECT_GT(allocs[0].duration_ns, 0u);
  EXPECT_EQ(trace.header.pid != 0, true);
  unlink(path.c_str());
}

TEST(Trace, AFailedAllocationIsFollowedByItsOutOfMemoryRecordWithTheExplanation) {
  const std::string path = temporary("oom") + ".trace";
  ASSERT_EQ(run_child("TraceChild.DISABLED_OutOfMemory",
                      {"STREAMPOOL_TRACE=" + path, "STREAMPOOL_FAKE_MEMORY=1G", "STREAMPOOL_LOG=off"}),
            0);
  const streampool::trace::Trace trace = read(path);
  const auto allocs = of_op(trace, Op::alloc);
  const auto reports = of_op(trace, Op::out_of_memory);
  ASSERT_EQ(allocs.size(), 1u);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(allocs[0].result, CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(reports[0].result, CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(reports[0].size, std::uint64_t{2} << 30);
  EXPECT_EQ(reports[0].stream, allocs[0].stream);
  EXPECT_NE(reports[0].pool, 0u);
  EXPECT_EQ(streampool::trace::oom_cause_name(reports[0].flags), "device_full");
  EXPECT_GT(reports[0].address, 0u);  // the device's free memory then
  EXPECT_LE(reports[0].address, std::uint64_t{1} << 30);
  EXPECT_GE(reports[0].time_ns, allocs[0].time_ns);  // within the call
  unlink(path.c_str());
}

TEST(Trace, ManyThreadsLoseNoEventThroughFullBuffersThreadEndsAndExit) {
  const std::string path = temporary("threads") + ".trace";

  ASSERT_EQ(run_child("TraceChild.DISABLED_ManyThreads", {"STREAMPOOL_TRACE=" + path}), 0);

  const streampool::trace::Trace trace = read(path);
  const std::size_t expected = kThreads * kPairsPerThread + 1;
  EXPECT_EQ(of_op(trace, Op::alloc).size(), expected);
  EXPECT_EQ(of_op(trace, Op::free).size(), expected);
  std::map<std::uint32_t, std::size_t> per_thread;
  for (const Record& record : trace.records) ++per_thread[record.thread];
  EXPECT_EQ(per_thread.size(), static_cast<std::size_t>(kThreads + 1));
  unlink(path.c_str());
}

TEST(Trace, AForkedChildWritesItsOwnFileNamedByPercentP) {
  const std::string stem = temporary("fork");
  const std::string out = stem + ".out";
  const std::string setting = stem + ".%p.trace";
  const pid_t before = getpid();
  (void)before;

  // The child's stdout says the grandchild's pid; the child's own pid is in its trace's header.
  const pid_t child = fork();
  if (child == 0) {
    const int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, STDOUT_FILENO);
    putenv(strdup(("STREAMPOOL_TRACE=" + setting).c_str()));
    execl("/proc/self/exe", "child", "--gtest_filter=TraceChild.DISABLED_Forks", "--gtest_also_run_disabled_tests",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  const std::string output = file_text(out);
  const auto at = output.find("grandchild ");
  ASSERT_NE(at, std::string::npos) << output;
  const int grandchild = std::atoi(output.c_str() + at + 11);

  const std::string child_path = stem + "." + std::to_string(child) + ".trace";
  const std::string grandchild_path = stem + "." + std::to_string(grandchild) + ".trace";
  const streampool::trace::Trace parent_trace = read(child_path);
  const streampool::trace::Trace child_trace = read(grandchild_path);

  ASSERT_EQ(of_op(parent_trace, Op::alloc).size(), 1u);
  EXPECT_EQ(of_op(parent_trace, Op::alloc)[0].size, 1000u);
  EXPECT_EQ(of_op(parent_trace, Op::free).size(), 1u);
  ASSERT_EQ(of_op(child_trace, Op::alloc).size(), 1u);  // the grandchild's own call, not its parent's
  EXPECT_EQ(of_op(child_trace, Op::alloc)[0].size, 2000u);
  EXPECT_EQ(child_trace.header.parent_pid, static_cast<std::uint32_t>(child));
  EXPECT_EQ(child_trace.header.pid, static_cast<std::uint32_t>(grandchild));
  unlink(out.c_str());
  unlink(child_path.c_str());
  unlink(grandchild_path.c_str());
}

TEST(Trace, TimingAloneMeasuresTheAllocatorWithoutWritingAFile) {
  const std::string out = temporary("timing") + ".out";
  const pid_t child = fork();
  if (child == 0) {
    const int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, STDOUT_FILENO);
    putenv(strdup("STREAMPOOL_TIMING=1"));
    execl("/proc/self/exe", "child", "--gtest_filter=TraceChild.DISABLED_TwoPairs", "--gtest_also_run_disabled_tests",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);

  const std::string report = file_text(out);
  EXPECT_EQ(report.find("\"timed_calls\":0,"), std::string::npos) << report;
  EXPECT_EQ(report.find("\"time_in_allocator_ns\":0,"), std::string::npos) << report;
  EXPECT_NE(report.find("\"trace\":\"\""), std::string::npos) << report;
  unlink(out.c_str());
}

TEST(Trace, DebugLogWritesOneLinePerAllocatorEvent) {
  const std::string err = temporary("debug") + ".err";

  ASSERT_EQ(run_child("TraceChild.DISABLED_TwoPairs", {"STREAMPOOL_LOG=debug"}, err), 0);

  const std::string log = file_text(err);
  std::size_t allocs = 0;
  std::size_t frees = 0;
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("streampool: debug: alloc stream", 0) == 0) ++allocs;
    if (line.rfind("streampool: debug: free stream", 0) == 0) ++frees;
  }
  EXPECT_EQ(allocs, 2u) << log;
  EXPECT_EQ(frees, 2u) << log;
  unlink(err.c_str());
}

// The lines of `text` that contain `part`.
std::size_t lines_with(const std::string& text, const std::string& part) {
  std::size_t count = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) count += line.find(part) != std::string::npos ? 1 : 0;
  return count;
}

TEST(Trace, AFifoWithNoReaderIsRefusedAtOnceInsteadOfHoldingTheFirstCall) {
  const std::string fifo = temporary("fifo");
  const std::string err = temporary("fifo") + ".err";
  std::remove(fifo.c_str());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);

  const int status = run_child("TraceChild.DISABLED_TwoPairs", {"STREAMPOOL_TRACE=" + fifo}, err);

  EXPECT_EQ(status, 0) << "blocked until the alarm, or failed: " << file_text(err);
  EXPECT_EQ(lines_with(file_text(err), "streampool: warn: cannot write the STREAMPOOL_TRACE trace to " + fifo +
                                           ": not a regular file"),
            1u)
      << file_text(err);
  std::remove(fifo.c_str());
  std::remove(err.c_str());
}

TEST(Trace, ATraceThatCannotBeWrittenIsOneLineAtTheDefaultLogLevel) {
  const std::string err = temporary("no_folder") + ".err";

  const int status = run_child("TraceChild.DISABLED_TwoPairs", {"STREAMPOOL_TRACE=/proc/nope/t"}, err);

  EXPECT_EQ(status, 0);
  EXPECT_EQ(lines_with(file_text(err), "streampool:"), 1u) << file_text(err);
  EXPECT_EQ(lines_with(file_text(err), "streampool: warn: cannot write the STREAMPOOL_TRACE trace to /proc/nope/t: "
                                       "No such file or directory"),
            1u)
      << file_text(err);
  std::remove(err.c_str());
}

TEST(Trace, ATraceThatCannotBeWrittenIsSilentWithLoggingOff) {
  const std::string err = temporary("no_folder_off") + ".err";

  const int status = run_child("TraceChild.DISABLED_TwoPairs", {"STREAMPOOL_TRACE=/proc/nope/t", "STREAMPOOL_LOG=off"}, err);

  EXPECT_EQ(status, 0);
  EXPECT_EQ(file_text(err).find("streampool:"), std::string::npos) << file_text(err);
  std::remove(err.c_str());
}

}  // namespace
