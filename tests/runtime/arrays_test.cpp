// CUDA arrays: allocated with the runtime's channel descriptor and flags, described back, filled and
// read with the 2D copies, the older 1D copies (row after row from an offset) and cudaMemcpy3D
// (positions and widths in elements), and read by texture and surface objects.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace {

constexpr std::size_t kWidth = 8;  // elements of a row
constexpr std::size_t kHeight = 4;

TEST(Arrays, AllocationIsDescribedBackWithItsFormatExtentAndFlags) {
  const cudaChannelFormatDesc desc = cudaCreateChannelDesc(16, 16, 0, 0, cudaChannelFormatKindSigned);
  cudaArray_t array = nullptr;
  ASSERT_EQ(cudaMallocArray(&array, &desc, kWidth, kHeight, cudaArraySurfaceLoadStore), cudaSuccess);
  cudaChannelFormatDesc back{};
  cudaExtent extent{};
  unsigned flags = 0;

  ASSERT_EQ(cudaArrayGetInfo(&back, &extent, &flags, array), cudaSuccess);

  EXPECT_EQ(back.x, 16);
  EXPECT_EQ(back.y, 16);
  EXPECT_EQ(back.z, 0);
  EXPECT_EQ(back.f, cudaChannelFormatKindSigned);
  EXPECT_EQ(extent.width, kWidth);
  EXPECT_EQ(extent.height, kHeight);
  EXPECT_EQ(flags, static_cast<unsigned>(cudaArraySurfaceLoadStore));
  EXPECT_EQ(cudaFreeArray(array), cudaSuccess);
}

TEST(Arrays, TwoDimensionalCopiesInAndOutKeepTheRectangle) {
  const cudaChannelFormatDesc desc = cudaCreateChannelDesc(32, 0, 0, 0, cudaChannelFormatKindFloat);
  cudaArray_t array = nullptr;
  ASSERT_EQ(cudaMallocArray(&array, &desc, kWidth, kHeight), cudaSuccess);
  std::vector<float> source(kWidth * kHeight);
  std::iota(source.begin(), source.end(), 1.0f);
  std::vector<float> corner(2 * 2, 0.0f);

  ASSERT_EQ(cudaMemcpy2DToArray(array, 0, 0, source.data(), kWidth * sizeof(float), kWidth * sizeof(float), kHeight,
                                cudaMemcpyHostToDevice),
            cudaSuccess);
  // The 2x2 block at element (3, 1): offsets and widths are in bytes.
  ASSERT_EQ(cudaMemcpy2DFromArray(corner.data(), 2 * sizeof(float), array, 3 * sizeof(float), 1, 2 * sizeof(float), 2,
                                  cudaMemcpyDeviceToHost),
            cudaSuccess);

  EXPECT_EQ(corner, (std::vector<float>{source[kWidth + 3], source[kWidth + 4], source[2 * kWidth + 3],
                                        source[2 * kWidth + 4]}));
  EXPECT_EQ(cudaFreeArray(array), cudaSuccess);
}

// Deprecated in cuda_runtime_api.h, and still called by the samples: their behaviour is what is tested.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
TEST(Arrays, OneDimensionalCopiesRunOnAcrossRows) {
  const cudaChannelFormatDesc desc = cudaCreateChannelDesc(8, 0, 0, 0, cudaChannelFormatKindUnsigned);
  cudaArray_t array = nullptr;
  ASSERT_EQ(cudaMallocArray(&array, &desc, kWidth, kHeight), cudaSuccess);
  std::vector<unsigned char> zeros(kWidth * kHeight, 0);
  ASSERT_EQ(cudaMemcpyToArray(array, 0, 0, zeros.data(), zeros.size(), cudaMemcpyHostToDevice), cudaSuccess);
  std::vector<unsigned char> run(kWidth + 3);  // from (6, 0): 2 bytes of row 0, all of row 1, 1 of row 2
  std::iota(run.begin(), run.end(), 1);

  ASSERT_EQ(cudaMemcpyToArray(array, 6, 0, run.data(), run.size(), cudaMemcpyHostToDevice), cudaSuccess);
  std::vector<unsigned char> whole(kWidth * kHeight);
  ASSERT_EQ(cudaMemcpyFromArray(whole.data(), array, 0, 0, whole.size(), cudaMemcpyDeviceToHost), cudaSuccess);

  EXPECT_EQ(whole[5], 0);
  EXPECT_EQ(whole[6], 1);
  EXPECT_EQ(whole[kWidth], 3);          // row 1 starts with the third byte
  EXPECT_EQ(whole[2 * kWidth], kWidth + 3);  // the last byte, first of row 2
  EXPECT_EQ(whole[2 * kWidth + 1], 0);
  EXPECT_EQ(cudaFreeArray(array), cudaSuccess);
}
#pragma GCC diagnostic pop

