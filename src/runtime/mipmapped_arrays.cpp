// Mipmapped arrays (a chain of levels, each a CUDA array), the planes of multi-planar arrays, and
// what sparse and deferred-mapping arrays need: their tile layout and their memory requirements on a
// device. A runtime mipmapped array is the driver's CUmipmappedArray; flags are the driver's.
#include <cstddef>

#include "api.hpp"
#include "channel_format.hpp"

namespace streampool::runtime {
namespace {

static_assert(cudaArraySparse == CUDA_ARRAY3D_SPARSE && cudaArrayDeferredMapping == CUDA_ARRAY3D_DEFERRED_MAPPING);
static_assert(sizeof(cudaArraySparseProperties) == sizeof(CUDA_ARRAY_SPARSE_PROPERTIES) &&
              offsetof(cudaArraySparseProperties, miptailFirstLevel) ==
                  offsetof(CUDA_ARRAY_SPARSE_PROPERTIES, miptailFirstLevel) &&
              offsetof(cudaArraySparseProperties, miptailSize) == offsetof(CUDA_ARRAY_SPARSE_PROPERTIES, miptailSize) &&
              offsetof(cudaArraySparseProperties, flags) == offsetof(CUDA_ARRAY_SPARSE_PROPERTIES, flags));
static_assert(sizeof(cudaArrayMemoryRequirements) == sizeof(CUDA_ARRAY_MEMORY_REQUIREMENTS) &&
              offsetof(cudaArrayMemoryRequirements, alignment) ==
                  offsetof(CUDA_ARRAY_MEMORY_REQUIREMENTS, alignment));

CUmipmappedArray driver_mipmap(cudaMipmappedArray_const_t mipmap) noexcept {
  return reinterpret_cast<CUmipmappedArray>(const_cast<cudaMipmappedArray_t>(mipmap));
}

CUDA_ARRAY_SPARSE_PROPERTIES* driver_sparse(cudaArraySparseProperties* properties) noexcept {
  return reinterpret_cast<CUDA_ARRAY_SPARSE_PROPERTIES*>(properties);
}

CUDA_ARRAY_MEMORY_REQUIREMENTS* driver_requirements(cudaArrayMemoryRequirements* requirements) noexcept {
  return reinterpret_cast<CUDA_ARRAY_MEMORY_REQUIREMENTS*>(requirements);
}

cudaError_t device_handle(int device, CUdevice* handle) noexcept {
  int count = 0;
  if (const CUresult result = cuDeviceGetCount(&count); result != CUDA_SUCCESS) return to_runtime_error(result);
  if (device < 0 || device >= count) return cudaErrorInvalidDevice;
  return cuDeviceGet(handle, device) == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidDevice;
}

}  // namespace
}  // namespace streampool::runtime

using namespace streampool::runtime;

CUDART_EXPORT cudaError_t cudaMallocMipmappedArray(cudaMipmappedArray_t* mipmappedArray,
                                                   const cudaChannelFormatDesc* desc, cudaExtent extent,
                                                   unsigned int numLevels, unsigned int flags) {
  if (mipmappedArray == nullptr || desc == nullptr) return finish(cudaErrorInvalidValue);
  DriverFormat format{};
  if (const cudaError_t error = driver_format(*desc, &format); error != cudaSuccess) return finish(error);
  CUDA_ARRAY3D_DESCRIPTOR descriptor{};
  descriptor.Width = extent.width;
  descriptor.Height = extent.height;
  descriptor.Depth = extent.depth;
  descriptor.Format = format.format;
  descriptor.NumChannels = format.channels;
  descriptor.Flags = flags;
  STREAMPOOL_WITH_CONTEXT(
      cuMipmappedArrayCreate(reinterpret_cast<CUmipmappedArray*>(mipmappedArray), &descriptor, numLevels));
}

CUDART_EXPORT cudaError_t cudaGetMipmappedArrayLevel(cudaArray_t* levelArray, cudaMipmappedArray_const_t mipmappedArray,
                                                     unsigned int level) {
  if (levelArray == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(
      cuMipmappedArrayGetLevel(reinterpret_cast<CUarray*>(levelArray), driver_mipmap(mipmappedArray), level));
}

CUDART_EXPORT cudaError_t cudaFreeMipmappedArray(cudaMipmappedArray_t mipmappedArray) {
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  if (mipmappedArray == nullptr) return cudaSuccess;
  return finish(cuMipmappedArrayDestroy(driver_mipmap(mipmappedArray)));
}

CUDART_EXPORT cudaError_t cudaArrayGetPlane(cudaArray_t* pPlaneArray, cudaArray_t hArray, unsigned int planeIdx) {
  if (pPlaneArray == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuArrayGetPlane(reinterpret_cast<CUarray*>(pPlaneArray), driver_array(hArray), planeIdx));
}

CUDART_EXPORT cudaError_t cudaArrayGetSparseProperties(cudaArraySparseProperties* sparseProperties,
                                                       cudaArray_t array) {
  if (sparseProperties == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuArrayGetSparseProperties(driver_sparse(sparseProperties), driver_array(array)));
}

CUDART_EXPORT cudaError_t cudaMipmappedArrayGetSparseProperties(cudaArraySparseProperties* sparseProperties,
                                                                cudaMipmappedArray_t mipmap) {
  if (sparseProperties == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuMipmappedArrayGetSparseProperties(driver_sparse(sparseProperties), driver_mipmap(mipmap)));
}

CUDART_EXPORT cudaError_t cudaArrayGetMemoryRequirements(cudaArrayMemoryRequirements* memoryRequirements,
                                                         cudaArray_t array, int device) {
  if (memoryRequirements == nullptr) return finish(cudaErrorInvalidValue);
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  CUdevice handle = 0;
  if (const cudaError_t error = device_handle(device, &handle); error != cudaSuccess) return finish(error);
  return finish(cuArrayGetMemoryRequirements(driver_requirements(memoryRequirements), driver_array(array), handle));
}

CUDART_EXPORT cudaError_t cudaMipmappedArrayGetMemoryRequirements(cudaArrayMemoryRequirements* memoryRequirements,
                                                                  cudaMipmappedArray_t mipmap, int device) {
  if (memoryRequirements == nullptr) return finish(cudaErrorInvalidValue);
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  CUdevice handle = 0;
  if (const cudaError_t error = device_handle(device, &handle); error != cudaSuccess) return finish(error);
  return finish(
      cuMipmappedArrayGetMemoryRequirements(driver_requirements(memoryRequirements), driver_mipmap(mipmap), handle));
}
