// Peer copies between the devices' primary contexts, and the hints about managed memory (prefetch,
// advice, attach), which the driver checks: a range that is not managed memory is an invalid value.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <vector>

namespace {

TEST(PeerCopy, CopiesBetweenDevicesPrimaryContexts) {
  void* src = nullptr;
  void* dst = nullptr;
  ASSERT_EQ(cudaMalloc(&src, 64), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dst, 64), cudaSuccess);
  ASSERT_EQ(cudaMemset(src, 0x11, 64), cudaSuccess);
  ASSERT_EQ(cudaMemset(dst, 0, 64), cudaSuccess);

  ASSERT_EQ(cudaMemcpyPeer(dst, 0, src, 0, 32), cudaSuccess);
  ASSERT_EQ(cudaMemcpyPeerAsync(static_cast<char*>(dst) + 32, 0, src, 0, 16, nullptr), cudaSuccess);
  std::vector<unsigned char> back(64);
  ASSERT_EQ(cudaMemcpy(back.data(), dst, 64, cudaMemcpyDeviceToHost), cudaSuccess);

  EXPECT_EQ(back[0], 0x11);
  EXPECT_EQ(back[47], 0x11);
  EXPECT_EQ(back[48], 0);
  EXPECT_EQ(cudaFree(src), cudaSuccess);
  EXPECT_EQ(cudaFree(dst), cudaSuccess);
}

TEST(PeerCopy, UnknownDeviceIsInvalidDevice) {
  (void)cudaGetLastError();
  int byte = 0;
  EXPECT_EQ(cudaMemcpyPeer(&byte, 7, &byte, 0, 1), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidDevice);
}

TEST(ManagedHints, PrefetchAdviseAndAttachAcceptManagedMemory) {
  void* managed = nullptr;
  ASSERT_EQ(cudaMallocManaged(&managed, 4096, cudaMemAttachGlobal), cudaSuccess);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  const cudaMemLocation device{cudaMemLocationTypeDevice, 0};
  const cudaMemLocation host{cudaMemLocationTypeHost, 0};

  EXPECT_EQ(cudaStreamAttachMemAsync(stream, managed, 0, cudaMemAttachSingle), cudaSuccess);
  EXPECT_EQ(cudaMemAdvise(managed, 4096, cudaMemAdviseSetPreferredLocation, device), cudaSuccess);
  EXPECT_EQ(cudaMemPrefetchAsync(managed, 4096, device, 0, stream), cudaSuccess);
  EXPECT_EQ(cudaMemPrefetchAsync(managed, 4096, host, 0, stream), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);

  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
  EXPECT_EQ(cudaFree(managed), cudaSuccess);
}

TEST(ManagedHints, DeviceMemoryOrABadLocationIsInvalidValue) {
  void* plain = nullptr;
  void* managed = nullptr;
  ASSERT_EQ(cudaMalloc(&plain, 4096), cudaSuccess);
  ASSERT_EQ(cudaMallocManaged(&managed, 4096, cudaMemAttachGlobal), cudaSuccess);
  (void)cudaGetLastError();

  EXPECT_EQ(cudaMemPrefetchAsync(plain, 4096, cudaMemLocation{cudaMemLocationTypeDevice, 0}, 0, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemPrefetchAsync(managed, 4096, cudaMemLocation{cudaMemLocationTypeDevice, 9}, 0, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaStreamAttachMemAsync(nullptr, managed, 0, 0x7), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFree(plain), cudaSuccess);
  EXPECT_EQ(cudaFree(managed), cudaSuccess);
}

}  // namespace
