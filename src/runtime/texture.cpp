// Texture objects over linear and pitched memory (cudaCreateTextureObject with a linear or pitch2D
// resource), channel descriptors, and the resource a texture object reads. The runtime describes a
// texel by its channels' bit widths and kind; the driver by a format and a channel count. Arrays
// (array and mipmapped-array resources, resource views) are not there: the runtime has no arrays,
// so those are cudaErrorInvalidValue.
#include <cstring>

#include "api.hpp"

namespace streampool::runtime {
namespace {

static_assert(static_cast<int>(cudaAddressModeBorder) == static_cast<int>(CU_TR_ADDRESS_MODE_BORDER));
static_assert(static_cast<int>(cudaFilterModeLinear) == static_cast<int>(CU_TR_FILTER_MODE_LINEAR));

struct DriverFormat {
  CUarray_format format;
  unsigned channels;
  bool integer;  // read as integers unless the runtime asks for normalised floats
};

// The driver's format for equal-width channels, x first, of a signed, unsigned or float kind.
cudaError_t driver_format(const cudaChannelFormatDesc& desc, DriverFormat* out) noexcept {
  const int widths[4] = {desc.x, desc.y, desc.z, desc.w};
  unsigned channels = 0;
  while (channels < 4 && widths[channels] != 0) ++channels;
  if (channels == 0 || channels == 3) return cudaErrorInvalidChannelDescriptor;
  for (unsigned index = 0; index < 4; ++index) {
    const bool used = index < channels;
    if ((used && widths[index] != desc.x) || (!used && widths[index] != 0)) return cudaErrorInvalidChannelDescriptor;
  }
  out->channels = channels;
  out->integer = desc.f != cudaChannelFormatKindFloat;
  switch (desc.f) {
    case cudaChannelFormatKindSigned:
      if (desc.x == 8) out->format = CU_AD_FORMAT_SIGNED_INT8;
      else if (desc.x == 16) out->format = CU_AD_FORMAT_SIGNED_INT16;
      else if (desc.x == 32) out->format = CU_AD_FORMAT_SIGNED_INT32;
      else return cudaErrorInvalidChannelDescriptor;
      return cudaSuccess;
    case cudaChannelFormatKindUnsigned:
      if (desc.x == 8) out->format = CU_AD_FORMAT_UNSIGNED_INT8;
      else if (desc.x == 16) out->format = CU_AD_FORMAT_UNSIGNED_INT16;
      else if (desc.x == 32) out->format = CU_AD_FORMAT_UNSIGNED_INT32;
      else return cudaErrorInvalidChannelDescriptor;
      return cudaSuccess;
    case cudaChannelFormatKindFloat:
      if (desc.x == 16) out->format = CU_AD_FORMAT_HALF;
      else if (desc.x == 32) out->format = CU_AD_FORMAT_FLOAT;
      else return cudaErrorInvalidChannelDescriptor;
      return cudaSuccess;
    default:
      return cudaErrorInvalidChannelDescriptor;  // normalised and block-compressed kinds live in arrays
  }
}

cudaError_t driver_resource(const cudaResourceDesc& resource, CUDA_RESOURCE_DESC* out, bool* integer) noexcept {
  *out = CUDA_RESOURCE_DESC{};
  DriverFormat format{};
  switch (resource.resType) {
    case cudaResourceTypeLinear:
      if (const cudaError_t error = driver_format(resource.res.linear.desc, &format); error != cudaSuccess) return error;
      out->resType = CU_RESOURCE_TYPE_LINEAR;
      out->res.linear.devPtr = reinterpret_cast<CUdeviceptr>(resource.res.linear.devPtr);
      out->res.linear.format = format.format;
      out->res.linear.numChannels = format.channels;
      out->res.linear.sizeInBytes = resource.res.linear.sizeInBytes;
      break;
    case cudaResourceTypePitch2D:
      if (const cudaError_t error = driver_format(resource.res.pitch2D.desc, &format); error != cudaSuccess) return error;
      out->resType = CU_RESOURCE_TYPE_PITCH2D;
      out->res.pitch2D.devPtr = reinterpret_cast<CUdeviceptr>(resource.res.pitch2D.devPtr);
      out->res.pitch2D.format = format.format;
      out->res.pitch2D.numChannels = format.channels;
      out->res.pitch2D.width = resource.res.pitch2D.width;
      out->res.pitch2D.height = resource.res.pitch2D.height;
      out->res.pitch2D.pitchInBytes = resource.res.pitch2D.pitchInBytes;
      break;
    default:
      return cudaErrorInvalidValue;
  }
  out->flags = resource.flags;
  *integer = format.integer;
  return cudaSuccess;
}

CUDA_TEXTURE_DESC driver_texture(const cudaTextureDesc& texture, bool integer) noexcept {
  CUDA_TEXTURE_DESC out{};
  for (int dimension = 0; dimension < 3; ++dimension) {
    out.addressMode[dimension] = static_cast<CUaddress_mode>(texture.addressMode[dimension]);
  }
  out.filterMode = static_cast<CUfilter_mode>(texture.filterMode);
  // The driver promotes integer texels to normalised floats unless told to read them as integers.
  if (integer && texture.readMode == cudaReadModeElementType) out.flags |= CU_TRSF_READ_AS_INTEGER;
  if (texture.normalizedCoords != 0) out.flags |= CU_TRSF_NORMALIZED_COORDINATES;
  if (texture.sRGB != 0) out.flags |= CU_TRSF_SRGB;
  if (texture.disableTrilinearOptimization != 0) out.flags |= CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION;
  if (texture.seamlessCubemap != 0) out.flags |= CU_TRSF_SEAMLESS_CUBEMAP;
  out.maxAnisotropy = texture.maxAnisotropy;
  out.mipmapFilterMode = static_cast<CUfilter_mode>(texture.mipmapFilterMode);
  out.mipmapLevelBias = texture.mipmapLevelBias;
  out.minMipmapLevelClamp = texture.minMipmapLevelClamp;
  out.maxMipmapLevelClamp = texture.maxMipmapLevelClamp;
  std::memcpy(out.borderColor, texture.borderColor, sizeof(out.borderColor));
  return out;
}

}  // namespace
}  // namespace streampool::runtime

