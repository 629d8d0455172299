// The pool family through the runtime: served by streampool's engine (the fake driver has no pools
// of its own: CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED is 0 there and its pool calls fail).
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>

namespace {

TEST(PoolFamily, MallocAsyncAndFreeAsyncServeFromTheEnginesDefaultPool) {
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  void* first = nullptr;
  ASSERT_EQ(cudaMallocAsync(&first, 1 << 20, stream), cudaSuccess);
  ASSERT_NE(first, nullptr);
  cudaMemPool_t pool = nullptr;
  ASSERT_EQ(cudaDeviceGetDefaultMemPool(&pool, 0), cudaSuccess);
  std::uint64_t used = 0;
  ASSERT_EQ(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used), cudaSuccess);
  EXPECT_EQ(used, 1u << 20);

  ASSERT_EQ(cudaFreeAsync(first, stream), cudaSuccess);
  void* second = nullptr;
  ASSERT_EQ(cudaMallocAsync(&second, 1 << 20, stream), cudaSuccess);

  EXPECT_EQ(second, first);  // same-stream reuse, in stream order
  EXPECT_EQ(cudaFreeAsync(second, stream), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

TEST(PoolFamily, CreatedPoolKeepsItsReleaseThresholdAndReportsUse) {
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 0;
  cudaMemPool_t pool = nullptr;
  ASSERT_EQ(cudaMemPoolCreate(&pool, &props), cudaSuccess);
  std::uint64_t threshold = 64ull << 20;
  ASSERT_EQ(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold), cudaSuccess);
  void* pointer = nullptr;
  ASSERT_EQ(cudaMallocFromPoolAsync(&pointer, 4096, pool, cudaStreamPerThread), cudaSuccess);

  std::uint64_t read_back = 0;
  std::uint64_t used = 0;
  EXPECT_EQ(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &read_back), cudaSuccess);
  EXPECT_EQ(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used), cudaSuccess);
  EXPECT_EQ(read_back, threshold);
  EXPECT_EQ(used, 4096u);
  EXPECT_EQ(cudaFreeAsync(pointer, cudaStreamPerThread), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(cudaStreamPerThread), cudaSuccess);
  EXPECT_EQ(cudaMemPoolDestroy(pool), cudaSuccess);
}

TEST(PoolFamily, PoolAttributeOfDeviceSaysPoolsAreSupported) {
  int supported = 0;
  EXPECT_EQ(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, 0), cudaSuccess);
  EXPECT_EQ(supported, 1);
}

TEST(PoolFamily, BadArgumentsAreCudartsErrors) {
  (void)cudaGetLastError();
  cudaMemPool_t pool = nullptr;
  EXPECT_EQ(cudaMallocAsync(nullptr, 16, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaDeviceGetDefaultMemPool(&pool, 99), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaMallocFromPoolAsync(reinterpret_cast<void**>(&pool), 16, nullptr, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
}

}  // namespace
