// Class 9: frees and allocations of one pool on streams of two devices.
//
// Each test: the pool is device 0's, and device 1 may access it. The old owner's stream D1 is a
// stream of device 1's primary context: it frees a block behind work that still uses it. A stream
// of device 0 (B) then allocates the same size from the same pool, ordered by an event of device
// 1 recorded after the free (reuse is allowed, behind D1's work), ordered by an event recorded
// before the work (too early: not an ordering of the free), not ordered at all, or after a
// cuCtxSynchronize of device 0's context (which says nothing of device 1's streams). And the
// other way: a device-0 free reused on device 1 through an event of device 0. Violation: B gets
// the block and B's work runs while D1's work on it still runs.
#include "safety_support.hpp"

namespace safety {
namespace {

class CrossDevice : public SafetyTest {
 protected:
  void SetUp() override {
    SafetyTest::SetUp();
    if (HasFatalFailure()) return;
    int count = 0;
    ASSERT_EQ(SP(cuDeviceGetCount)(&count), CUDA_SUCCESS);
    ASSERT_GE(count, 2) << "run with STREAMPOOL_FAKE_DEVICES=2";
    ASSERT_EQ(SP(cuDevicePrimaryCtxRetain)(&device1, 1), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuCtxSetCurrent)(device1), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuStreamCreate)(&d1, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuEventCreate)(&event1, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuCtxSetCurrent)(primary), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuEventCreate)(&event0, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
    CUmemAccessDesc grant{};
    grant.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    grant.location.id = 1;
    grant.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    ASSERT_EQ(SP(cuMemPoolSetAccess)(pool, &grant, 1), CUDA_SUCCESS);
  }
  void TearDown() override {
    if (device1 != nullptr) {
      SP(cuCtxSetCurrent)(device1);
      SP(cuCtxSynchronize)();  // D1's old owner's work has ended before its memory goes
      if (d1 != nullptr) SP(cuStreamDestroy_v2)(d1);
      if (event1 != nullptr) SP(cuEventDestroy_v2)(event1);
      SP(cuCtxSetCurrent)(primary);
    }
    if (event0 != nullptr) SP(cuEventDestroy_v2)(event0);
    SafetyTest::TearDown();
    if (device1 != nullptr) SP(cuDevicePrimaryCtxRelease_v2)(1);
  }

  // The old owner on D1 (device 1's context current meanwhile); device 0's context is current after.
  void give_up_block_on_device1(bool record_after_free) {
    ASSERT_EQ(SP(cuCtxSetCurrent)(device1), CUDA_SUCCESS);
    ASSERT_NO_FATAL_FAILURE(give_up_block(old_owner, pool, d1));
    if (record_after_free) {
      ASSERT_EQ(SP(cuEventRecord)(event1, d1), CUDA_SUCCESS);
    }
    ASSERT_EQ(SP(cuCtxSetCurrent)(primary), CUDA_SUCCESS);
  }

  CUcontext device1 = nullptr;
  CUstream d1 = nullptr;
  CUevent event1 = nullptr;  // an event of device 1's context
  CUevent event0 = nullptr;  // an event of device 0's context
};

TEST_F(CrossDevice, AnEventOfDevice1RecordedAfterTheFreeLetsDevice0ReuseTheBlockBehindTheWork) {
  ASSERT_NO_FATAL_FAILURE(give_up_block_on_device1(true));

  ASSERT_EQ(SP(cuStreamWaitEvent)(b, event1, 0), CUDA_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(take_block(new_owner, old_owner, pool, b));

  // The event orders the free before B: the block is B's to reuse, and B's work waits for D1's.
  EXPECT_TRUE(overlaps(old_owner, new_owner)) << "the event of device 1 did not count as ordering the free";
  expect_safe(d1, b);
}

TEST_F(CrossDevice, AnEventOfDevice1RecordedBeforeTheFreeDoesNotOrderIt) {
  ASSERT_EQ(SP(cuCtxSetCurrent)(device1), CUDA_SUCCESS);
  old_owner.bytes = kBlockBytes;
  ASSERT_EQ(SP(cuMemAllocFromPoolAsync)(&old_owner.block, kBlockBytes, pool, d1), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuEventRecord)(event1, d1), CUDA_SUCCESS);  // before the work and the free
  ASSERT_EQ(SP(cuLaunchHostFunc)(d1, old_owner_work, &old_owner), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemFreeAsync)(old_owner.block, d1), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuCtxSetCurrent)(primary), CUDA_SUCCESS);

  ASSERT_EQ(SP(cuStreamWaitEvent)(b, event1, 0), CUDA_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(take_block(new_owner, old_owner, pool, b));

  expect_safe(d1, b);
}

TEST_F(CrossDevice, AnUnorderedDevice0AllocationDoesNotGetTheBlockWhileDevice1sWorkRuns) {
  ASSERT_NO_FATAL_FAILURE(give_up_block_on_device1(false));

  ASSERT_NO_FATAL_FAILURE(take_block(new_owner, old_owner, pool, b));

  expect_safe(d1, b);
}

TEST_F(CrossDevice, SynchronizingDevice0sContextDoesNotCompleteDevice1sFrees) {
  ASSERT_NO_FATAL_FAILURE(give_up_block_on_device1(false));

  ASSERT_EQ(SP(cuCtxSynchronize)(), CUDA_SUCCESS);  // device 0's context: returns at once
  ASSERT_NO_FATAL_FAILURE(take_block(new_owner, old_owner, pool, b));

  expect_safe(d1, b);
}

TEST_F(CrossDevice, SynchronizingDevice0sContextByNameFromDevice1DoesNotCompleteDevice1sFrees) {
  ASSERT_NO_FATAL_FAILURE(give_up_block_on_device1(false));
  ASSERT_EQ(SP(cuCtxSetCurrent)(device1), CUDA_SUCCESS);

  ASSERT_EQ(SP(cuCtxSynchronize_v2)(primary), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuCtxSetCurrent)(primary), CUDA_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(take_block(new_owner, old_owner, pool, b));

  expect_safe(d1, b);
}

TEST_F(CrossDevice, AnEventOfDevice0RecordedAfterTheFreeLetsDevice1ReuseTheBlockBehindTheWork) {
  ASSERT_NO_FATAL_FAILURE(give_up_block(old_owner, pool, a));
  ASSERT_EQ(SP(cuEventRecord)(event0, a), CUDA_SUCCESS);

  ASSERT_EQ(SP(cuCtxSetCurrent)(device1), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuStreamWaitEvent)(d1, event0, 0), CUDA_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(take_block(new_owner, old_owner, pool, d1));
  ASSERT_EQ(SP(cuCtxSetCurrent)(primary), CUDA_SUCCESS);

  EXPECT_TRUE(overlaps(old_owner, new_owner)) << "the event of device 0 did not count as ordering the free";
  expect_safe(a, d1);
}

TEST_F(CrossDevice, AnUnorderedDevice1AllocationDoesNotGetADevice0BlockWhileItsWorkRuns) {
  ASSERT_NO_FATAL_FAILURE(give_up_block(old_owner, pool, a));

  ASSERT_EQ(SP(cuCtxSetCurrent)(device1), CUDA_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(take_block(new_owner, old_owner, pool, d1));
  ASSERT_EQ(SP(cuCtxSetCurrent)(primary), CUDA_SUCCESS);

  expect_safe(a, d1);
}

}  // namespace
}  // namespace safety
