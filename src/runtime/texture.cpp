// Texture objects over linear memory, pitched memory, arrays and mipmapped arrays, surface objects
// over arrays, their descriptions read back, and channel descriptors. Texel formats translate
// through channel_format.hpp. Resource views at creation are not there (cudaErrorInvalidValue); a
// texture object's view is read back as the driver has it.
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
    case cudaResourceTypeMipmappedArray: {
      // The texels' kind is that of the first level.
      auto* mipmap = reinterpret_cast<CUmipmappedArray>(resource.res.mipmap.mipmap);
      if (mipmap == nullptr) return cudaErrorInvalidValue;
      CUarray level = nullptr;
      CUDA_ARRAY3D_DESCRIPTOR descriptor{};
      if (cuMipmappedArrayGetLevel(&level, mipmap, 0) != CUDA_SUCCESS ||
          cuArray3DGetDescriptor(&descriptor, level) != CUDA_SUCCESS) {
        return cudaErrorInvalidResourceHandle;
      }
      format.integer = runtime_format(descriptor.Format, descriptor.NumChannels).f != cudaChannelFormatKindFloat;
      out->resType = CU_RESOURCE_TYPE_MIPMAPPED_ARRAY;
      out->res.mipmap.hMipmappedArray = mipmap;
      break;
    }
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

// The driver's resource description back as the runtime's.
cudaError_t runtime_resource(const CUDA_RESOURCE_DESC& resource, cudaResourceDesc* out) noexcept {
  *out = cudaResourceDesc{};
  switch (resource.resType) {
    case CU_RESOURCE_TYPE_ARRAY:
      out->resType = cudaResourceTypeArray;
      out->res.array.array = reinterpret_cast<cudaArray_t>(resource.res.array.hArray);
      break;
    case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY:
      out->resType = cudaResourceTypeMipmappedArray;
      out->res.mipmap.mipmap = reinterpret_cast<cudaMipmappedArray_t>(resource.res.mipmap.hMipmappedArray);
      break;
    case CU_RESOURCE_TYPE_LINEAR:
      out->resType = cudaResourceTypeLinear;
      out->res.linear.devPtr = reinterpret_cast<void*>(resource.res.linear.devPtr);
      out->res.linear.desc = runtime_format(resource.res.linear.format, resource.res.linear.numChannels);
      out->res.linear.sizeInBytes = resource.res.linear.sizeInBytes;
      break;
    case CU_RESOURCE_TYPE_PITCH2D:
      out->resType = cudaResourceTypePitch2D;
      out->res.pitch2D.devPtr = reinterpret_cast<void*>(resource.res.pitch2D.devPtr);
      out->res.pitch2D.desc = runtime_format(resource.res.pitch2D.format, resource.res.pitch2D.numChannels);
      out->res.pitch2D.width = resource.res.pitch2D.width;
      out->res.pitch2D.height = resource.res.pitch2D.height;
      out->res.pitch2D.pitchInBytes = resource.res.pitch2D.pitchInBytes;
      break;
    default:
      return cudaErrorInvalidValue;
  }
  out->flags = resource.flags;
  return cudaSuccess;
}

// The driver's texture description back as the runtime's: integer texels the driver reads as
// integers are read in their element type, others as normalised floats; float texels in theirs.
cudaTextureDesc runtime_texture(const CUDA_TEXTURE_DESC& texture, bool integer) noexcept {
  cudaTextureDesc out{};
  for (int dimension = 0; dimension < 3; ++dimension) {
    out.addressMode[dimension] = static_cast<cudaTextureAddressMode>(texture.addressMode[dimension]);
  }
  out.filterMode = static_cast<cudaTextureFilterMode>(texture.filterMode);
  out.readMode = integer && (texture.flags & CU_TRSF_READ_AS_INTEGER) == 0 ? cudaReadModeNormalizedFloat
                                                                          : cudaReadModeElementType;
  out.normalizedCoords = (texture.flags & CU_TRSF_NORMALIZED_COORDINATES) != 0;
  out.sRGB = (texture.flags & CU_TRSF_SRGB) != 0;
  out.disableTrilinearOptimization = (texture.flags & CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION) != 0;
  out.seamlessCubemap = (texture.flags & CU_TRSF_SEAMLESS_CUBEMAP) != 0;
  out.maxAnisotropy = texture.maxAnisotropy;
  out.mipmapFilterMode = static_cast<cudaTextureFilterMode>(texture.mipmapFilterMode);
  out.mipmapLevelBias = texture.mipmapLevelBias;
  out.minMipmapLevelClamp = texture.minMipmapLevelClamp;
  out.maxMipmapLevelClamp = texture.maxMipmapLevelClamp;
  std::memcpy(out.borderColor, texture.borderColor, sizeof(out.borderColor));
  return out;
}

}  // namespace
}  // namespace streampool::runtime

