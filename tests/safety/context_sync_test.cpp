// Class 3: a context synchronize completes only the work of the context it waits for.
//
// Each test: streams A and B of one context (a created context C2, or device 0's primary context)
// are the only streams streampool has met. A frees a block behind work that still uses it; then
// the program synchronizes a context that is not A's (the primary context while A is C2's, or
// device 1's primary context), which returns at once; B allocates the same size. Violation: B gets
// A's block and B's work runs while A's work on it still runs: the synchronize was counted as
// completing the work of every stream streampool knew.
#include "safety_support.hpp"

namespace safety {
namespace {

class ContextSync : public CreatedContextTest {};

TEST_F(ContextSync, SynchronizingThePrimaryContextDoesNotCompleteACreatedContextsFrees) {
  ASSERT_NO_FATAL_FAILURE(create_context());
  ASSERT_NO_FATAL_FAILURE(give_up_block(old_owner, pool, created_a));
  CUcontext popped = nullptr;
  ASSERT_EQ(SP(cuCtxPopCurrent_v2)(&popped), CUDA_SUCCESS);  // the primary context is current again

  ASSERT_EQ(SP(cuCtxSynchronize)(), CUDA_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(take_block(new_owner, old_owner, pool, created_b));

  expect_safe(created_a, created_b);
}

TEST_F(ContextSync, SynchronizingThePrimaryContextByNameDoesNotCompleteACreatedContextsFrees) {
  ASSERT_NO_FATAL_FAILURE(create_context());
  ASSERT_NO_FATAL_FAILURE(give_up_block(old_owner, pool, created_a));

  ASSERT_EQ(SP(cuCtxSynchronize_v2)(primary), CUDA_SUCCESS);  // C2 stays current
  ASSERT_NO_FATAL_FAILURE(take_block(new_owner, old_owner, pool, created_b));

  expect_safe(created_a, created_b);
}

TEST_F(ContextSync, SynchronizingAnotherDevicesContextDoesNotCompleteThisDevicesFrees) {
  CUcontext other_device = nullptr;
  ASSERT_EQ(SP(cuDevicePrimaryCtxRetain)(&other_device, 1), CUDA_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(give_up_block(old_owner, pool, a));

  ASSERT_EQ(SP(cuCtxSynchronize_v2)(other_device), CUDA_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(take_block(new_owner, old_owner, pool, b));

  expect_safe(a, b);
  SP(cuDevicePrimaryCtxRelease_v2)(1);
}

TEST_F(ContextSync, SynchronizingAnotherDevicesCurrentContextDoesNotCompleteThisDevicesFrees) {
  CUcontext other_device = nullptr;
  ASSERT_EQ(SP(cuDevicePrimaryCtxRetain)(&other_device, 1), CUDA_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(give_up_block(old_owner, pool, a));

  ASSERT_EQ(SP(cuCtxSetCurrent)(other_device), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuCtxSynchronize)(), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuCtxSetCurrent)(primary), CUDA_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(take_block(new_owner, old_owner, pool, b));

  expect_safe(a, b);
  SP(cuDevicePrimaryCtxRelease_v2)(1);
}

}  // namespace
}  // namespace safety
