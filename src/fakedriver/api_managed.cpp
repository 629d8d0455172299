// Entry points: hints about managed memory (prefetch, advice, attaching to a stream). Managed memory
// is host memory every "device" touches here, so the hints change nothing; what is checked is what
// the driver checks: the range is managed memory the fake handed out, the location and the advice
// are valid, and a prefetch or an attach takes its place in stream order.
#include "api_guard.hpp"
#include "driver.hpp"
#include "pointer_info.hpp"
#include "stream_ops.hpp"

namespace fake {
namespace {

bool managed_range(CUdeviceptr address, std::size_t bytes) {
  auto info = lookup_pointer(address);
  return info && info->managed && bytes != 0 && address - info->base <= info->size &&
         bytes <= info->size - (address - info->base);
}

bool valid_location(const CUmemLocation& location) {
  switch (location.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE: return Driver::instance().valid_device(location.id);
    case CU_MEM_LOCATION_TYPE_HOST:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT: return true;
    default: return false;
  }
}

CUresult prefetch(CUdeviceptr address, std::size_t bytes, CUmemLocation location, unsigned flags, CUstream stream,
                  DefaultStream default_stream) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (flags != 0 || !managed_range(address, bytes) || !valid_location(location)) return CUDA_ERROR_INVALID_VALUE;
  return submit_to_stream(stream, default_stream, [] {});
}

// A batch names ranges and, for prefetches, locations that apply from prefetchLocIdxs[k] on (the
// first at 0, rising, below count); a discard forgets the contents, which changes nothing here.
CUresult managed_batch(const CUdeviceptr* addresses, const std::size_t* sizes, std::size_t count,
                       const CUmemLocation* locations, const std::size_t* indices, std::size_t location_count,
                       bool prefetching, unsigned long long flags, CUstream stream, DefaultStream default_stream) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (flags != 0 || count == 0 || addresses == nullptr || sizes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (std::size_t i = 0; i < count; ++i) {
    if (!managed_range(addresses[i], sizes[i])) return CUDA_ERROR_INVALID_VALUE;
  }
  if (prefetching) {
    if (locations == nullptr || indices == nullptr || location_count == 0 || location_count > count ||
        indices[0] != 0) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    for (std::size_t i = 0; i < location_count; ++i) {
      if (indices[i] >= count || (i != 0 && indices[i] <= indices[i - 1]) || !valid_location(locations[i])) {
        return CUDA_ERROR_INVALID_VALUE;
      }
    }
  }
  return submit_to_stream(stream, default_stream, [] {});
}

CUresult advise(CUdeviceptr address, std::size_t bytes, CUmem_advise advice, CUmemLocation location) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (advice < CU_MEM_ADVISE_SET_READ_MOSTLY || advice > CU_MEM_ADVISE_UNSET_ACCESSED_BY) return CUDA_ERROR_INVALID_VALUE;
  if (!managed_range(address, bytes)) return CUDA_ERROR_INVALID_VALUE;
  // Read-mostly ignores the location; the others name a device or the host.
  const bool needs_location = advice != CU_MEM_ADVISE_SET_READ_MOSTLY && advice != CU_MEM_ADVISE_UNSET_READ_MOSTLY;
  if (needs_location && !valid_location(location)) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

CUresult attach(CUstream stream, CUdeviceptr address, std::size_t bytes, unsigned flags,
                DefaultStream default_stream) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST && flags != CU_MEM_ATTACH_SINGLE) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  auto info = lookup_pointer(address);
  // The whole allocation: length 0 or its size, from its start.
  if (!info || !info->managed || info->base != address || (bytes != 0 && bytes != info->size)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return submit_to_stream(stream, default_stream, [] {});
}

}  // namespace
}  // namespace fake

using namespace fake;

