// cudaGetDriverEntryPoint hands out streampool's hooks for the allocator family; capture status is
// the driver's through the runtime.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>

namespace {

TEST(EntryPoint, DriverAllocationEntryIsServedByTheEngine) {
  void* function = nullptr;
  cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
  ASSERT_EQ(cudaGetDriverEntryPointByVersion("cuMemAllocAsync", &function, 13000, cudaEnableDefault, &status),
            cudaSuccess);
  ASSERT_EQ(status, cudaDriverEntryPointSuccess);
  ASSERT_NE(function, nullptr);
  ASSERT_EQ(cudaFree(nullptr), cudaSuccess);
  cudaMemPool_t pool = nullptr;
  ASSERT_EQ(cudaDeviceGetDefaultMemPool(&pool, 0), cudaSuccess);
  std::uint64_t before = 0;
  ASSERT_EQ(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &before), cudaSuccess);

  CUdeviceptr pointer = 0;
  ASSERT_EQ(reinterpret_cast<decltype(&cuMemAllocAsync)>(function)(&pointer, 8192, nullptr), CUDA_SUCCESS);

  std::uint64_t after = 0;
  ASSERT_EQ(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &after), cudaSuccess);
  EXPECT_EQ(after - before, 8192u);  // the fake driver has no pools: only the engine can have served it
  EXPECT_EQ(cudaFreeAsync(reinterpret_cast<void*>(pointer), nullptr), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

TEST(EntryPoint, UnknownSymbolIsReportedInTheStatus) {
  void* function = reinterpret_cast<void*>(1);
  cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSuccess;
  EXPECT_EQ(cudaGetDriverEntryPointByVersion("cuNoSuchThing", &function, 13000, cudaEnableDefault, &status),
            cudaSuccess);
  EXPECT_EQ(status, cudaDriverEntryPointSymbolNotFound);
  EXPECT_EQ(function, nullptr);
}

TEST(Capture, StreamIsCapturingBetweenBeginAndEnd) {
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  ASSERT_EQ(cudaStreamIsCapturing(stream, &status), cudaSuccess);
  EXPECT_EQ(status, cudaStreamCaptureStatusActive);

  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  ASSERT_EQ(cudaStreamIsCapturing(stream, &status), cudaSuccess);
  EXPECT_EQ(status, cudaStreamCaptureStatusNone);
  cudaGraphExec_t exec = nullptr;
  EXPECT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  EXPECT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

}  // namespace
