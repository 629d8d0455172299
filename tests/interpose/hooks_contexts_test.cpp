// Every context path works under streampool as on the driver alone, and the tracking follows
// contexts that end: created contexts (cuCtxCreate v2/v3/v4, NULL params), destroy, push/pop,
// primary retain / release / reset, and use after a reset.
#include "hooks_test_api.hpp"

namespace {

// cuCtxCreate_v2, which cuda.h of CUDA 13 no longer declares (cuCtxCreate is the v4 form now).
using CtxCreateV2 = CUresult (*)(CUcontext*, unsigned int, CUdevice);
CUresult create_context_v2(CUcontext* context, CUdevice device) {
  auto create = reinterpret_cast<CtxCreateV2>(hooks_test::streampool_symbol("cuCtxCreate_v2"));
  return create == nullptr ? CUDA_ERROR_NOT_FOUND : create(context, 0, device);
}

class ContextHooks : public hooks_test::DriverTest {
 protected:
  // One allocation and free on `on`, from the device's current pool; the address.
  CUdeviceptr alloc_free(CUstream on, size_t bytes = 1 << 20) {
    CUdeviceptr pointer = 0;
    EXPECT_EQ(SP(cuMemAllocAsync)(&pointer, bytes, on), CUDA_SUCCESS);
    EXPECT_EQ(SP(cuMemFreeAsync)(pointer, on), CUDA_SUCCESS);
    return pointer;
  }
};

TEST_F(ContextHooks, ACreatedContextWithNullParamsAllocatesAndIsDestroyed) {
  CUcontext created = nullptr;
  ASSERT_EQ(SP(cuCtxCreate_v4)(&created, nullptr, 0, device), CUDA_SUCCESS);
  CUstream in_created = nullptr;
  ASSERT_EQ(SP(cuStreamCreate)(&in_created, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  EXPECT_NE(alloc_free(in_created), 0u);
  EXPECT_EQ(SP(cuStreamSynchronize)(in_created), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuStreamDestroy_v2)(in_created), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuCtxDestroy_v2)(created), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuCtxSetCurrent)(context), CUDA_SUCCESS);
  EXPECT_NE(alloc_free(stream), 0u);  // the primary context's streams are unaffected
}

TEST_F(ContextHooks, ManyCreatedContextsComeAndGoWithAllocationsInEach) {
  for (int round = 0; round < 50; ++round) {
    CUcontext created = nullptr;
    ASSERT_EQ(round % 2 == 0 ? create_context_v2(&created, device) : SP(cuCtxCreate_v4)(&created, nullptr, 0, device),
              CUDA_SUCCESS);
    EXPECT_NE(alloc_free(CU_STREAM_LEGACY), 0u);  // the created context's legacy stream
    ASSERT_EQ(round % 2 == 0 ? SP(cuCtxDestroy)(created) : SP(cuCtxDestroy_v2)(created), CUDA_SUCCESS);
  }
  ASSERT_EQ(SP(cuCtxSetCurrent)(context), CUDA_SUCCESS);
  EXPECT_NE(alloc_free(stream), 0u);
}