using namespace streampool::runtime;

CUDART_EXPORT cudaError_t cudaGetTextureObjectResourceDesc(cudaResourceDesc* pResDesc, cudaTextureObject_t texObject) {
  if (pResDesc == nullptr) return finish(cudaErrorInvalidValue);
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  CUDA_RESOURCE_DESC resource{};
  if (const CUresult result = cuTexObjectGetResourceDesc(&resource, texObject); result != CUDA_SUCCESS) {
    return finish(result);
  }
  return finish(runtime_resource(resource, pResDesc));
}

CUDART_EXPORT cudaError_t cudaGetTextureObjectTextureDesc(cudaTextureDesc* pTexDesc, cudaTextureObject_t texObject) {
  if (pTexDesc == nullptr) return finish(cudaErrorInvalidValue);
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  CUDA_RESOURCE_DESC resource{};
  CUDA_TEXTURE_DESC texture{};
  if (const CUresult result = cuTexObjectGetResourceDesc(&resource, texObject); result != CUDA_SUCCESS) {
    return finish(result);
  }
  if (const CUresult result = cuTexObjectGetTextureDesc(&texture, texObject); result != CUDA_SUCCESS) {
    return finish(result);
  }
  cudaResourceDesc runtime{};
  bool integer = false;
  if (runtime_resource(resource, &runtime) == cudaSuccess) {
    CUDA_RESOURCE_DESC checked;
    if (driver_resource(runtime, &checked, &integer) != cudaSuccess) integer = false;
  }
  *pTexDesc = runtime_texture(texture, integer);
  return cudaSuccess;
}

CUDART_EXPORT cudaError_t cudaGetTextureObjectResourceViewDesc(cudaResourceViewDesc* pResViewDesc,
                                                               cudaTextureObject_t texObject) {
  if (pResViewDesc == nullptr) return finish(cudaErrorInvalidValue);
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  CUDA_RESOURCE_VIEW_DESC view{};
  if (const CUresult result = cuTexObjectGetResourceViewDesc(&view, texObject); result != CUDA_SUCCESS) {
    return finish(result);
  }
  static_assert(static_cast<int>(cudaResViewFormatUnsignedBlockCompressed7) ==
                static_cast<int>(CU_RES_VIEW_FORMAT_UNSIGNED_BC7));
  *pResViewDesc = cudaResourceViewDesc{};
  pResViewDesc->format = static_cast<cudaResourceViewFormat>(view.format);
  pResViewDesc->width = view.width;
  pResViewDesc->height = view.height;
  pResViewDesc->depth = view.depth;
  pResViewDesc->firstMipmapLevel = view.firstMipmapLevel;
  pResViewDesc->lastMipmapLevel = view.lastMipmapLevel;
  pResViewDesc->firstLayer = view.firstLayer;
  pResViewDesc->lastLayer = view.lastLayer;
  return cudaSuccess;
}

CUDART_EXPORT cudaError_t cudaGetSurfaceObjectResourceDesc(cudaResourceDesc* pResDesc, cudaSurfaceObject_t surfObject) {
  if (pResDesc == nullptr) return finish(cudaErrorInvalidValue);
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  CUDA_RESOURCE_DESC resource{};
  if (const CUresult result = cuSurfObjectGetResourceDesc(&resource, surfObject); result != CUDA_SUCCESS) {
    return finish(result);
  }
  return finish(runtime_resource(resource, pResDesc));
}

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