TEST(Arrays, Copy3DIntoALayeredArrayCountsElements) {
  const cudaChannelFormatDesc desc = cudaCreateChannelDesc(32, 0, 0, 0, cudaChannelFormatKindFloat);
  cudaArray_t array = nullptr;
  ASSERT_EQ(cudaMalloc3DArray(&array, &desc, cudaExtent{kWidth, kHeight, 2}, cudaArrayLayered), cudaSuccess);
  std::vector<float> layers(kWidth * kHeight * 2);
  std::iota(layers.begin(), layers.end(), 0.0f);
  cudaMemcpy3DParms in{};
  in.srcPtr = cudaPitchedPtr{layers.data(), kWidth * sizeof(float), kWidth, kHeight};
  in.dstArray = array;
  in.extent = cudaExtent{kWidth, kHeight, 2};
  in.kind = cudaMemcpyHostToDevice;
  std::vector<float> row(kWidth);
  cudaMemcpy3DParms out{};
  out.srcArray = array;
  out.srcPos = cudaPos{0, 2, 1};  // layer 1, row 2
  out.dstPtr = cudaPitchedPtr{row.data(), kWidth * sizeof(float), kWidth, 1};
  out.extent = cudaExtent{kWidth, 1, 1};
  out.kind = cudaMemcpyDeviceToHost;

  ASSERT_EQ(cudaMemcpy3D(&in), cudaSuccess);
  ASSERT_EQ(cudaMemcpy3D(&out), cudaSuccess);

  EXPECT_EQ(row.front(), layers[kWidth * kHeight + 2 * kWidth]);
  EXPECT_EQ(row.back(), layers[kWidth * kHeight + 3 * kWidth - 1]);
  EXPECT_EQ(cudaFreeArray(array), cudaSuccess);
}

TEST(Arrays, TextureAndSurfaceObjectsTakeAnArray) {
  const cudaChannelFormatDesc desc = cudaCreateChannelDesc(8, 8, 8, 8, cudaChannelFormatKindUnsigned);
  cudaArray_t array = nullptr;
  ASSERT_EQ(cudaMallocArray(&array, &desc, kWidth, kHeight, cudaArraySurfaceLoadStore), cudaSuccess);
  cudaResourceDesc resource{};
  resource.resType = cudaResourceTypeArray;
  resource.res.array.array = array;
  cudaTextureDesc texture{};
  texture.readMode = cudaReadModeNormalizedFloat;
  cudaTextureObject_t texture_object = 0;
  cudaSurfaceObject_t surface_object = 0;

  EXPECT_EQ(cudaCreateTextureObject(&texture_object, &resource, &texture, nullptr), cudaSuccess);
  EXPECT_EQ(cudaCreateSurfaceObject(&surface_object, &resource), cudaSuccess);

  EXPECT_EQ(cudaDestroyTextureObject(texture_object), cudaSuccess);
  EXPECT_EQ(cudaDestroySurfaceObject(surface_object), cudaSuccess);
  EXPECT_EQ(cudaFreeArray(array), cudaSuccess);
}

TEST(Arrays, BadDescriptorsAndUnknownArraysAreCudartsErrors) {
  const cudaChannelFormatDesc odd = cudaCreateChannelDesc(8, 8, 8, 0, cudaChannelFormatKindUnsigned);
  cudaArray_t array = nullptr;
  (void)cudaGetLastError();

  EXPECT_EQ(cudaMallocArray(&array, &odd, kWidth, kHeight), cudaErrorInvalidChannelDescriptor);
  EXPECT_EQ(cudaMemcpy2DToArray(nullptr, 0, 0, &array, 8, 8, 1, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFreeArray(nullptr), cudaSuccess);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
}

}  // namespace
