// Texture objects over pitched and linear memory: the runtime's channel descriptor becomes the
// driver's format and channel count, its read mode and coordinates the driver's flags (asked back
// from the driver), and what needs arrays or an odd channel layout is the runtime's error.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

namespace {

using GetResource = CUresult (*)(CUDA_RESOURCE_DESC*, CUtexObject);
using GetTexture = CUresult (*)(CUDA_TEXTURE_DESC*, CUtexObject);

void* driver() { return dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD); }

class Textures : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cudaMallocPitch(&memory, &pitch, 64 * sizeof(float), 8), cudaSuccess);
    ASSERT_NE(driver(), nullptr);
    get_resource = reinterpret_cast<GetResource>(dlsym(driver(), "cuTexObjectGetResourceDesc"));
    get_texture = reinterpret_cast<GetTexture>(dlsym(driver(), "cuTexObjectGetTextureDesc"));
    ASSERT_NE(get_resource, nullptr);
    ASSERT_NE(get_texture, nullptr);
  }
  void TearDown() override { EXPECT_EQ(cudaFree(memory), cudaSuccess); }

  void* memory = nullptr;
  std::size_t pitch = 0;
  GetResource get_resource = nullptr;
  GetTexture get_texture = nullptr;
};

TEST(ChannelDesc, HoldsTheWidthsAndTheKind) {
  const cudaChannelFormatDesc desc = cudaCreateChannelDesc(8, 8, 0, 0, cudaChannelFormatKindUnsigned);

  EXPECT_EQ(desc.x, 8);
  EXPECT_EQ(desc.y, 8);
  EXPECT_EQ(desc.z, 0);
  EXPECT_EQ(desc.f, cudaChannelFormatKindUnsigned);
}

TEST_F(Textures, PitchedFloatTextureKeepsItsShapeModesAndCoordinates) {
  cudaResourceDesc resource{};
  resource.resType = cudaResourceTypePitch2D;
  resource.res.pitch2D.devPtr = memory;
  resource.res.pitch2D.desc = cudaCreateChannelDesc(32, 0, 0, 0, cudaChannelFormatKindFloat);
  resource.res.pitch2D.width = 64;
  resource.res.pitch2D.height = 8;
  resource.res.pitch2D.pitchInBytes = pitch;
  cudaTextureDesc texture{};
  texture.normalizedCoords = 1;
  texture.filterMode = cudaFilterModeLinear;
  texture.addressMode[0] = cudaAddressModeMirror;
  texture.addressMode[1] = cudaAddressModeClamp;
  texture.readMode = cudaReadModeElementType;
  cudaTextureObject_t object = 0;

  ASSERT_EQ(cudaCreateTextureObject(&object, &resource, &texture, nullptr), cudaSuccess);
  CUDA_RESOURCE_DESC asked{};
  CUDA_TEXTURE_DESC modes{};
  ASSERT_EQ(get_resource(&asked, object), CUDA_SUCCESS);
  ASSERT_EQ(get_texture(&modes, object), CUDA_SUCCESS);

  EXPECT_EQ(asked.resType, CU_RESOURCE_TYPE_PITCH2D);
  EXPECT_EQ(asked.res.pitch2D.devPtr, reinterpret_cast<CUdeviceptr>(memory));
  EXPECT_EQ(asked.res.pitch2D.format, CU_AD_FORMAT_FLOAT);
  EXPECT_EQ(asked.res.pitch2D.numChannels, 1u);
  EXPECT_EQ(asked.res.pitch2D.pitchInBytes, pitch);
  EXPECT_EQ(modes.addressMode[0], CU_TR_ADDRESS_MODE_MIRROR);
  EXPECT_EQ(modes.addressMode[1], CU_TR_ADDRESS_MODE_CLAMP);
  EXPECT_EQ(modes.filterMode, CU_TR_FILTER_MODE_LINEAR);
  EXPECT_EQ(modes.flags, static_cast<unsigned>(CU_TRSF_NORMALIZED_COORDINATES));  // floats: no integer flag
  EXPECT_EQ(cudaDestroyTextureObject(object), cudaSuccess);
}

TEST_F(Textures, IntegerTexelsAreReadAsIntegersOnlyInElementTypeMode) {
  cudaResourceDesc resource{};
  resource.resType = cudaResourceTypeLinear;
  resource.res.linear.devPtr = memory;
  resource.res.linear.desc = cudaCreateChannelDesc(8, 8, 0, 0, cudaChannelFormatKindUnsigned);
  resource.res.linear.sizeInBytes = 256;
  cudaTextureDesc element{};
  element.readMode = cudaReadModeElementType;
  cudaTextureDesc normalised{};
  normalised.readMode = cudaReadModeNormalizedFloat;
  cudaTextureObject_t as_integers = 0;
  cudaTextureObject_t as_floats = 0;

  ASSERT_EQ(cudaCreateTextureObject(&as_integers, &resource, &element, nullptr), cudaSuccess);
  ASSERT_EQ(cudaCreateTextureObject(&as_floats, &resource, &normalised, nullptr), cudaSuccess);
  CUDA_RESOURCE_DESC asked{};
  CUDA_TEXTURE_DESC integer_modes{};
  CUDA_TEXTURE_DESC float_modes{};
  ASSERT_EQ(get_resource(&asked, as_integers), CUDA_SUCCESS);
  ASSERT_EQ(get_texture(&integer_modes, as_integers), CUDA_SUCCESS);
  ASSERT_EQ(get_texture(&float_modes, as_floats), CUDA_SUCCESS);

  EXPECT_EQ(asked.res.linear.format, CU_AD_FORMAT_UNSIGNED_INT8);
  EXPECT_EQ(asked.res.linear.numChannels, 2u);
  EXPECT_EQ(integer_modes.flags & CU_TRSF_READ_AS_INTEGER, static_cast<unsigned>(CU_TRSF_READ_AS_INTEGER));
  EXPECT_EQ(float_modes.flags & CU_TRSF_READ_AS_INTEGER, 0u);
  EXPECT_EQ(cudaDestroyTextureObject(as_integers), cudaSuccess);
  EXPECT_EQ(cudaDestroyTextureObject(as_floats), cudaSuccess);
}

TEST_F(Textures, ArraysAndOddChannelLayoutsAreErrors) {
  cudaTextureDesc texture{};
  cudaTextureObject_t object = 0;
  cudaResourceDesc array{};
  array.resType = cudaResourceTypeArray;
  cudaResourceDesc mixed{};
  mixed.resType = cudaResourceTypeLinear;
  mixed.res.linear.devPtr = memory;
  mixed.res.linear.sizeInBytes = 256;
  mixed.res.linear.desc = cudaCreateChannelDesc(8, 16, 0, 0, cudaChannelFormatKindUnsigned);
  cudaResourceDesc three = mixed;
  three.res.linear.desc = cudaCreateChannelDesc(32, 32, 32, 0, cudaChannelFormatKindFloat);
  (void)cudaGetLastError();

  EXPECT_EQ(cudaCreateTextureObject(&object, &array, &texture, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaCreateTextureObject(&object, &mixed, &texture, nullptr), cudaErrorInvalidChannelDescriptor);
  EXPECT_EQ(cudaCreateTextureObject(&object, &three, &texture, nullptr), cudaErrorInvalidChannelDescriptor);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidChannelDescriptor);
}

}  // namespace