using namespace streampool::runtime;

CUDART_EXPORT cudaChannelFormatDesc cudaCreateChannelDesc(int x, int y, int z, int w, cudaChannelFormatKind f) {
  return cudaChannelFormatDesc{x, y, z, w, f};
}

CUDART_EXPORT cudaError_t cudaCreateTextureObject(cudaTextureObject_t* pTexObject, const cudaResourceDesc* pResDesc,
                                                  const cudaTextureDesc* pTexDesc,
                                                  const cudaResourceViewDesc* pResViewDesc) {
  if (pTexObject == nullptr || pResDesc == nullptr || pTexDesc == nullptr) return finish(cudaErrorInvalidValue);
  if (pResViewDesc != nullptr) return finish(cudaErrorInvalidValue);  // views are of arrays
  CUDA_RESOURCE_DESC resource;
  bool integer = false;
  if (const cudaError_t error = driver_resource(*pResDesc, &resource, &integer); error != cudaSuccess) {
    return finish(error);
  }
  const CUDA_TEXTURE_DESC texture = driver_texture(*pTexDesc, integer);
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  CUtexObject object = 0;
  const CUresult result = cuTexObjectCreate(&object, &resource, &texture, nullptr);
  if (result == CUDA_SUCCESS) *pTexObject = object;
  return finish(result);
}

CUDART_EXPORT cudaError_t cudaDestroyTextureObject(cudaTextureObject_t texObject) {
  STREAMPOOL_WITH_CONTEXT(cuTexObjectDestroy(texObject));
}
