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

class ContextEnd : public SafetyTest {
 protected:
  void TearDown() override {
    if (auto clear = reinterpret_cast<void (*)()>(fake_symbol("streampool_fake_clear_failures"))) clear();
    if (created != nullptr) {
      SP(cuCtxPushCurrent_v2)(created);
      SP(cuCtxSynchronize)();
      SP(cuStreamDestroy_v2)(created_a);
      SP(cuStreamDestroy_v2)(created_b);
      SP(cuCtxDestroy_v2)(created);
    }
    SafetyTest::TearDown();
  }

  // The next call of the fake driver's `entry_point` returns `error` without running.
  static void refuse_next_call(const char* entry_point, CUresult error) {
    auto fail = reinterpret_cast<void (*)(const char*, unsigned long long, int)>(
        fake_symbol("streampool_fake_fail_call"));
    ASSERT_NE(fail, nullptr) << "the fake driver has no streampool_fake_fail_call";
    fail(entry_point, 1, static_cast<int>(error));
  }

  CUcontext created = nullptr;
  CUstream created_a = nullptr;
  CUstream created_b = nullptr;
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
  ASSERT_EQ(SP(cuCtxCreate_v4)(&created, nullptr, 0, device), CUDA_SUCCESS);  // now current
  ASSERT_EQ(SP(cuStreamCreate)(&created_a, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuStreamCreate)(&created_b, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(give_up_block(old_owner, pool, created_a));

  ASSERT_NO_FATAL_FAILURE(refuse_next_call("cuCtxDestroy_v2", CUDA_ERROR_INVALID_CONTEXT));
  ASSERT_EQ(SP(cuCtxDestroy_v2)(created), CUDA_ERROR_INVALID_CONTEXT);  // the context lives on, current
  ASSERT_NO_FATAL_FAILURE(take_block(new_owner, old_owner, pool, created_b));

  expect_safe(created_a, created_b);
}

}  // namespace
}  // namespace safety