FAKE_EXPORT CUresult cuMemPrefetchAsync_v2(CUdeviceptr devPtr, size_t count, CUmemLocation location, unsigned int flags,
                                           CUstream hStream) {
  FAKE_ENTRY(prefetch(devPtr, count, location, flags, hStream, DefaultStream::legacy));
}
FAKE_EXPORT CUresult cuMemPrefetchAsync_v2_ptsz(CUdeviceptr devPtr, size_t count, CUmemLocation location,
                                                unsigned int flags, CUstream hStream) {
  FAKE_ENTRY(prefetch(devPtr, count, location, flags, hStream, DefaultStream::per_thread));
}
FAKE_EXPORT CUresult cuMemAdvise_v2(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUmemLocation location) {
  FAKE_ENTRY(advise(devPtr, count, advice, location));
}
FAKE_EXPORT CUresult cuStreamAttachMemAsync(CUstream hStream, CUdeviceptr dptr, size_t length, unsigned int flags) {
  FAKE_ENTRY(attach(hStream, dptr, length, flags, DefaultStream::legacy));
}
FAKE_EXPORT CUresult cuStreamAttachMemAsync_ptsz(CUstream hStream, CUdeviceptr dptr, size_t length,
                                                 unsigned int flags) {
  FAKE_ENTRY(attach(hStream, dptr, length, flags, DefaultStream::per_thread));
}
FAKE_EXPORT CUresult cuMemPrefetchBatchAsync(CUdeviceptr* dptrs, size_t* sizes, size_t count,
                                             CUmemLocation* prefetchLocs, size_t* prefetchLocIdxs,
                                             size_t numPrefetchLocs, unsigned long long flags, CUstream hStream) {
  FAKE_ENTRY(managed_batch(dptrs, sizes, count, prefetchLocs, prefetchLocIdxs, numPrefetchLocs, true, flags, hStream,
                           DefaultStream::legacy));
}
FAKE_EXPORT CUresult cuMemPrefetchBatchAsync_ptsz(CUdeviceptr* dptrs, size_t* sizes, size_t count,
                                                  CUmemLocation* prefetchLocs, size_t* prefetchLocIdxs,
                                                  size_t numPrefetchLocs, unsigned long long flags,
                                                  CUstream hStream) {
  FAKE_ENTRY(managed_batch(dptrs, sizes, count, prefetchLocs, prefetchLocIdxs, numPrefetchLocs, true, flags, hStream,
                           DefaultStream::per_thread));
}
FAKE_EXPORT CUresult cuMemDiscardBatchAsync(CUdeviceptr* dptrs, size_t* sizes, size_t count, unsigned long long flags,
                                            CUstream hStream) {
  FAKE_ENTRY(managed_batch(dptrs, sizes, count, nullptr, nullptr, 0, false, flags, hStream, DefaultStream::legacy));
}
FAKE_EXPORT CUresult cuMemDiscardBatchAsync_ptsz(CUdeviceptr* dptrs, size_t* sizes, size_t count,
                                                 unsigned long long flags, CUstream hStream) {
  FAKE_ENTRY(
      managed_batch(dptrs, sizes, count, nullptr, nullptr, 0, false, flags, hStream, DefaultStream::per_thread));
}
FAKE_EXPORT CUresult cuMemDiscardAndPrefetchBatchAsync(CUdeviceptr* dptrs, size_t* sizes, size_t count,
                                                       CUmemLocation* prefetchLocs, size_t* prefetchLocIdxs,
                                                       size_t numPrefetchLocs, unsigned long long flags,
                                                       CUstream hStream) {
  FAKE_ENTRY(managed_batch(dptrs, sizes, count, prefetchLocs, prefetchLocIdxs, numPrefetchLocs, true, flags, hStream,
                           DefaultStream::legacy));
}
FAKE_EXPORT CUresult cuMemDiscardAndPrefetchBatchAsync_ptsz(CUdeviceptr* dptrs, size_t* sizes, size_t count,
                                                            CUmemLocation* prefetchLocs, size_t* prefetchLocIdxs,
                                                            size_t numPrefetchLocs, unsigned long long flags,
                                                            CUstream hStream) {
  FAKE_ENTRY(managed_batch(dptrs, sizes, count, prefetchLocs, prefetchLocIdxs, numPrefetchLocs, true, flags, hStream,
                           DefaultStream::per_thread));
}
