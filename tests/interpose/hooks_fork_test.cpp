// fork() while another thread is inside streampool: the child must not inherit a lock held by
// a thread that no longer exists (streampool abandons its state in the child and starts afresh
// on first use there), so what the child asks of streampool answers instead of hanging.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <functional>
#include <thread>

#include "hooks_test_api.hpp"

namespace hooks_test {
namespace {

class ForkHooks : public DriverTest {
 protected:
  // Runs `body` in a forked child, whose failures it reports (gtest prints them there); a hang ends
  // the child with SIGALRM. Returns the child's exit status, 0 if nothing failed there.
  static int in_child(const std::function<void()>& body) {
    const pid_t child = fork();
    if (child == 0) {
      alarm(20);
      body();
      std::fflush(stdout);
      _exit(::testing::Test::HasFailure() ? 1 : 0);
    }
    int status = 0;
    if (child < 0 || waitpid(child, &status, 0) != child) return -1;
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  // What the parent leaves behind on `used` before it forks: a stream streampool served there,
  // whose work is done.
  static void use_before_fork(CUstream used) {
    CUdeviceptr pointer = 0;
    ASSERT_EQ(SP(cuMemAllocAsync)(&pointer, kBytes, used), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuMemFreeAsync)(pointer, used), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuStreamSynchronize)(used), CUDA_SUCCESS);
  }

  // In the child: a free on `used` held pending behind work, the work let go, then a synchronize
  // of the context. If streampool counts `used` as of the context, the synchronize proves the free
  // complete, and another stream takes the block back at once, with no wait on `used`.
  static void expect_context_synchronize_completes_frees_of(CUstream used) {
    CUdeviceptr pending = 0;
    ASSERT_EQ(SP(cuMemAllocAsync)(&pending, kBytes, used), CUDA_SUCCESS);
    std::atomic<bool> gate{false};
    ASSERT_EQ(SP(cuLaunchHostFunc)(used, [](void* data) {
      auto* open = static_cast<std::atomic<bool>*>(data);
      while (!open->load()) std::this_thread::yield();
    }, &gate), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuMemFreeAsync)(pending, used), CUDA_SUCCESS);
    gate.store(true);
    ASSERT_EQ(SP(cuCtxSynchronize)(), CUDA_SUCCESS);
    // Created last: a stream's creation starts every cached route afresh, which would hide routes
    // the child inherited from the parent.
    CUstream other = nullptr;
    ASSERT_EQ(SP(cuStreamCreate)(&other, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    const unsigned long long waits_before = fake_calls("cuStreamWaitEvent");

    CUdeviceptr again = 0;
    ASSERT_EQ(SP(cuMemAllocAsync)(&again, kBytes, other), CUDA_SUCCESS);

    EXPECT_EQ(again, pending) << "the synchronize did not cover the stream the parent used";
    EXPECT_EQ(fake_calls("cuStreamWaitEvent"), waits_before) << "the block came with a wait on the stream";
    EXPECT_EQ(SP(cuMemFreeAsync)(again, other), CUDA_SUCCESS);
    EXPECT_EQ(SP(cuStreamSynchronize)(other), CUDA_SUCCESS);
    EXPECT_EQ(SP(cuStreamDestroy_v2)(other), CUDA_SUCCESS);
  }

  static constexpr size_t kBytes = 1 << 20;
};

TEST_F(ForkHooks, AChildForkedWhileAnotherThreadAllocatesCanStillUseStreampool) {
  CUmemoryPool pool = create_device_pool();
  std::atomic<bool> stop{false};
  std::thread busy([&] {
    while (!stop.load()) {
      CUdeviceptr ptr = 0;
      if (SP(cuMemAllocFromPoolAsync)(&ptr, 4096, pool, stream) == CUDA_SUCCESS) SP(cuMemFreeAsync)(ptr, stream);
      SP(cuMemPoolGetAttribute)(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &ptr);
    }
  });
  auto stats = reinterpret_cast<StatsJson>(streampool_symbol("streampool_stats_json"));
  ASSERT_NE(stats, nullptr);
  int children_ok = 0;
  for (int round = 0; round < 20; ++round) {
    const pid_t child = fork();
    if (child == 0) {
      alarm(10);  // a deadlock ends the child with SIGALRM instead of hanging the test
      char report[256];
      const int needed = stats(report, sizeof report);
      // The parent's pool handle means nothing in the child's fresh state.
      const bool forgot_parent_pool = SP(cuMemPoolDestroy)(pool) == CUDA_ERROR_INVALID_VALUE;
      _exit(needed > 0 && forgot_parent_pool ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) ++children_ok;
  }
  stop = true;
  busy.join();
  EXPECT_EQ(children_ok, 20);
  EXPECT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuMemPoolDestroy)(pool), CUDA_SUCCESS);
}

// The forking thread's per-thread default stream lives on in the child, as part of its context:
// the child's synchronize of the context covers it.
TEST_F(ForkHooks, AChildsContextSynchronizeCoversThePerThreadStreamItsThreadUsedBeforeTheFork) {
  ASSERT_NO_FATAL_FAILURE(use_before_fork(CU_STREAM_PER_THREAD));
  EXPECT_EQ(in_child([] { expect_context_synchronize_completes_frees_of(CU_STREAM_PER_THREAD); }), 0);
}

// A created stream the parent used: the child, whose stream registry starts afresh, must not route
// it by what the parent had cached (which names the parent's registry entries), but meet it anew
// as a stream of its context.
TEST_F(ForkHooks, AChildsContextSynchronizeCoversACreatedStreamTheParentUsedBeforeTheFork) {
  ASSERT_NO_FATAL_FAILURE(use_before_fork(stream));
  EXPECT_EQ(in_child([this] { expect_context_synchronize_completes_frees_of(stream); }), 0);
}

}  // namespace
}  // namespace hooks_test
