// Entry points: the driver's own stream-ordered allocator, which the fake only serves simply (streampool
// replaces it and passes calls through only in special cases, e.g. during graph capture or with
// STREAMPOOL_DISABLE=1): an allocation is made at once, a free runs in stream order. There are no
// native pools: the pool entry points answer CUDA_ERROR_NOT_SUPPORTED.
#include "allocations.hpp"
#include "api_guard.hpp"
#include "driver.hpp"
#include "graph_memory.hpp"
#include "stream_ops.hpp"

namespace fake {
namespace {

CUresult alloc_async(CUdeviceptr* out, std::size_t size, CUstream handle, DefaultStream default_stream) {
  std::shared_ptr<Stream> stream;
  if (CUresult status = resolve_stream(handle, default_stream, stream); status != CUDA_SUCCESS) return status;
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (size == 0) {
    *out = 0;
    return CUDA_SUCCESS;
  }
  std::uintptr_t address = 0;
  if (CUresult status = allocate_memory(MemoryKind::device, size, stream->context(), address);
      status != CUDA_SUCCESS) {
    *out = 0;
    return status;
  }
  *out = address;
  return CUDA_SUCCESS;
}

CUresult free_async(CUdeviceptr address, CUstream handle, DefaultStream default_stream) {
  std::shared_ptr<Stream> stream;
  if (CUresult status = resolve_stream(handle, default_stream, stream); status != CUDA_SUCCESS) return status;
  if (address == 0) return CUDA_SUCCESS;
  // A live graph allocation ends; its memory stays the graph's (graph_memory.hpp).
  if (graph_memory_free(address)) return CUDA_SUCCESS;
  if (CUresult status = mark_free_pending(address); status != CUDA_SUCCESS) return status;
  // On a capturing stream the free would become a graph node; the fake's graphs never run, so the
  // memory is simply kept.
  if (capturing(stream)) return CUDA_SUCCESS;
  return submit_to_stream(handle, default_stream, [address] { free_memory(address, true, false); });
}

}  // namespace
}  // namespace fake

using namespace fake;

FAKE_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream hStream);
FAKE_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                                  CUstream hStream);
FAKE_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream);

FAKE_EXPORT CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  FAKE_ENTRY(alloc_async(dptr, bytesize, hStream, DefaultStream::legacy));
}
FAKE_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  FAKE_ENTRY(alloc_async(dptr, bytesize, hStream, DefaultStream::per_thread));
}
FAKE_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream) {
  static_cast<void>(pool);  // no native pools: every pool is the plain device allocator here
  FAKE_ENTRY(alloc_async(dptr, bytesize, hStream, DefaultStream::legacy));
}
FAKE_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                                  CUstream hStream) {
  static_cast<void>(pool);
  FAKE_ENTRY(alloc_async(dptr, bytesize, hStream, DefaultStream::per_thread));
}
FAKE_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
  FAKE_ENTRY(free_async(dptr, hStream, DefaultStream::legacy));
}
FAKE_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) {
  FAKE_ENTRY(free_async(dptr, hStream, DefaultStream::per_thread));
}

FAKE_EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool* pool_out, CUdevice dev) {
  static_cast<void>(pool_out);
  static_cast<void>(dev);
  FAKE_ENTRY(CUDA_ERROR_NOT_SUPPORTED);
}
FAKE_EXPORT CUresult cuDeviceGetMemPool(CUmemoryPool* pool, CUdevice dev) {
  static_cast<void>(pool);
  static_cast<void>(dev);
  FAKE_ENTRY(CUDA_ERROR_NOT_SUPPORTED);
}
FAKE_EXPORT CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool) {
  static_cast<void>(dev);
  static_cast<void>(pool);
  FAKE_ENTRY(CUDA_ERROR_NOT_SUPPORTED);
}
FAKE_EXPORT CUresult cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* poolProps) {
  static_cast<void>(pool);
  static_cast<void>(poolProps);
  FAKE_ENTRY(CUDA_ERROR_NOT_SUPPORTED);
}
FAKE_EXPORT CUresult cuMemGetDefaultMemPool(CUmemoryPool* pool_out, CUmemLocation* location, CUmemAllocationType type) {
  static_cast<void>(pool_out);
  static_cast<void>(location);
  static_cast<void>(type);
  FAKE_ENTRY(CUDA_ERROR_NOT_SUPPORTED);
}
FAKE_EXPORT CUresult cuMemGetMemPool(CUmemoryPool* pool, CUmemLocation* location, CUmemAllocationType type) {
  static_cast<void>(pool);
  static_cast<void>(location);
  static_cast<void>(type);
  FAKE_ENTRY(CUDA_ERROR_NOT_SUPPORTED);
}
