// The stream-ordered allocator family, served by streampool's engine: each call is the driver hook
// of the same name that libstreampool.so exports (linked into this library), so an allocation
// costs the engine's work plus this frame. The runtime adds only what cudart adds: the lazy
// context, argument checks the driver does not make, and the translation of the result.
#include <cstddef>

#include "api.hpp"

extern "C" {
cudaError_t cudaMallocAsync_ptsz(void** devPtr, size_t size, cudaStream_t hStream);
cudaError_t cudaFreeAsync_ptsz(void* devPtr, cudaStream_t hStream);
cudaError_t cudaMallocFromPoolAsync_ptsz(void** ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream);
}

namespace streampool::runtime {
namespace {

// The runtime's pool structures are the driver's, field for field.
static_assert(sizeof(cudaMemPoolProps) == sizeof(CUmemPoolProps));
static_assert(offsetof(cudaMemPoolProps, location) == offsetof(CUmemPoolProps, location));
static_assert(offsetof(cudaMemPoolProps, maxSize) == offsetof(CUmemPoolProps, maxSize));
static_assert(offsetof(cudaMemPoolProps, usage) == offsetof(CUmemPoolProps, usage));
static_assert(sizeof(cudaMemAccessDesc) == sizeof(CUmemAccessDesc));
static_assert(sizeof(cudaMemLocation) == sizeof(CUmemLocation));
static_assert(sizeof(cudaMemPoolPtrExportData) == sizeof(CUmemPoolPtrExportData));
static_assert(static_cast<int>(cudaMemPoolAttrReleaseThreshold) == static_cast<int>(CU_MEMPOOL_ATTR_RELEASE_THRESHOLD));
static_assert(static_cast<int>(cudaMemPoolAttrUsedMemHigh) == static_cast<int>(CU_MEMPOOL_ATTR_USED_MEM_HIGH));

cudaError_t malloc_async(void** ptr, std::size_t size, cudaStream_t stream, bool per_thread) noexcept {
  if (ptr == nullptr) return finish(cudaErrorInvalidValue);
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) [[unlikely]] return finish(error);
  CUdeviceptr address = 0;
  const CUresult result = cuMemAllocAsync(&address, size, driver_stream(stream, per_thread));
  *ptr = reinterpret_cast<void*>(address);
  return finish(result);
}

cudaError_t malloc_from_pool_async(void** ptr, std::size_t size, cudaMemPool_t pool, cudaStream_t stream,
                                   bool per_thread) noexcept {
  if (ptr == nullptr || pool == nullptr) return finish(cudaErrorInvalidValue);
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) [[unlikely]] return finish(error);
  CUdeviceptr address = 0;
  const CUresult result = cuMemAllocFromPoolAsync(&address, size, pool, driver_stream(stream, per_thread));
  *ptr = reinterpret_cast<void*>(address);
  return finish(result);
}

cudaError_t free_async(void* ptr, cudaStream_t stream, bool per_thread) noexcept {
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) [[unlikely]] return finish(error);
  return finish(cuMemFreeAsync(reinterpret_cast<CUdeviceptr>(ptr), driver_stream(stream, per_thread)));
}

cudaError_t valid_device(int device) noexcept {
  int count = 0;
  if (const cudaError_t error = cudaGetDeviceCount(&count); error != cudaSuccess) return error;
  return device >= 0 && device < count ? cudaSuccess : cudaErrorInvalidDevice;
}

}  // namespace
}  // namespace streampool::runtime

using namespace streampool::runtime;

