// Hints about managed memory: prefetching a range to a location, advice, and attaching an allocation
// to a stream. The runtime's locations and advice are the driver's, value for value.
#include <cstring>

#include "api.hpp"

extern "C" {
cudaError_t cudaMemPrefetchAsync_ptsz(const void* devPtr, size_t count, cudaMemLocation location, unsigned int flags,
                                      cudaStream_t stream);
cudaError_t cudaStreamAttachMemAsync_ptsz(cudaStream_t stream, void* devPtr, size_t length, unsigned int flags);
}

namespace streampool::runtime {
namespace {

static_assert(sizeof(cudaMemLocation) == sizeof(CUmemLocation));
static_assert(static_cast<int>(cudaMemLocationTypeDevice) == static_cast<int>(CU_MEM_LOCATION_TYPE_DEVICE));
static_assert(static_cast<int>(cudaMemLocationTypeHostNumaCurrent) ==
              static_cast<int>(CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT));
static_assert(static_cast<int>(cudaMemAdviseUnsetAccessedBy) == static_cast<int>(CU_MEM_ADVISE_UNSET_ACCESSED_BY));

CUmemLocation driver_location(cudaMemLocation location) noexcept {
  CUmemLocation converted;
  std::memcpy(&converted, &location, sizeof(converted));
  return converted;
}

cudaError_t prefetch(const void* ptr, std::size_t count, cudaMemLocation location, unsigned flags, cudaStream_t stream,
                     bool per_thread) noexcept {
  STREAMPOOL_WITH_CONTEXT(cuMemPrefetchAsync(reinterpret_cast<CUdeviceptr>(ptr), count, driver_location(location),
                                             flags, driver_stream(stream, per_thread)));
}

cudaError_t attach(cudaStream_t stream, void* ptr, std::size_t length, unsigned flags, bool per_thread) noexcept {
  STREAMPOOL_WITH_CONTEXT(
      cuStreamAttachMemAsync(driver_stream(stream, per_thread), reinterpret_cast<CUdeviceptr>(ptr), length, flags));
}

}  // namespace
}  // namespace streampool::runtime

using namespace streampool::runtime;

CUDART_EXPORT cudaError_t cudaMemPrefetchAsync(const void* devPtr, size_t count, cudaMemLocation location,
                                               unsigned int flags, cudaStream_t stream) {
  return prefetch(devPtr, count, location, flags, stream, false);
}
CUDART_EXPORT cudaError_t cudaMemPrefetchAsync_ptsz(const void* devPtr, size_t count, cudaMemLocation location,
                                                    unsigned int flags, cudaStream_t stream) {
  return prefetch(devPtr, count, location, flags, stream, true);
}

CUDART_EXPORT cudaError_t cudaMemAdvise(const void* devPtr, size_t count, cudaMemoryAdvise advice,
                                        cudaMemLocation location) {
  STREAMPOOL_WITH_CONTEXT(cuMemAdvise(reinterpret_cast<CUdeviceptr>(devPtr), count, static_cast<CUmem_advise>(advice),
                                      driver_location(location)));
}

CUDART_EXPORT cudaError_t cudaStreamAttachMemAsync(cudaStream_t stream, void* devPtr, size_t length,
                                                   unsigned int flags) {
  return attach(stream, devPtr, length, flags, false);
}
CUDART_EXPORT cudaError_t cudaStreamAttachMemAsync_ptsz(cudaStream_t stream, void* devPtr, size_t length,
                                                        unsigned int flags) {
  return attach(stream, devPtr, length, flags, true);
}

// What the hints on a managed range are (read-mostly, preferred location, accessed-by, last prefetch).
CUDART_EXPORT cudaError_t cudaMemRangeGetAttribute(void* data, size_t dataSize, cudaMemRangeAttribute attribute,
                                                   const void* devPtr, size_t count) {
  STREAMPOOL_WITH_CONTEXT(cuMemRangeGetAttribute(data, dataSize, static_cast<CUmem_range_attribute>(attribute),
                                                 reinterpret_cast<CUdeviceptr>(devPtr), count));
}
CUDART_EXPORT cudaError_t cudaMemRangeGetAttributes(void** data, size_t* dataSizes, cudaMemRangeAttribute* attributes,
                                                    size_t numAttributes, const void* devPtr, size_t count) {
  static_assert(sizeof(cudaMemRangeAttribute) == sizeof(CUmem_range_attribute));
  STREAMPOOL_WITH_CONTEXT(cuMemRangeGetAttributes(data, dataSizes, reinterpret_cast<CUmem_range_attribute*>(attributes),
                                                  numAttributes, reinterpret_cast<CUdeviceptr>(devPtr), count));
}
