// Texture and surface objects' descriptions read back, mipmapped arrays and their levels, the tile
// layout and memory requirements of sparse and deferred-mapping arrays, and the argument checks of
// the external memory and semaphore functions (importing real external resources needs another
// API's handles: Vulkan, Direct3D, NvSciBuf; the driver's own checks run on the GPU's driver).
#include <vector>

#include "conformance.cuh"

namespace {

TEST(TextureQueries, LinearTextureReadsBackItsResourceAndTextureDescriptions) {
  constexpr std::size_t kCount = 256;
  float* values = nullptr;
  ASSERT_CUDA(cudaMalloc(&values, kCount * sizeof(float)));
  cudaResourceDesc resource{};
  resource.resType = cudaResourceTypeLinear;
  resource.res.linear.devPtr = values;
  resource.res.linear.desc = cudaCreateChannelDesc<float>();
  resource.res.linear.sizeInBytes = kCount * sizeof(float);
  cudaTextureDesc texture{};
  texture.addressMode[0] = cudaAddressModeClamp;
  texture.filterMode = cudaFilterModePoint;
  texture.readMode = cudaReadModeElementType;
  cudaTextureObject_t object = 0;
  ASSERT_CUDA(cudaCreateTextureObject(&object, &resource, &texture, nullptr));

  cudaResourceDesc seen{};
  ASSERT_CUDA(cudaGetTextureObjectResourceDesc(&seen, object));
  EXPECT_EQ(seen.resType, cudaResourceTypeLinear);
  EXPECT_EQ(seen.res.linear.devPtr, values);
  EXPECT_EQ(seen.res.linear.desc.x, 32);
  EXPECT_EQ(seen.res.linear.desc.f, cudaChannelFormatKindFloat);
  EXPECT_EQ(seen.res.linear.sizeInBytes, kCount * sizeof(float));
  cudaTextureDesc seen_texture{};
  ASSERT_CUDA(cudaGetTextureObjectTextureDesc(&seen_texture, object));
  EXPECT_EQ(seen_texture.addressMode[0], cudaAddressModeClamp);
  EXPECT_EQ(seen_texture.filterMode, cudaFilterModePoint);
  EXPECT_EQ(seen_texture.readMode, cudaReadModeElementType);
  EXPECT_EQ(seen_texture.normalizedCoords, 0);

  EXPECT_CUDA(cudaDestroyTextureObject(object));
  EXPECT_CUDA(cudaFree(values));
}

TEST(TextureQueries, ArrayTextureReadsBackTheArrayAndItsReadMode) {
  const cudaChannelFormatDesc desc = cudaCreateChannelDesc<uchar4>();
  cudaArray_t array = nullptr;
  ASSERT_CUDA(cudaMallocArray(&array, &desc, 16, 16));
  cudaResourceDesc resource{};
  resource.resType = cudaResourceTypeArray;
  resource.res.array.array = array;
  cudaTextureDesc texture{};
  texture.readMode = cudaReadModeNormalizedFloat;
  texture.normalizedCoords = 1;
  cudaTextureObject_t object = 0;
  ASSERT_CUDA(cudaCreateTextureObject(&object, &resource, &texture, nullptr));

  cudaResourceDesc seen{};
  ASSERT_CUDA(cudaGetTextureObjectResourceDesc(&seen, object));
  EXPECT_EQ(seen.resType, cudaResourceTypeArray);
  EXPECT_EQ(seen.res.array.array, array);
  cudaTextureDesc seen_texture{};
  ASSERT_CUDA(cudaGetTextureObjectTextureDesc(&seen_texture, object));
  EXPECT_EQ(seen_texture.readMode, cudaReadModeNormalizedFloat);
  EXPECT_EQ(seen_texture.normalizedCoords, 1);

  conformance::clear_last_error();
  EXPECT_EQ(cudaGetTextureObjectResourceDesc(nullptr, object), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_CUDA(cudaDestroyTextureObject(object));
  EXPECT_CUDA(cudaFreeArray(array));
}

TEST(ExternalResources, MissingDescriptionsAndOutputsAreInvalidValue) {
  cudaExternalMemoryHandleDesc memory{};
  memory.type = cudaExternalMemoryHandleTypeOpaqueFd;
  memory.handle.fd = -1;
  memory.size = 4096;
  cudaExternalMemory_t imported = nullptr;
  cudaExternalSemaphore_t semaphore = nullptr;
  cudaExternalMemoryBufferDesc buffer{};
  conformance::clear_last_error();

  EXPECT_EQ(cudaImportExternalMemory(nullptr, &memory), cudaErrorInvalidValue);
  EXPECT_EQ(cudaImportExternalMemory(&imported, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaImportExternalSemaphore(&semaphore, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaExternalMemoryGetMappedBuffer(nullptr, imported, &buffer), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
}

TEST(MipmappedArrays, MissingOutputsAreInvalidValue) {
  const cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
  cudaArray_t array = nullptr;
  ASSERT_CUDA(cudaMallocArray(&array, &desc, 8, 8));
  conformance::clear_last_error();

  EXPECT_EQ(cudaMallocMipmappedArray(nullptr, &desc, make_cudaExtent(8, 8, 0), 2, 0), cudaErrorInvalidValue);
  EXPECT_EQ(cudaArrayGetSparseProperties(nullptr, array), cudaErrorInvalidValue);
  EXPECT_EQ(cudaArrayGetMemoryRequirements(nullptr, array, 0), cudaErrorInvalidValue);
  EXPECT_EQ(cudaArrayGetPlane(nullptr, array, 0), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_CUDA(cudaFreeArray(array));
}

TEST(MipmappedArraysOnGpu, LevelsHalveAndATextureOverThemReadsBackTheMipmap) {
  const cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
  cudaMipmappedArray_t mipmap = nullptr;
  ASSERT_CUDA(cudaMallocMipmappedArray(&mipmap, &desc, make_cudaExtent(64, 64, 0), 4, 0));
  cudaArray_t level = nullptr;
  ASSERT_CUDA(cudaGetMipmappedArrayLevel(&level, mipmap, 2));
  cudaExtent extent{};
  ASSERT_CUDA(cudaArrayGetInfo(nullptr, &extent, nullptr, level));
  EXPECT_EQ(extent.width, 16u);
  EXPECT_EQ(extent.height, 16u);

  cudaResourceDesc resource{};
  resource.resType = cudaResourceTypeMipmappedArray;
  resource.res.mipmap.mipmap = mipmap;
  cudaTextureDesc texture{};
  texture.mipmapFilterMode = cudaFilterModeLinear;
  texture.maxMipmapLevelClamp = 3.0f;
  cudaTextureObject_t object = 0;
  ASSERT_CUDA(cudaCreateTextureObject(&object, &resource, &texture, nullptr));
  cudaResourceDesc seen{};
  ASSERT_CUDA(cudaGetTextureObjectResourceDesc(&seen, object));
  EXPECT_EQ(seen.resType, cudaResourceTypeMipmappedArray);
  EXPECT_EQ(seen.res.mipmap.mipmap, mipmap);

  EXPECT_CUDA(cudaDestroyTextureObject(object));
  EXPECT_CUDA(cudaFreeMipmappedArray(mipmap));
}

TEST(MipmappedArraysOnGpu, SparseAndDeferredMappingArraysAnswerTheirLayoutAndNeeds) {
  const cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
  cudaArray_t sparse = nullptr, deferred = nullptr;
  ASSERT_CUDA(cudaMallocArray(&sparse, &desc, 1024, 1024, cudaArraySparse));
  ASSERT_CUDA(cudaMallocArray(&deferred, &desc, 1024, 1024, cudaArrayDeferredMapping));

  cudaArraySparseProperties properties{};
  ASSERT_CUDA(cudaArrayGetSparseProperties(&properties, sparse));
  EXPECT_GT(properties.tileExtent.width, 0u);
  EXPECT_GT(properties.tileExtent.height, 0u);
  cudaArrayMemoryRequirements requirements{};
  ASSERT_CUDA(cudaArrayGetMemoryRequirements(&requirements, deferred, 0));
  EXPECT_GE(requirements.size, 1024u * 1024u * sizeof(float));
  EXPECT_GT(requirements.alignment, 0u);

  EXPECT_CUDA(cudaFreeArray(sparse));
  EXPECT_CUDA(cudaFreeArray(deferred));
}

TEST(TextureQueriesOnGpu, SurfaceObjectReadsBackItsArray) {
  const cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
  cudaArray_t array = nullptr;
  ASSERT_CUDA(cudaMallocArray(&array, &desc, 32, 32, cudaArraySurfaceLoadStore));
  cudaResourceDesc resource{};
  resource.resType = cudaResourceTypeArray;
  resource.res.array.array = array;
  cudaSurfaceObject_t surface = 0;
  ASSERT_CUDA(cudaCreateSurfaceObject(&surface, &resource));

  cudaResourceDesc seen{};
  ASSERT_CUDA(cudaGetSurfaceObjectResourceDesc(&seen, surface));
  EXPECT_EQ(seen.resType, cudaResourceTypeArray);
  EXPECT_EQ(seen.res.array.array, array);
  EXPECT_CUDA(cudaDestroySurfaceObject(surface));
  EXPECT_CUDA(cudaFreeArray(array));
}

}  // namespace
