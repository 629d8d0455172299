// A context's end is taken only where the driver ended the context.
//
// When a context ends, its streams' work has ended (the driver waits for it), so the tracking
// counts every free of the context complete and forgets its streams. Each test: stream A of a
// context frees a block behind work that still uses it; then the program makes a call that may
// end the context but here does not: a cuDevicePrimaryCtxRelease while another retain keeps the
// primary context active, or a cuCtxDestroy the driver refuses. Stream B of the same context then
// allocates the same size. Violation: B gets A's block and B's work runs while A's work on it
// still runs: the call that returned at once was taken for the context's end.
#include "safety_support.hpp"

namespace safety {
namespace {

class ContextEnd : public CreatedContextTest {
 protected:
  void TearDown() override {
    clear_failures();
    CreatedContextTest::TearDown();
  }
};

TEST_F(ContextEnd, APrimaryContextReleaseThatLeavesItActiveDoesNotCompleteItsFrees) {
  CUcontext retained_again = nullptr;
  ASSERT_EQ(SP(cuDevicePrimaryCtxRetain)(&retained_again, device), CUDA_SUCCESS);  // two retains now
  ASSERT_NO_FATAL_FAILURE(give_up_block(old_owner, pool, a));

  ASSERT_EQ(SP(cuDevicePrimaryCtxRelease_v2)(device), CUDA_SUCCESS);
  unsigned flags = 0;
  int active = 0;
  ASSERT_EQ(SP(cuDevicePrimaryCtxGetState)(device, &flags, &active), CUDA_SUCCESS);
  ASSERT_EQ(active, 1) << "the fixture's retain keeps the primary context";
  ASSERT_NO_FATAL_FAILURE(take_block(new_owner, old_owner, pool, b));

  expect_safe(a, b);
}

TEST_F(ContextEnd, ADestroyTheDriverRefusedDoesNotCompleteTheContextsFrees) {
  ASSERT_NO_FATAL_FAILURE(create_context());
  ASSERT_NO_FATAL_FAILURE(give_up_block(old_owner, pool, created_a));

  ASSERT_NO_FATAL_FAILURE(refuse_next_call("cuCtxDestroy_v2", CUDA_ERROR_INVALID_CONTEXT));
  ASSERT_EQ(SP(cuCtxDestroy_v2)(created), CUDA_ERROR_INVALID_CONTEXT);  // the context lives on, current
  ASSERT_NO_FATAL_FAILURE(take_block(new_owner, old_owner, pool, created_b));

  expect_safe(created_a, created_b);
}

}  // namespace
}  // namespace safety
