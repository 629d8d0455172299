// Class 4: cuMemFree of a pool's pointer synchronizes the current context, and completes nothing
// beyond it.
//
// Each test: stream A (of device 1's primary context, or of a created context C2) frees a block
// of its pool behind work that still uses it. Then, in another context (device 0's primary), the
// program frees an unrelated pool allocation with cuMemFree, which waits for that context only;
// B (A's context) allocates the same size from A's pool. Violation: B gets A's block and B's work
// runs while A's work on it still runs: the cuMemFree was counted as completing every stream of
// every device.
#include "safety_support.hpp"

namespace safety {
namespace {

class MemFree : public SafetyTest {
 protected:
  // An unrelated allocation of device 0's pool, freed with cuMemFree from device 0's primary context.
  void free_synchronously_on_device_zero() {
    CUcontext previous = nullptr;
    ASSERT_EQ(SP(cuCtxGetCurrent)(&previous), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuCtxSetCurrent)(primary), CUDA_SUCCESS);
    CUdeviceptr unrelated = 0;
    ASSERT_EQ(SP(cuMemAllocFromPoolAsync)(&unrelated, 4096, pool, a), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuStreamSynchronize)(a), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuMemFree_v2)(unrelated), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuCtxSetCurrent)(previous), CUDA_SUCCESS);
  }
};

TEST_F(MemFree, FreeingAPoolPointerOnOneDeviceDoesNotCompleteAnotherDevicesFrees) {
  CUcontext device_one = nullptr;
  ASSERT_EQ(SP(cuDevicePrimaryCtxRetain)(&device_one, 1), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuCtxSetCurrent)(device_one), CUDA_SUCCESS);
  CUstream a1 = nullptr;
  CUstream b1 = nullptr;
  ASSERT_EQ(SP(cuStreamCreate)(&a1, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuStreamCreate)(&b1, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  CUmemoryPool pool1 = create_pool(1);
  ASSERT_NO_FATAL_FAILURE(give_up_block(old_owner, pool1, a1));

  ASSERT_NO_FATAL_FAILURE(free_synchronously_on_device_zero());
  ASSERT_NO_FATAL_FAILURE(take_block(new_owner, old_owner, pool1, b1));

  expect_safe(a1, b1);
  SP(cuStreamDestroy_v2)(a1);
  SP(cuStreamDestroy_v2)(b1);
  SP(cuMemPoolDestroy)(pool1);
  SP(cuCtxSetCurrent)(primary);
  SP(cuDevicePrimaryCtxRelease_v2)(1);
}

TEST_F(MemFree, FreeingAPoolPointerInOneContextDoesNotCompleteAnotherContextsFrees) {
  CUcontext created = nullptr;
  ASSERT_EQ(SP(cuCtxCreate_v4)(&created, nullptr, 0, device), CUDA_SUCCESS);  // now current
  CUstream created_a = nullptr;
  CUstream created_b = nullptr;
  ASSERT_EQ(SP(cuStreamCreate)(&created_a, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuStreamCreate)(&created_b, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(give_up_block(old_owner, pool, created_a));

  ASSERT_NO_FATAL_FAILURE(free_synchronously_on_device_zero());
  ASSERT_NO_FATAL_FAILURE(take_block(new_owner, old_owner, pool, created_b));

  expect_safe(created_a, created_b);
  SP(cuStreamDestroy_v2)(created_a);
  SP(cuStreamDestroy_v2)(created_b);
  SP(cuCtxDestroy_v2)(created);
  SP(cuCtxSetCurrent)(primary);
}

}  // namespace
}  // namespace safety
