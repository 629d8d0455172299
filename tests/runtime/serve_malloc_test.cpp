// STREAMPOOL_SERVE_MALLOC=1 through the runtime library (run with it and STREAMPOOL_LIMIT=64M, see
// CMakeLists.txt: disabled in the plain run): cudaMalloc, cudaMallocPitch and cudaFree reach the
// same served hooks as a preloaded cudart's calls do: served from a pool (streampool_limit_info's
// served_malloc), described as device memory, refused past the cap, cudaFree(nullptr) a success and
// a double free cudaErrorInvalidValue.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include "streampool/streampool.h"

namespace {

constexpr size_t kMiB = size_t{1} << 20;

std::uint64_t served() {
  streampool_device_limit info{};
  info.struct_size = sizeof info;
  EXPECT_EQ(streampool_limit_info(0, &info), 0);
  return info.served_malloc;
}

TEST(RuntimeServeMalloc, DISABLED_MallocPitchAndFreeAreServed) {
  ASSERT_EQ(cudaFree(nullptr), cudaSuccess);
  size_t free_bytes = 0, total_bytes = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total_bytes), cudaSuccess);
  EXPECT_EQ(total_bytes, 64 * kMiB);

  void* plain = nullptr;
  ASSERT_EQ(cudaMalloc(&plain, 24 * kMiB), cudaSuccess);
  EXPECT_EQ(served(), 24 * kMiB);
  cudaPointerAttributes attributes{};
  ASSERT_EQ(cudaPointerGetAttributes(&attributes, plain), cudaSuccess);
  EXPECT_EQ(attributes.type, cudaMemoryTypeDevice);
  EXPECT_EQ(attributes.device, 0);

  void* pitched = nullptr;
  size_t pitch = 0;
  ASSERT_EQ(cudaMallocPitch(&pitched, &pitch, 100, 16), cudaSuccess);
  EXPECT_EQ(pitch, 512u);
  EXPECT_EQ(served(), 24 * kMiB + 512 * 16);

  void* refused = nullptr;
  EXPECT_EQ(cudaMalloc(&refused, 48 * kMiB), cudaErrorMemoryAllocation);
  (void)cudaGetLastError();
  ASSERT_EQ(cudaFree(plain), cudaSuccess);
  EXPECT_EQ(cudaFree(plain), cudaErrorInvalidValue);
  (void)cudaGetLastError();
  ASSERT_EQ(cudaFree(pitched), cudaSuccess);
  EXPECT_EQ(served(), 0u);
  ASSERT_EQ(cudaMalloc(&plain, 48 * kMiB), cudaSuccess) << "the cap is free again";
  ASSERT_EQ(cudaFree(plain), cudaSuccess);
}

}  // namespace
