// Contexts: primary contexts, created contexts, the per-thread context stack.
#include <thread>

#include "fake_test_support.hpp"

namespace fake_test {
namespace {

using ContextsTest = FakeDriverTest;

TEST_F(ContextsTest, PrimaryContextIsTheSameHandleOnEveryRetainAndActiveWhileRetained) {
  CUcontext again = nullptr;
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&again, 0), CUDA_SUCCESS);
  unsigned flags = 99;
  int active = 0;
  ASSERT_EQ(cuDevicePrimaryCtxGetState(0, &flags, &active), CUDA_SUCCESS);
  EXPECT_EQ(again, context_);
  EXPECT_EQ(active, 1);
  EXPECT_EQ(cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS);
}

TEST_F(ContextsTest, PrimaryContextFlagsCanBeSet) {
  ASSERT_EQ(cuDevicePrimaryCtxSetFlags(2, CU_CTX_SCHED_BLOCKING_SYNC), CUDA_SUCCESS);
  unsigned flags = 0;
  int active = 1;
  ASSERT_EQ(cuDevicePrimaryCtxGetState(2, &flags, &active), CUDA_SUCCESS);
  EXPECT_EQ(flags, static_cast<unsigned>(CU_CTX_SCHED_BLOCKING_SYNC));
  EXPECT_EQ(active, 0);
}

TEST_F(ContextsTest, CreatedContextIsPushedAndDestroyPopsIt) {
  CUcontext created = nullptr;
  ASSERT_EQ(cuCtxCreate(&created, nullptr, 0, 1), CUDA_SUCCESS);
  CUcontext current = nullptr;
  CUdevice device = -1;
  ASSERT_EQ(cuCtxGetCurrent(&current), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxGetDevice(&device), CUDA_SUCCESS);
  unsigned long long created_id = 0;
  unsigned long long primary_id = 0;
  ASSERT_EQ(cuCtxGetId(created, &created_id), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxGetId(context_, &primary_id), CUDA_SUCCESS);

  ASSERT_EQ(cuCtxDestroy(created), CUDA_SUCCESS);
  CUcontext after = nullptr;
  ASSERT_EQ(cuCtxGetCurrent(&after), CUDA_SUCCESS);

  EXPECT_EQ(current, created);
  EXPECT_EQ(device, 1);
  EXPECT_NE(created_id, primary_id);
  EXPECT_EQ(after, context_);
  EXPECT_EQ(cuCtxDestroy(created), CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(cuCtxSetCurrent(created), CUDA_ERROR_INVALID_CONTEXT);
}

TEST_F(ContextsTest, DestroyingAContextInvalidatesItsStreams) {
  CUcontext created = nullptr;
  ASSERT_EQ(cuCtxCreate(&created, nullptr, 0, 0), CUDA_SUCCESS);
  CUstream stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxDestroy(created), CUDA_SUCCESS);

  EXPECT_EQ(cuStreamQuery(stream), CUDA_ERROR_INVALID_HANDLE);
}

TEST_F(ContextsTest, ContextStackIsPerThread) {
  CUcontext seen_by_new_thread = reinterpret_cast<CUcontext>(0x1);
  std::thread([&] { cuCtxGetCurrent(&seen_by_new_thread); }).join();
  CUcontext here = nullptr;
  ASSERT_EQ(cuCtxGetCurrent(&here), CUDA_SUCCESS);
  EXPECT_EQ(seen_by_new_thread, nullptr);
  EXPECT_EQ(here, context_);
}

TEST_F(ContextsTest, PushAndPopNestAndPopOfEmptyStackFails) {
  CUcontext other = nullptr;
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&other, 1), CUDA_SUCCESS);
  CUcontext popped = nullptr;
  std::thread([&] {
    EXPECT_EQ(cuCtxPopCurrent(&popped), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT_EQ(cuCtxPushCurrent(context_), CUDA_SUCCESS);
    EXPECT_EQ(cuCtxPushCurrent(other), CUDA_SUCCESS);
    EXPECT_EQ(cuCtxPopCurrent(&popped), CUDA_SUCCESS);
    EXPECT_EQ(popped, other);
    CUcontext current = nullptr;
    EXPECT_EQ(cuCtxGetCurrent(&current), CUDA_SUCCESS);
    EXPECT_EQ(current, context_);
  }).join();
  cuDevicePrimaryCtxRelease(1);
}

TEST_F(ContextsTest, ContextQueriesAnswerForNamedAndCurrentContexts) {
  unsigned version = 0;
  CUdevice device = -1;
  ASSERT_EQ(cuCtxGetApiVersion(nullptr, &version), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxGetDevice_v2(&device, context_), CUDA_SUCCESS);
  EXPECT_EQ(version, 3020u);
  EXPECT_EQ(device, 0);
  EXPECT_EQ(cuCtxSynchronize_v2(context_), CUDA_SUCCESS);
  EXPECT_EQ(cuCtxGetDevice_v2(&device, reinterpret_cast<CUcontext>(0x777)), CUDA_ERROR_INVALID_CONTEXT);
}

}  // namespace
}  // namespace fake_test
