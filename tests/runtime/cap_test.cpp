// The process cap through the runtime library (run with STREAMPOOL_LIMIT=64M, see CMakeLists.txt:
// disabled in the plain run): cudaMemGetInfo answers within the cap, cudaMalloc and cudaMallocAsync
// past it fail with cudaErrorMemoryAllocation, and what they hold is not free.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

namespace {

constexpr size_t kMiB = size_t{1} << 20;

TEST(RuntimeCap, DISABLED_MemGetInfoMallocAndMallocAsyncFollowTheCap) {
  size_t free_bytes = 0, total_bytes = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total_bytes), cudaSuccess);
  EXPECT_EQ(total_bytes, 64 * kMiB);
  EXPECT_EQ(free_bytes, 64 * kMiB);

  void* plain = nullptr;
  ASSERT_EQ(cudaMalloc(&plain, 24 * kMiB), cudaSuccess);
  ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total_bytes), cudaSuccess);
  EXPECT_EQ(free_bytes, 40 * kMiB);
  void* refused = nullptr;
  EXPECT_EQ(cudaMalloc(&refused, 48 * kMiB), cudaErrorMemoryAllocation);
  (void)cudaGetLastError();

  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  void* pooled = nullptr;
  EXPECT_EQ(cudaMallocAsync(&pooled, 48 * kMiB, stream), cudaErrorMemoryAllocation);
  (void)cudaGetLastError();
  ASSERT_EQ(cudaFree(plain), cudaSuccess);
  ASSERT_EQ(cudaMallocAsync(&pooled, 48 * kMiB, stream), cudaSuccess);
  ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total_bytes), cudaSuccess);
  EXPECT_LE(free_bytes, 16 * kMiB);
  ASSERT_EQ(cudaFreeAsync(pooled, stream), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  ASSERT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

}  // namespace
