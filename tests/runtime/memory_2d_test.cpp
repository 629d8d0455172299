// Pitched memory: cudaMallocPitch pads rows as the driver does (at least to the texture pitch alignment), cudaMemcpy2D moves a
// rectangle row by row between pitched and packed memory (synchronously and in stream order), and
// cudaMemset2D fills only the rectangle, leaving the padding of each row alone.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace {

constexpr std::size_t kWidth = 10;  // bytes in a row
constexpr std::size_t kHeight = 4;

TEST(Memory2D, MallocPitchPadsRowsToTheDriversPitch) {
  int alignment = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&alignment, cudaDevAttrTexturePitchAlignment, 0), cudaSuccess);
  void* pointer = nullptr;
  std::size_t pitch = 0;

  ASSERT_EQ(cudaMallocPitch(&pointer, &pitch, kWidth, kHeight), cudaSuccess);

  EXPECT_NE(pointer, nullptr);
  EXPECT_GE(pitch, kWidth);
  EXPECT_EQ(pitch % static_cast<std::size_t>(alignment), 0u);
  EXPECT_EQ(pitch, 512u);  // the fake pads as NVIDIA's driver does on current GPUs
  EXPECT_EQ(cudaFree(pointer), cudaSuccess);
}

TEST(Memory2D, CopyThereAndBackKeepsTheRectangleAndSkipsThePadding) {
  void* device = nullptr;
  std::size_t pitch = 0;
  ASSERT_EQ(cudaMallocPitch(&device, &pitch, kWidth, kHeight), cudaSuccess);
  ASSERT_EQ(cudaMemset(device, 0x5a, pitch * kHeight), cudaSuccess);
  std::vector<unsigned char> packed(kWidth * kHeight);
  std::iota(packed.begin(), packed.end(), 1);

  ASSERT_EQ(cudaMemcpy2D(device, pitch, packed.data(), kWidth, kWidth, kHeight, cudaMemcpyHostToDevice), cudaSuccess);
  std::vector<unsigned char> pitched(pitch * kHeight);
  ASSERT_EQ(cudaMemcpy(pitched.data(), device, pitched.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  std::vector<unsigned char> back(kWidth * kHeight);
  ASSERT_EQ(cudaMemcpy2D(back.data(), kWidth, device, pitch, kWidth, kHeight, cudaMemcpyDeviceToHost), cudaSuccess);

  EXPECT_EQ(back, packed);
  EXPECT_EQ(pitched[pitch + 0], packed[kWidth]);  // row 1 starts one pitch in
  EXPECT_EQ(pitched[kWidth], 0x5a);               // padding untouched
  EXPECT_EQ(cudaFree(device), cudaSuccess);
}

TEST(Memory2D, AsyncCopyRunsInStreamOrder) {
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  void* device = nullptr;
  std::size_t pitch = 0;
  ASSERT_EQ(cudaMallocPitch(&device, &pitch, kWidth, kHeight), cudaSuccess);
  std::vector<unsigned char> packed(kWidth * kHeight, 7);
  std::vector<unsigned char> back(kWidth * kHeight, 0);

  ASSERT_EQ(cudaMemcpy2DAsync(device, pitch, packed.data(), kWidth, kWidth, kHeight, cudaMemcpyDefault, stream),
            cudaSuccess);
  ASSERT_EQ(cudaMemcpy2DAsync(back.data(), kWidth, device, pitch, kWidth, kHeight, cudaMemcpyDefault, stream),
            cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);

  EXPECT_EQ(back, packed);
  EXPECT_EQ(cudaFree(device), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

TEST(Memory2D, Memset2DFillsTheRectangleOnly) {
  void* device = nullptr;
  std::size_t pitch = 0;
  ASSERT_EQ(cudaMallocPitch(&device, &pitch, kWidth, kHeight), cudaSuccess);
  ASSERT_EQ(cudaMemset(device, 0, pitch * kHeight), cudaSuccess);

  ASSERT_EQ(cudaMemset2D(device, pitch, 0xab, kWidth - 2, kHeight - 1), cudaSuccess);
  ASSERT_EQ(cudaMemset2DAsync(static_cast<char*>(device) + pitch * (kHeight - 1), pitch, 0xcd, 1, 1, nullptr),
            cudaSuccess);
  std::vector<unsigned char> pitched(pitch * kHeight);
  ASSERT_EQ(cudaMemcpy(pitched.data(), device, pitched.size(), cudaMemcpyDeviceToHost), cudaSuccess);

  EXPECT_EQ(pitched[0], 0xab);
  EXPECT_EQ(pitched[pitch * 2 + kWidth - 3], 0xab);  // last byte of the last filled row
  EXPECT_EQ(pitched[kWidth - 2], 0);                 // right of the rectangle
  EXPECT_EQ(pitched[pitch * (kHeight - 1)], 0xcd);   // the async one, in the last row
  EXPECT_EQ(pitched[pitch * (kHeight - 1) + 1], 0);
  EXPECT_EQ(cudaFree(device), cudaSuccess);
}

TEST(Memory2D, BadArgumentsAreCudartsErrors) {
  void* device = nullptr;
  std::size_t pitch = 0;
  ASSERT_EQ(cudaMallocPitch(&device, &pitch, kWidth, kHeight), cudaSuccess);
  std::vector<unsigned char> host(kWidth * kHeight);
  (void)cudaGetLastError();

  EXPECT_EQ(cudaMemcpy2D(device, pitch, host.data(), kWidth - 1, kWidth, kHeight, cudaMemcpyHostToDevice),
            cudaErrorInvalidPitchValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidPitchValue);
  EXPECT_EQ(cudaMemcpy2D(device, pitch, host.data(), kWidth, kWidth, kHeight, static_cast<cudaMemcpyKind>(cudaMemcpyDefault + 1)),
            cudaErrorInvalidMemcpyDirection);
  EXPECT_EQ(cudaMemset2D(device, kWidth - 1, 0, kWidth, kHeight), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMallocPitch(nullptr, &pitch, kWidth, kHeight), cudaErrorInvalidValue);
  (void)cudaGetLastError();
  EXPECT_EQ(cudaFree(device), cudaSuccess);
}

TEST(Memory3D, CopiesABoxOutOfPitchedSlices) {
  // Source: 2 slices of 3 rows of 8 bytes (pitch 8); the box is 4 bytes x 2 rows x 2 slices at (2, 1, 0).
  std::vector<unsigned char> source(2 * 3 * 8);
  std::iota(source.begin(), source.end(), 0);
  void* device = nullptr;
  ASSERT_EQ(cudaMalloc(&device, 4 * 2 * 2), cudaSuccess);
  cudaMemcpy3DParms params{};
  params.srcPtr = cudaPitchedPtr{source.data(), 8, 8, 3};
  params.srcPos = cudaPos{2, 1, 0};
  params.dstPtr = cudaPitchedPtr{device, 4, 4, 2};
  params.extent = cudaExtent{4, 2, 2};
  params.kind = cudaMemcpyHostToDevice;

  ASSERT_EQ(cudaMemcpy3D(&params), cudaSuccess);
  std::vector<unsigned char> box(4 * 2 * 2);
  ASSERT_EQ(cudaMemcpy(box.data(), device, box.size(), cudaMemcpyDeviceToHost), cudaSuccess);

  EXPECT_EQ(box[0], 8 + 2);           // slice 0, row 1, byte 2
  EXPECT_EQ(box[4], 16 + 2);          // slice 0, row 2
  EXPECT_EQ(box[8], 24 + 8 + 2);      // slice 1, row 1
  EXPECT_EQ(box[15], 24 + 16 + 2 + 3);
  EXPECT_EQ(cudaFree(device), cudaSuccess);
}

}  // namespace
