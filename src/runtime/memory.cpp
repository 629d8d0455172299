// Linear memory: device, pinned host, managed; copies and memsets (synchronous ones on the default
// stream, asynchronous ones in stream order). Copies use unified addressing
// (cuMemcpy*), as cudart does on every 64-bit platform.
#include "api.hpp"
#include "copy_kinds.hpp"

extern "C" {
// The per-thread synchronous driver copies (cuda.h declares them only under CUDA_API_PER_THREAD_DEFAULT_STREAM).
CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount);
CUresult cuMemsetD8_v2_ptds(CUdeviceptr dstDevice, unsigned char uc, size_t N);
cudaError_t cudaMemcpy_ptds(void* dst, const void* src, size_t count, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync_ptsz(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t cudaMemset_ptds(void* devPtr, int value, size_t count);
cudaError_t cudaMemsetAsync_ptsz(void* devPtr, int value, size_t count, cudaStream_t stream);
}

namespace streampool::runtime {
namespace {

cudaError_t copy(void* dst, const void* src, size_t count, cudaMemcpyKind kind, bool per_thread) noexcept {
  if (!valid_kind(kind)) return finish(cudaErrorInvalidMemcpyDirection);
  if (count == 0) return cudaSuccess;
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  return finish(per_thread ? cuMemcpy_ptds(unified_address(dst), unified_address(src), count) : cuMemcpy(unified_address(dst), unified_address(src), count));
}

cudaError_t copy_async(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t stream,
                       bool per_thread) noexcept {
  if (!valid_kind(kind)) return finish(cudaErrorInvalidMemcpyDirection);
  if (count == 0) return cudaSuccess;
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  return finish(cuMemcpyAsync(unified_address(dst), unified_address(src), count, driver_stream(stream, per_thread)));
}

cudaError_t set(void* ptr, int value, size_t count, bool per_thread) noexcept {
  if (count == 0) return cudaSuccess;
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  const auto byte = static_cast<unsigned char>(value);
  return finish(per_thread ? cuMemsetD8_v2_ptds(unified_address(ptr), byte, count) : cuMemsetD8(unified_address(ptr), byte, count));
}

cudaError_t set_async(void* ptr, int value, size_t count, cudaStream_t stream, bool per_thread) noexcept {
  if (count == 0) return cudaSuccess;
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  return finish(cuMemsetD8Async(unified_address(ptr), static_cast<unsigned char>(value), count, driver_stream(stream, per_thread)));
}

}  // namespace
}  // namespace streampool::runtime

using namespace streampool::runtime;

CUDART_EXPORT cudaError_t cudaMalloc(void** devPtr, size_t size) {
  if (devPtr == nullptr) return finish(cudaErrorInvalidValue);
  *devPtr = nullptr;
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  if (size == 0) return cudaSuccess;
  CUdeviceptr pointer = 0;
  const CUresult result = cuMemAlloc(&pointer, size);
  *devPtr = reinterpret_cast<void*>(pointer);
  return finish(result);
}

CUDART_EXPORT cudaError_t cudaFree(void* devPtr) {
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  if (devPtr == nullptr) return cudaSuccess;  // cudaFree(0): the classic way to initialise the runtime
  return finish(cuMemFree(unified_address(devPtr)));
}

CUDART_EXPORT cudaError_t cudaMallocHost(void** ptr, size_t size) {
  if (ptr == nullptr) return finish(cudaErrorInvalidValue);
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  return finish(cuMemAllocHost(ptr, size));
}

CUDART_EXPORT cudaError_t cudaHostAlloc(void** pHost, size_t size, unsigned int flags) {
  if (pHost == nullptr) return finish(cudaErrorInvalidValue);
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  return finish(cuMemHostAlloc(pHost, size, flags));
}

CUDART_EXPORT cudaError_t cudaFreeHost(void* ptr) {
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  if (ptr == nullptr) return cudaSuccess;
  return finish(cuMemFreeHost(ptr));
}

CUDART_EXPORT cudaError_t cudaHostRegister(void* ptr, size_t size, unsigned int flags) {
  STREAMPOOL_WITH_CONTEXT(cuMemHostRegister(ptr, size, flags));
}

CUDART_EXPORT cudaError_t cudaHostUnregister(void* ptr) { STREAMPOOL_WITH_CONTEXT(cuMemHostUnregister(ptr)); }

CUDART_EXPORT cudaError_t cudaHostGetDevicePointer(void** pDevice, void* pHost, unsigned int flags) {
  if (pDevice == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuMemHostGetDevicePointer(reinterpret_cast<CUdeviceptr*>(pDevice), pHost, flags));
}

CUDART_EXPORT cudaError_t cudaMallocManaged(void** devPtr, size_t size, unsigned int flags) {
  if (devPtr == nullptr) return finish(cudaErrorInvalidValue);
  if (size == 0 && (flags == cudaMemAttachGlobal || flags == cudaMemAttachHost)) {
    *devPtr = nullptr;  // as cudaMalloc of nothing: success (NVIDIA's cudart 13, measured)
    return cudaSuccess;
  }
  STREAMPOOL_WITH_CONTEXT(cuMemAllocManaged(reinterpret_cast<CUdeviceptr*>(devPtr), size, flags));
}

CUDART_EXPORT cudaError_t cudaMemGetInfo(size_t* free, size_t* total) { STREAMPOOL_WITH_CONTEXT(cuMemGetInfo(free, total)); }

CUDART_EXPORT cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  return copy(dst, src, count, kind, false);
}
CUDART_EXPORT cudaError_t cudaMemcpy_ptds(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  return copy(dst, src, count, kind, true);
}
CUDART_EXPORT cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind,
                                          cudaStream_t stream) {
  return copy_async(dst, src, count, kind, stream, false);
}
CUDART_EXPORT cudaError_t cudaMemcpyAsync_ptsz(void* dst, const void* src, size_t count, cudaMemcpyKind kind,
                                               cudaStream_t stream) {
  return copy_async(dst, src, count, kind, stream, true);
}
CUDART_EXPORT cudaError_t cudaMemset(void* devPtr, int value, size_t count) { return set(devPtr, value, count, false); }
CUDART_EXPORT cudaError_t cudaMemset_ptds(void* devPtr, int value, size_t count) {
  return set(devPtr, value, count, true);
}
CUDART_EXPORT cudaError_t cudaMemsetAsync(void* devPtr, int value, size_t count, cudaStream_t stream) {
  return set_async(devPtr, value, count, stream, false);
}
CUDART_EXPORT cudaError_t cudaMemsetAsync_ptsz(void* devPtr, int value, size_t count, cudaStream_t stream) {
  return set_async(devPtr, value, count, stream, true);
}

// The flags pinned host memory was allocated with (cudaHostAlloc's, cudaHostAllocMapped always set
// since CUDA 4 maps all pinned memory); an error for memory the runtime did not pin.
CUDART_EXPORT cudaError_t cudaHostGetFlags(unsigned int* pFlags, void* pHost) {
  if (pFlags == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuMemHostGetFlags(pFlags, pHost));
}