CUDART_EXPORT cudaError_t cudaMallocAsync(void** devPtr, size_t size, cudaStream_t hStream) {
  return malloc_async(devPtr, size, hStream, false);
}
CUDART_EXPORT cudaError_t cudaMallocAsync_ptsz(void** devPtr, size_t size, cudaStream_t hStream) {
  return malloc_async(devPtr, size, hStream, true);
}
CUDART_EXPORT cudaError_t cudaMallocFromPoolAsync(void** ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream) {
  return malloc_from_pool_async(ptr, size, memPool, stream, false);
}
CUDART_EXPORT cudaError_t cudaMallocFromPoolAsync_ptsz(void** ptr, size_t size, cudaMemPool_t memPool,
                                                      cudaStream_t stream) {
  return malloc_from_pool_async(ptr, size, memPool, stream, true);
}
CUDART_EXPORT cudaError_t cudaFreeAsync(void* devPtr, cudaStream_t hStream) { return free_async(devPtr, hStream, false); }
CUDART_EXPORT cudaError_t cudaFreeAsync_ptsz(void* devPtr, cudaStream_t hStream) {
  return free_async(devPtr, hStream, true);
}

CUDART_EXPORT cudaError_t cudaMemPoolCreate(cudaMemPool_t* memPool, const cudaMemPoolProps* poolProps) {
  if (memPool == nullptr || poolProps == nullptr) return finish(cudaErrorInvalidValue);
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  return finish(cuMemPoolCreate(memPool, reinterpret_cast<const CUmemPoolProps*>(poolProps)));
}

CUDART_EXPORT cudaError_t cudaMemPoolDestroy(cudaMemPool_t memPool) {
  if (memPool == nullptr) return finish(cudaErrorInvalidValue);
  return finish(cuMemPoolDestroy(memPool));
}

CUDART_EXPORT cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t memPool, cudaMemPoolAttr attr, void* value) {
  if (memPool == nullptr || value == nullptr) return finish(cudaErrorInvalidValue);
  return finish(cuMemPoolSetAttribute(memPool, static_cast<CUmemPool_attribute>(attr), value));
}

CUDART_EXPORT cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t memPool, cudaMemPoolAttr attr, void* value) {
  if (memPool == nullptr || value == nullptr) return finish(cudaErrorInvalidValue);
  return finish(cuMemPoolGetAttribute(memPool, static_cast<CUmemPool_attribute>(attr), value));
}

CUDART_EXPORT cudaError_t cudaMemPoolSetAccess(cudaMemPool_t memPool, const cudaMemAccessDesc* descList, size_t count) {
  if (memPool == nullptr || (descList == nullptr && count != 0)) return finish(cudaErrorInvalidValue);
  return finish(cuMemPoolSetAccess(memPool, reinterpret_cast<const CUmemAccessDesc*>(descList), count));
}

CUDART_EXPORT cudaError_t cudaMemPoolGetAccess(cudaMemAccessFlags* flags, cudaMemPool_t memPool,
                                               cudaMemLocation* location) {
  if (flags == nullptr || memPool == nullptr || location == nullptr) return finish(cudaErrorInvalidValue);
  CUmemAccess_flags driver_flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;
  const CUresult result = cuMemPoolGetAccess(&driver_flags, memPool, reinterpret_cast<CUmemLocation*>(location));
  *flags = static_cast<cudaMemAccessFlags>(driver_flags);
  return finish(result);
}

CUDART_EXPORT cudaError_t cudaMemPoolTrimTo(cudaMemPool_t memPool, size_t minBytesToKeep) {
  if (memPool == nullptr) return finish(cudaErrorInvalidValue);
  return finish(cuMemPoolTrimTo(memPool, minBytesToKeep));
}

CUDART_EXPORT cudaError_t cudaMemPoolExportToShareableHandle(void* shareableHandle, cudaMemPool_t memPool,
                                                             cudaMemAllocationHandleType handleType,
                                                             unsigned int flags) {
  if (shareableHandle == nullptr || memPool == nullptr) return finish(cudaErrorInvalidValue);
  return finish(cuMemPoolExportToShareableHandle(shareableHandle, memPool,
                                                 static_cast<CUmemAllocationHandleType>(handleType), flags));
}