// A context's end ends its streams in the tracking, so their slots serve later streams: a program
// that creates and destroys contexts with streams in them for as long as it runs holds as many
// slots as it has streams at once. The created stream is not destroyed: it goes with its context.
TEST_F(ContextHooks, ContextsEndingWithTheirStreamsHoldAConstantNumberOfStreamSlots) {
  auto stream_slots = reinterpret_cast<int (*)(size_t*)>(hooks_test::streampool_symbol("streampool_debug_stream_slots"));
  ASSERT_NE(stream_slots, nullptr);
  const auto one_round = [&] {
    CUcontext created = nullptr;
    ASSERT_EQ(SP(cuCtxCreate_v4)(&created, nullptr, 0, device), CUDA_SUCCESS);
    CUstream in_created = nullptr;
    ASSERT_EQ(SP(cuStreamCreate)(&in_created, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    EXPECT_NE(alloc_free(in_created), 0u);
    EXPECT_NE(alloc_free(CU_STREAM_LEGACY), 0u);
    ASSERT_EQ(SP(cuCtxDestroy_v2)(created), CUDA_SUCCESS);
  };
  ASSERT_NO_FATAL_FAILURE(one_round());
  size_t after_first_round = 0;
  ASSERT_EQ(stream_slots(&after_first_round), CUDA_SUCCESS);

  for (int round = 0; round < 20; ++round) ASSERT_NO_FATAL_FAILURE(one_round());
  size_t after_many_rounds = 0;
  ASSERT_EQ(stream_slots(&after_many_rounds), CUDA_SUCCESS);

  EXPECT_EQ(after_many_rounds, after_first_round);
  ASSERT_EQ(SP(cuCtxSetCurrent)(context), CUDA_SUCCESS);
}

TEST_F(ContextHooks, PushAndPopNameTheRightDefaultStream) {
  CUcontext created = nullptr;
  ASSERT_EQ(SP(cuCtxCreate_v4)(&created, nullptr, 0, device), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuCtxPushCurrent_v2)(context), CUDA_SUCCESS);  // primary on top of the created one
  CUdeviceptr pointer = 0;
  ASSERT_EQ(SP(cuMemAllocAsync)(&pointer, 1 << 20, CU_STREAM_LEGACY), CUDA_SUCCESS);
  CUcontext popped = nullptr;
  ASSERT_EQ(SP(cuCtxPopCurrent_v2)(&popped), CUDA_SUCCESS);
  EXPECT_EQ(popped, context);
  // Freed on the created context's legacy stream: a pool pointer may be freed on any stream.
  EXPECT_EQ(SP(cuMemFreeAsync)(pointer, CU_STREAM_LEGACY), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuCtxSynchronize)(), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuCtxDestroy_v2)(created), CUDA_SUCCESS);
}

TEST_F(ContextHooks, APrimaryContextIsUsableAfterAReset) {
  ASSERT_NE(alloc_free(stream), 0u);
  ASSERT_EQ(SP(cuStreamDestroy_v2)(stream), CUDA_SUCCESS);
  stream = nullptr;
  ASSERT_EQ(SP(cuDevicePrimaryCtxReset_v2)(device), CUDA_SUCCESS);
  CUcontext primary = nullptr;
  ASSERT_EQ(SP(cuDevicePrimaryCtxRetain)(&primary, device), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuCtxSetCurrent)(primary), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuStreamCreate)(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  EXPECT_NE(alloc_free(stream), 0u);
  EXPECT_NE(alloc_free(CU_STREAM_LEGACY), 0u);
  EXPECT_EQ(SP(cuCtxSynchronize)(), CUDA_SUCCESS);
}

TEST_F(ContextHooks, APrimaryContextReleasedToZeroEndsItsStreamsInTheTracking) {
  ASSERT_NE(alloc_free(stream), 0u);
  ASSERT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuStreamDestroy_v2)(stream), CUDA_SUCCESS);
  stream = nullptr;
  // Release every reference the test holds: the fixture's, and the one taken here to count them.
  unsigned flags = 0;
  int active = 1;
  while (active != 0) {
    ASSERT_EQ(SP(cuDevicePrimaryCtxRelease_v2)(device), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuDevicePrimaryCtxGetState)(device, &flags, &active), CUDA_SUCCESS);
  }
  const unsigned long long resets = hooks_test::fake_calls("cuDevicePrimaryCtxRelease_v2");
  EXPECT_GE(resets, 1u);
  // A new primary context: the old one's legacy stream key must not carry over its state.
  CUcontext primary = nullptr;
  ASSERT_EQ(SP(cuDevicePrimaryCtxRetain)(&primary, device), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuCtxSetCurrent)(primary), CUDA_SUCCESS);
  EXPECT_NE(alloc_free(CU_STREAM_LEGACY), 0u);
  ASSERT_EQ(SP(cuStreamCreate)(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  EXPECT_NE(alloc_free(stream), 0u);
  EXPECT_EQ(SP(cuCtxSynchronize)(), CUDA_SUCCESS);
}

}  // namespace
