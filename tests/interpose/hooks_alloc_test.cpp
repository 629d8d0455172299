// The allocation hooks: served by streampool's pools, not the driver's; foreign pointers and
// capturing streams forwarded to the real driver; bad handles answered with errors.
#include <atomic>
#include <chrono>
#include <thread>

#include "hooks_test_api.hpp"

namespace {

using hooks_test::DriverTest;
using hooks_test::fake_calls;

class AllocHooks : public DriverTest {};

// Host function holding its stream until the test opens the gate.
void CUDA_CB wait_for_gate(void* data) {
  auto* gate = static_cast<std::atomic<bool>*>(data);
  while (!gate->load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

TEST_F(AllocHooks, AllocAsyncIsServedByTheDevicesCurrentStreampoolPool) {
  CUmemoryPool current = nullptr;
  ASSERT_EQ(SP(cuDeviceGetMemPool)(&current, device), CUDA_SUCCESS);
  const auto driver_allocs = fake_calls("cuMemAllocAsync");
  CUdeviceptr pointer = 0;

  ASSERT_EQ(SP(cuMemAllocAsync)(&pointer, 4096, stream), CUDA_SUCCESS);

  CUmemoryPool owner = nullptr;
  EXPECT_EQ(SP(cuPointerGetAttribute)(&owner, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, pointer), CUDA_SUCCESS);
  EXPECT_EQ(owner, current);
  EXPECT_EQ(fake_calls("cuMemAllocAsync"), driver_allocs);
  EXPECT_EQ(SP(cuMemFreeAsync)(pointer, stream), CUDA_SUCCESS);
}

TEST_F(AllocHooks, FreeAsyncOfAPlainDriverAllocationIsForwardedToTheDriver) {
  CUdeviceptr plain = 0;
  ASSERT_EQ(SP(cuMemAlloc_v2)(&plain, 4096), CUDA_SUCCESS);
  const auto driver_frees = fake_calls("cuMemFreeAsync");

  EXPECT_EQ(SP(cuMemFreeAsync)(plain, stream), CUDA_SUCCESS);

  EXPECT_EQ(fake_calls("cuMemFreeAsync"), driver_frees + 1);
}

TEST_F(AllocHooks, InvalidStreamHandleIsAnErrorNotACrash) {
  CUdeviceptr pointer = 1;
  auto* bogus = reinterpret_cast<CUstream>(std::uintptr_t{0x12345});

  EXPECT_EQ(SP(cuMemAllocAsync)(&pointer, 16, bogus), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(pointer, 0u);
  EXPECT_EQ(SP(cuStreamSynchronize)(bogus), CUDA_ERROR_INVALID_HANDLE);
}

TEST_F(AllocHooks, AllocationsOnACapturingStreamReachTheRealDriver) {
  const auto driver_allocs = fake_calls("cuMemAllocAsync");
  const auto driver_frees = fake_calls("cuMemFreeAsync");
  ASSERT_EQ(SP(cuStreamBeginCapture_v2)(stream, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
  CUdeviceptr captured = 0;

  EXPECT_EQ(SP(cuMemAllocAsync)(&captured, 1024, stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuMemFreeAsync)(captured, stream), CUDA_SUCCESS);

  CUgraph graph = nullptr;
  EXPECT_EQ(SP(cuStreamEndCapture)(stream, &graph), CUDA_SUCCESS);
  EXPECT_EQ(fake_calls("cuMemAllocAsync"), driver_allocs + 1);
  EXPECT_EQ(fake_calls("cuMemFreeAsync"), driver_frees + 1);
  if (graph != nullptr) SP(cuGraphDestroy)(graph);
}

TEST_F(AllocHooks, AfterCaptureEndsAllocationsAreStreampoolsAgain) {
  ASSERT_EQ(SP(cuStreamBeginCapture_v2)(stream, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
  CUgraph graph = nullptr;
  ASSERT_EQ(SP(cuStreamEndCapture)(stream, &graph), CUDA_SUCCESS);
  if (graph != nullptr) SP(cuGraphDestroy)(graph);
  const auto driver_allocs = fake_calls("cuMemAllocAsync");
  CUdeviceptr pointer = 0;

  ASSERT_EQ(SP(cuMemAllocAsync)(&pointer, 1024, stream), CUDA_SUCCESS);

  EXPECT_EQ(fake_calls("cuMemAllocAsync"), driver_allocs);
  EXPECT_EQ(SP(cuMemFreeAsync)(pointer, stream), CUDA_SUCCESS);
}

// The real driver's pool when it has one; the fake has none, so there it is the stream's pool.
TEST_F(AllocHooks, AllocFromPoolOnACapturingStreamIsTheDriversAllocation) {
  CUmemoryPool pool = create_device_pool();
  const auto driver_allocs = fake_calls("cuMemAllocFromPoolAsync") + fake_calls("cuMemAllocAsync");
  ASSERT_EQ(SP(cuStreamBeginCapture_v2)(stream, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
  CUdeviceptr captured = 0;

  EXPECT_EQ(SP(cuMemAllocFromPoolAsync)(&captured, 1024, pool, stream), CUDA_SUCCESS);

  CUgraph graph = nullptr;
  EXPECT_EQ(SP(cuStreamEndCapture)(stream, &graph), CUDA_SUCCESS);
  EXPECT_EQ(fake_calls("cuMemAllocFromPoolAsync") + fake_calls("cuMemAllocAsync"), driver_allocs + 1);
  EXPECT_EQ(pool_attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH), 0u);
  if (graph != nullptr) SP(cuGraphDestroy)(graph);
  EXPECT_EQ(SP(cuMemPoolDestroy)(pool), CUDA_SUCCESS);
}

TEST_F(AllocHooks, PerThreadDefaultStreamKeysAreDistinctPerThread) {
  const std::uintptr_t here = hooks_test::stream_key(nullptr, true);
  std::uintptr_t there = 0;
  std::thread other([&] {
    SP(cuCtxSetCurrent)(context);
    there = hooks_test::stream_key(CU_STREAM_PER_THREAD, false);
  });
  other.join();

  EXPECT_NE(here, 0u);
  EXPECT_NE(there, 0u);
  EXPECT_NE(here, there);
  EXPECT_EQ(hooks_test::stream_key(CU_STREAM_PER_THREAD, false), here);
  EXPECT_NE(hooks_test::stream_key(nullptr, false), here);  // the legacy stream is another one
  EXPECT_EQ(hooks_test::stream_key(nullptr, false), hooks_test::stream_key(CU_STREAM_LEGACY, true));
}

// The thread's route cache keeps the legacy and the per-thread default stream of one context
// apart however they are named (nullptr through either variant, CU_STREAM_LEGACY,
// CU_STREAM_PER_THREAD): a legacy free routed to the per-thread stream would be proven by that
// stream's synchronize while the legacy stream's work still uses the block.
TEST_F(AllocHooks, TheRouteCacheKeepsTheLegacyAndThePerThreadStreamApart) {
  std::atomic<bool> gate{false};
  // Opens the gate in any case: a broken route must fail the test, not hang it.
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::seconds(2));
    gate.store(true);
  });
  CUdeviceptr warm = 0;
  ASSERT_EQ(SP(cuMemAllocAsync)(&warm, 1 << 20, CU_STREAM_PER_THREAD), CUDA_SUCCESS);  // its route cached first
  CUdeviceptr used = 0;
  ASSERT_EQ(SP(cuMemAllocAsync)(&used, 1 << 20, nullptr), CUDA_SUCCESS);  // the legacy stream
  ASSERT_EQ(SP(cuLaunchHostFunc)(CU_STREAM_LEGACY, wait_for_gate, &gate), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemFreeAsync)(used, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuStreamSynchronize)(CU_STREAM_PER_THREAD), CUDA_SUCCESS);  // nothing of the legacy stream's

  CUdeviceptr taken = 0;
  ASSERT_EQ(SP(cuMemAllocAsync)(&taken, 1 << 20, stream), CUDA_SUCCESS);

  EXPECT_NE(taken, used) << "the legacy stream's free was handed over while its work still ran";
  EXPECT_FALSE(gate.load()) << "the test waited for the legacy stream's work";
  opener.join();
  EXPECT_EQ(SP(cuStreamSynchronize)(CU_STREAM_LEGACY), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuMemFreeAsync)(taken, stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuMemFreeAsync)(warm, CU_STREAM_PER_THREAD), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuStreamSynchronize)(CU_STREAM_PER_THREAD), CUDA_SUCCESS);
}

TEST_F(AllocHooks, DefaultStreamsAllocateAndFree) {
  CUdeviceptr legacy = 0;
  CUdeviceptr per_thread = 0;

  EXPECT_EQ(SP(cuMemAllocAsync)(&legacy, 256, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(SP_AS(cuMemAllocAsync_ptsz, cuMemAllocAsync)(&per_thread, 256, nullptr), CUDA_SUCCESS);

  EXPECT_NE(legacy, 0u);
  EXPECT_NE(per_thread, 0u);
  EXPECT_EQ(SP(cuMemFreeAsync)(legacy, CU_STREAM_LEGACY), CUDA_SUCCESS);
  EXPECT_EQ(SP_AS(cuMemFreeAsync_ptsz, cuMemFreeAsync)(per_thread, nullptr), CUDA_SUCCESS);
}

}  // namespace
