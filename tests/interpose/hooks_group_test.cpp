// The group budget wired into allocation (STREAMPOOL_GROUP, STREAMPOOL_GROUP_LIMIT): processes of
// one group share one limit per device, each pool growth and each forwarded cuMemAlloc is charged
// to it, cuMemGetInfo reports what the group leaves, and a member killed with SIGKILL while it
// holds memory gives its share back to the others as soon as an admission would fail.
//
// Each member is this program re-run as a child on one DISABLED_ test (hooks_test::run_child_test
// for the ones waited for; a holding member is started by hand and killed).
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "hooks_test_api.hpp"

namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kGroupLimit = 128 * kMiB;

// A current primary context on device 0 and a stream.
CUstream start() {
  EXPECT_EQ(SP(cuInit)(0), CUDA_SUCCESS);
  CUcontext primary = nullptr;
  EXPECT_EQ(SP(cuDevicePrimaryCtxRetain)(&primary, 0), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuCtxSetCurrent)(primary), CUDA_SUCCESS);
  CUstream stream = nullptr;
  EXPECT_EQ(SP(cuStreamCreate)(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  return stream;
}

CUresult allocate(CUstream stream, size_t bytes, CUdeviceptr* block) {
  const CUresult result = SP(cuMemAllocAsync)(block, bytes, stream);
  if (result == CUDA_SUCCESS) {
    EXPECT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
  }
  return result;
}

// A member that takes 96 MiB of the group's 128 MiB (a pool's growth), says so in the file named by
// GROUP_CHILD_READY, and holds it until killed.
TEST(GroupChild, DISABLED_TakesNinetySixMiBAndHoldsIt) {
  CUstream stream = start();
  CUdeviceptr block = 0;
  ASSERT_EQ(allocate(stream, 96 * kMiB, &block), CUDA_SUCCESS);
  const char* ready = std::getenv("GROUP_CHILD_READY");
  ASSERT_NE(ready, nullptr);
  std::ofstream(std::string(ready) + ".tmp") << "ready\n";
  ASSERT_EQ(std::rename((std::string(ready) + ".tmp").c_str(), ready), 0);
  for (;;) pause();
}

// A member that finds 96 MiB of the group taken by another: cuMemGetInfo says the group's limit
// and what it leaves, a pool growth past it and a cuMemAlloc past it fail, and what is left fits.
TEST(GroupChild, DISABLED_SeesTheOtherMembersShareTaken) {
  CUstream stream = start();
  size_t free_bytes = 0, total_bytes = 0;
  ASSERT_EQ(SP(cuMemGetInfo_v2)(&free_bytes, &total_bytes), CUDA_SUCCESS);
  EXPECT_EQ(total_bytes, kGroupLimit);
  EXPECT_EQ(free_bytes, kGroupLimit - 96 * kMiB);
  CUdeviceptr block = 0;
  EXPECT_EQ(allocate(stream, 64 * kMiB, &block), CUDA_ERROR_OUT_OF_MEMORY);
  CUdeviceptr forwarded = 0;
  EXPECT_EQ(SP(cuMemAlloc_v2)(&forwarded, 64 * kMiB), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(SP(cuMemAlloc_v2)(&forwarded, 16 * kMiB), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuMemFree_v2)(forwarded), CUDA_SUCCESS);
}

// A member that, once the other is gone, gets the whole limit.
TEST(GroupChild, DISABLED_GetsTheWholeLimit) {
  CUstream stream = start();
  CUdeviceptr block = 0;
  EXPECT_EQ(allocate(stream, 120 * kMiB, &block), CUDA_SUCCESS);
  size_t free_bytes = 0, total_bytes = 0;
  ASSERT_EQ(SP(cuMemGetInfo_v2)(&free_bytes, &total_bytes), CUDA_SUCCESS);
  EXPECT_EQ(total_bytes, kGroupLimit);
  EXPECT_LE(free_bytes, 8 * kMiB);
}

class GroupCap : public ::testing::Test {
 protected:
  std::string dir;
  std::vector<std::string> environment;
  void SetUp() override {
    char pattern[] = "/tmp/streampool-group-test-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir = pattern;
    environment = {"STREAMPOOL_GROUP=hooks", "STREAMPOOL_GROUP_DIR=" + dir, "STREAMPOOL_GROUP_LIMIT=128M",
                   "STREAMPOOL_FAKE_DEVICES=1"};
  }
  void TearDown() override {
    std::string command = "rm -rf '" + dir + "'";
    EXPECT_EQ(std::system(command.c_str()), 0);
  }
  pid_t start_holder(const std::string& ready) {
    pid_t child = fork();
    if (child == 0) {
      for (const std::string& assignment : environment) putenv(strdup(assignment.c_str()));
      putenv(strdup(("GROUP_CHILD_READY=" + ready).c_str()));
      execl("/proc/self/exe", "child", "--gtest_filter=GroupChild.DISABLED_TakesNinetySixMiBAndHoldsIt",
            "--gtest_also_run_disabled_tests", static_cast<char*>(nullptr));
      _exit(127);
    }
    return child;
  }
  static bool wait_for(const std::string& path, pid_t child) {
    for (int tries = 0; tries < 3000; ++tries) {
      if (access(path.c_str(), F_OK) == 0) return true;
      int status = 0;
      if (waitpid(child, &status, WNOHANG) == child) return false;  // it ended before holding anything
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
};

TEST_F(GroupCap, AMemberSeesWhatAnotherHoldsAndGetsItBackWhenThatMemberIsKilled) {
  const std::string ready = dir + "/holder-ready";
  const pid_t holder = start_holder(ready);
  ASSERT_GT(holder, 0);
  ASSERT_TRUE(wait_for(ready, holder));

  EXPECT_EQ(hooks_test::run_child_test("GroupChild.DISABLED_SeesTheOtherMembersShareTaken", environment), 0);

  ASSERT_EQ(kill(holder, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(holder, &status, 0), holder);
  EXPECT_EQ(hooks_test::run_child_test("GroupChild.DISABLED_GetsTheWholeLimit", environment), 0);
}

TEST_F(GroupCap, AMemberKilledBeforeItIsReapedLeavesNoShareBehindForTheNext) {
  const std::string ready = dir + "/holder-ready";
  const pid_t holder = start_holder(ready);
  ASSERT_GT(holder, 0);
  ASSERT_TRUE(wait_for(ready, holder));
  ASSERT_EQ(kill(holder, SIGKILL), 0);
  // Not reaped yet: a zombie holds no memory, and the next member must not wait for the reaping.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(hooks_test::run_child_test("GroupChild.DISABLED_GetsTheWholeLimit", environment), 0);
  int status = 0;
  EXPECT_EQ(waitpid(holder, &status, 0), holder);
}

}  // namespace
