// fork() while another thread is inside streampool: the child must not inherit a lock held by
// a thread that no longer exists (streampool abandons its state in the child and starts afresh
// on first use there), so what the child asks of streampool answers instead of hanging.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "hooks_test_api.hpp"

namespace hooks_test {
namespace {

class ForkHooks : public DriverTest {};

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

}  // namespace
}  // namespace hooks_test