CUDART_EXPORT cudaError_t cudaMemPoolImportFromShareableHandle(cudaMemPool_t* memPool, void* shareableHandle,
                                                               cudaMemAllocationHandleType handleType,
                                                               unsigned int flags) {
  if (memPool == nullptr) return finish(cudaErrorInvalidValue);
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  return finish(cuMemPoolImportFromShareableHandle(memPool, shareableHandle,
                                                   static_cast<CUmemAllocationHandleType>(handleType), flags));
}

CUDART_EXPORT cudaError_t cudaMemPoolExportPointer(cudaMemPoolPtrExportData* exportData, void* ptr) {
  if (exportData == nullptr || ptr == nullptr) return finish(cudaErrorInvalidValue);
  return finish(cuMemPoolExportPointer(reinterpret_cast<CUmemPoolPtrExportData*>(exportData),
                                       reinterpret_cast<CUdeviceptr>(ptr)));
}

CUDART_EXPORT cudaError_t cudaMemPoolImportPointer(void** ptr, cudaMemPool_t memPool,
                                                   cudaMemPoolPtrExportData* exportData) {
  if (ptr == nullptr || memPool == nullptr || exportData == nullptr) return finish(cudaErrorInvalidValue);
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  CUdeviceptr address = 0;
  const CUresult result =
      cuMemPoolImportPointer(&address, memPool, reinterpret_cast<CUmemPoolPtrExportData*>(exportData));
  *ptr = reinterpret_cast<void*>(address);
  return finish(result);
}

CUDART_EXPORT cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* memPool, int device) {
  if (memPool == nullptr) return finish(cudaErrorInvalidValue);
  if (const cudaError_t error = valid_device(device); error != cudaSuccess) return finish(error);
  return finish(cuDeviceGetDefaultMemPool(memPool, device));
}

CUDART_EXPORT cudaError_t cudaDeviceGetMemPool(cudaMemPool_t* memPool, int device) {
  if (memPool == nullptr) return finish(cudaErrorInvalidValue);
  if (const cudaError_t error = valid_device(device); error != cudaSuccess) return finish(error);
  return finish(cuDeviceGetMemPool(memPool, device));
}

CUDART_EXPORT cudaError_t cudaDeviceSetMemPool(int device, cudaMemPool_t memPool) {
  if (memPool == nullptr) return finish(cudaErrorInvalidValue);
  if (const cudaError_t error = valid_device(device); error != cudaSuccess) return finish(error);
  return finish(cuDeviceSetMemPool(device, memPool));
}

CUDART_EXPORT cudaError_t cudaMemGetDefaultMemPool(cudaMemPool_t* memPool, cudaMemLocation* location,
                                                   cudaMemAllocationType type) {
  if (memPool == nullptr || location == nullptr) return finish(cudaErrorInvalidValue);
  int count = 0;
  if (const cudaError_t error = cudaGetDeviceCount(&count); error != cudaSuccess) return error;
  return finish(cuMemGetDefaultMemPool(memPool, reinterpret_cast<CUmemLocation*>(location),
                                       static_cast<CUmemAllocationType>(type)));
}

CUDART_EXPORT cudaError_t cudaMemGetMemPool(cudaMemPool_t* memPool, cudaMemLocation* location,
                                            cudaMemAllocationType type) {
  if (memPool == nullptr || location == nullptr) return finish(cudaErrorInvalidValue);
  int count = 0;
  if (const cudaError_t error = cudaGetDeviceCount(&count); error != cudaSuccess) return error;
  return finish(cuMemGetMemPool(memPool, reinterpret_cast<CUmemLocation*>(location),
                                static_cast<CUmemAllocationType>(type)));
}

CUDART_EXPORT cudaError_t cudaMemSetMemPool(cudaMemLocation* location, cudaMemAllocationType type,
                                            cudaMemPool_t memPool) {
  if (memPool == nullptr || location == nullptr) return finish(cudaErrorInvalidValue);
  int count = 0;
  if (const cudaError_t error = cudaGetDeviceCount(&count); error != cudaSuccess) return error;
  return finish(cuMemSetMemPool(reinterpret_cast<CUmemLocation*>(location), static_cast<CUmemAllocationType>(type),
                                memPool));
}
