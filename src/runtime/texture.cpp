// Texture objects over linear memory, pitched memory and arrays, surface objects over arrays, and
// channel descriptors. Texel formats translate through channel_format.hpp. Mipmapped arrays and
// resource views are not there (cudaErrorInvalidValue).
#include <cstring>

#include "api.hpp"
#include "channel_format.hpp"

namespace streampool::runtime {
namespace {

static_assert(static_cast<int>(cudaAddressModeBorder) == static_cast<int>(CU_TR_ADDRESS_MODE_BORDER));
static_assert(static_cast<int>(cudaFilterModeLinear) == static_cast<int>(CU_TR_FILTER_MODE_LINEAR));

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
    case cudaResourceTypeArray: {
      // The texels' kind is the array's: asked of the driver (the context must be current).
      CUDA_ARRAY3D_DESCRIPTOR descriptor{};
      const CUarray array = driver_array(resource.res.array.array);
      if (array == nullptr) return cudaErrorInvalidValue;
      if (cuArray3DGetDescriptor(&descriptor, array) != CUDA_SUCCESS) return cudaErrorInvalidResourceHandle;
      const cudaChannelFormatDesc desc = runtime_format(descriptor.Format, descriptor.NumChannels);
      format.integer = desc.f != cudaChannelFormatKindFloat;
      out->resType = CU_RESOURCE_TYPE_ARRAY;
      out->res.array.hArray = array;
      break;
    }
    default:
      return cudaErrorInvalidValue;  // mipmapped arrays: not there
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
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  CUDA_RESOURCE_DESC resource;
  bool integer = false;
  if (const cudaError_t error = driver_resource(*pResDesc, &resource, &integer); error != cudaSuccess) {
    return finish(error);
  }
  const CUDA_TEXTURE_DESC texture = driver_texture(*pTexDesc, integer);
  CUtexObject object = 0;
  const CUresult result = cuTexObjectCreate(&object, &resource, &texture, nullptr);
  if (result == CUDA_SUCCESS) *pTexObject = object;
  return finish(result);
}

CUDART_EXPORT cudaError_t cudaDestroyTextureObject(cudaTextureObject_t texObject) {
  STREAMPOOL_WITH_CONTEXT(cuTexObjectDestroy(texObject));
}

// Surface objects: over arrays made with cudaArraySurfaceLoadStore, nothing else.
CUDART_EXPORT cudaError_t cudaCreateSurfaceObject(cudaSurfaceObject_t* pSurfObject, const cudaResourceDesc* pResDesc) {
  if (pSurfObject == nullptr || pResDesc == nullptr) return finish(cudaErrorInvalidValue);
  if (pResDesc->resType != cudaResourceTypeArray) return finish(cudaErrorInvalidValue);
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  CUDA_RESOURCE_DESC resource;
  bool integer = false;
  if (const cudaError_t error = driver_resource(*pResDesc, &resource, &integer); error != cudaSuccess) {
    return finish(error);
  }
  CUsurfObject object = 0;
  const CUresult result = cuSurfObjectCreate(&object, &resource);
  if (result == CUDA_SUCCESS) *pSurfObject = object;
  return finish(result);
}

CUDART_EXPORT cudaError_t cudaDestroySurfaceObject(cudaSurfaceObject_t surfObject) {
  STREAMPOOL_WITH_CONTEXT(cuSurfObjectDestroy(surfObject));
}
