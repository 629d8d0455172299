// fork(): a child has none of the parent's threads, so none of its streams' workers. Work the child
// submits, and work the parent had queued but not started, runs in the child all the same (the fake
// is more lenient than NVIDIA's driver here, which serves no call in a forked child, so that fork
// handling above the driver can be tested over it).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <thread>

#include "fake_test_support.hpp"
#include "sanitizer_build.hpp"

// fork() while other threads run (the parent's stream workers) is outside what TSan supports: its
// own runtime can deadlock in the child (the interposer's fork tests are left out of TSan builds
// for the same reason).

// ASan's allocator (GCC 12's libsanitizer) takes no lock across fork() either: a child forked while
// another thread (the test's, or a stream's worker) is inside malloc or free waits for that
// thread's lock for ever (seen: the child's restarted workers in SizeClassAllocator64::
// GetFromAllocator, from their thread start). These tests fork beside running workers, so they
// are left out of the address build too; the interposer's fork tests still run there.

namespace fake_test {
namespace {

class ForkTest : public FakeDriverTest {
 protected:
  void SetUp() override {
#ifdef STREAMPOOL_TEST_UNDER_TSAN
    GTEST_SKIP() << "fork() with threads running is outside what TSan supports";
#endif
#ifdef STREAMPOOL_TEST_UNDER_ASAN
    GTEST_SKIP() << "fork() beside threads inside malloc can deadlock in ASan's allocator";
#endif
    FakeDriverTest::SetUp();
  }
  void TearDown() override {
    if (!IsSkipped()) FakeDriverTest::TearDown();  // nothing to release when SetUp skipped
  }
};

// Runs `body` in a forked child; true if it returned true there. A hang ends the child with SIGALRM
// (a failure), not the test run.
bool in_child(const std::function<bool()>& body) {
  const pid_t child = fork();
  if (child == 0) {
    alarm(10);
    _exit(body() ? 0 : 1);
  }
  int status = 0;
  if (child < 0 || waitpid(child, &status, 0) != child) return false;
  const bool signaled = WIFSIGNALED(status);
  EXPECT_FALSE(signaled) << "the child ended by signal " << WTERMSIG(status) << " (SIGALRM: it hung)";
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// Host function: announces it runs, then waits until its gate opens.
struct Gate {
  std::atomic<bool> entered{false};
  std::atomic<bool> open{false};
};
void CUDA_CB hold_at_gate(void* data) {
  auto* gate = static_cast<Gate*>(data);
  gate->entered.store(true);
  while (!gate->open.load()) std::this_thread::yield();
}
void wait_until_entered(const Gate& gate) {
  while (!gate.entered.load()) std::this_thread::yield();
}

// The parent's worker for the stream is still there, idle, when it forks (a worker lingers a while
// after its last work): the child has no such thread, and must start one for its own work.
TEST_F(ForkTest, AStreamUsedJustBeforeAForkRunsTheChildsWork) {
  CUstream stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  std::atomic<bool> parent_ran{false};
  ASSERT_EQ(cuLaunchHostFunc(stream, raise_flag, &parent_ran), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(stream), CUDA_SUCCESS);
  ASSERT_TRUE(parent_ran.load());

  EXPECT_TRUE(in_child([&] {
    std::atomic<bool> child_ran{false};
    return cuLaunchHostFunc(stream, raise_flag, &child_ran) == CUDA_SUCCESS &&
           cuStreamSynchronize(stream) == CUDA_SUCCESS && child_ran.load() &&
           cuLaunchHostFunc(CU_STREAM_LEGACY, raise_flag, &child_ran) == CUDA_SUCCESS &&
           cuCtxSynchronize() == CUDA_SUCCESS;
  }));
  EXPECT_EQ(cuStreamDestroy(stream), CUDA_SUCCESS);
}

// Work queued behind work that runs when the parent forks: in the child, the running work counts as
// done (its thread stayed in the parent) and the queued work runs.
TEST_F(ForkTest, WorkQueuedBehindRunningWorkAtAForkRunsInTheChild) {
  CUstream stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  Gate gate;
  std::atomic<bool> queued_ran{false};
  ASSERT_EQ(cuLaunchHostFunc(stream, hold_at_gate, &gate), CUDA_SUCCESS);
  wait_until_entered(gate);
  ASSERT_EQ(cuLaunchHostFunc(stream, raise_flag, &queued_ran), CUDA_SUCCESS);

  EXPECT_TRUE(in_child([&] {
    return cuStreamSynchronize(stream) == CUDA_SUCCESS && queued_ran.load() && cuStreamQuery(stream) == CUDA_SUCCESS;
  }));
  EXPECT_FALSE(queued_ran.load()) << "the child's run is not the parent's";
  gate.open.store(true);
  EXPECT_EQ(cuStreamSynchronize(stream), CUDA_SUCCESS);
  EXPECT_TRUE(queued_ran.load());
  EXPECT_EQ(cuStreamDestroy(stream), CUDA_SUCCESS);
}

// Work that waits for another stream's event when the parent forks still waits in the child, and
// runs once that stream's work (queued there too) is done.
TEST_F(ForkTest, WorkWaitingForAnotherStreamAtAForkRunsInTheChildAfterIt) {
  CUstream first = nullptr;
  CUstream second = nullptr;
  CUevent event = nullptr;
  ASSERT_EQ(cuStreamCreate(&first, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamCreate(&second, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(cuEventCreate(&event, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  Gate gate;
  std::atomic<bool> first_ran{false};
  FlagObservation second_saw;
  second_saw.watched = &first_ran;
  ASSERT_EQ(cuLaunchHostFunc(first, hold_at_gate, &gate), CUDA_SUCCESS);
  wait_until_entered(gate);
  ASSERT_EQ(cuLaunchHostFunc(first, raise_flag, &first_ran), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(event, first), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamWaitEvent(second, event, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuLaunchHostFunc(second, observe_flag, &second_saw), CUDA_SUCCESS);

  EXPECT_TRUE(in_child([&] {
    return cuStreamSynchronize(second) == CUDA_SUCCESS && second_saw.seen.load() == 1 &&
           cuEventQuery(event) == CUDA_SUCCESS;
  }));
  EXPECT_EQ(second_saw.seen.load(), -1);
  gate.open.store(true);
  EXPECT_EQ(cuStreamSynchronize(second), CUDA_SUCCESS);
  EXPECT_EQ(second_saw.seen.load(), 1);
  EXPECT_EQ(cuEventDestroy(event), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamDestroy(first), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamDestroy(second), CUDA_SUCCESS);
}

// The parent's other threads create and destroy streams and events, and record events, while it
// forks: the child inherits none of the fake's registry or stream locks held, and can do the same.
TEST_F(ForkTest, AChildForkedWhileAnotherThreadCreatesStreamsAndEventsCanCreateThemToo) {
  const auto use_streams_and_events = [] {
    CUstream stream = nullptr;
    CUevent event = nullptr;
    bool ok = cuStreamCreate(&stream, CU_STREAM_DEFAULT) == CUDA_SUCCESS;
    ok = ok && cuEventCreate(&event, CU_EVENT_DISABLE_TIMING) == CUDA_SUCCESS;
    ok = ok && cuEventRecord(event, stream) == CUDA_SUCCESS && cuStreamWaitEvent(CU_STREAM_LEGACY, event, 0) == CUDA_SUCCESS;
    ok = ok && cuStreamSynchronize(CU_STREAM_LEGACY) == CUDA_SUCCESS;
    ok = cuEventDestroy(event) == CUDA_SUCCESS && ok;
    ok = cuStreamDestroy(stream) == CUDA_SUCCESS && ok;
    return ok;
  };
  ASSERT_TRUE(use_streams_and_events());  // every entry point met once before the other thread runs
  std::atomic<bool> stop{false};
  std::thread busy([&] {
    ASSERT_EQ(cuCtxSetCurrent(context_), CUDA_SUCCESS);
    while (!stop.load()) use_streams_and_events();
  });
  int children_ok = 0;
  for (int round = 0; round < 20; ++round) {
    if (in_child(use_streams_and_events)) ++children_ok;
  }
  stop.store(true);
  busy.join();
  EXPECT_EQ(children_ok, 20);
}

}  // namespace
}  // namespace fake_test
