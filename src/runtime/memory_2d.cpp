// Pitched (2D) linear memory: cudaMallocPitch, cudaMemcpy2D and cudaMemset2D with their asynchronous
// and per-thread forms. Copies name both sides by unified address (host sides by host pointer when the
// kind says so), as cudart does; synchronous copies use the driver's unaligned form, which accepts any
// pitch, as cudart 13's does. No arrays (cudaArray_t): the runtime has none.
#include "api.hpp"
#include "copy_kinds.hpp"

extern "C" {
// The per-thread synchronous driver calls (cuda.h declares them only under CUDA_API_PER_THREAD_DEFAULT_STREAM).
CUresult cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D* pCopy);
CUresult cuMemsetD2D8_v2_ptds(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width, size_t Height);
cudaError_t cudaMemcpy2D_ptds(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                              cudaMemcpyKind kind);
cudaError_t cudaMemcpy2DAsync_ptsz(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                                   size_t height, cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t cudaMemset2D_ptds(void* devPtr, size_t pitch, int value, size_t width, size_t height);
cudaError_t cudaMemset2DAsync_ptsz(void* devPtr, size_t pitch, int value, size_t width, size_t height,
                                   cudaStream_t stream);
}

namespace streampool::runtime {
namespace {

struct Rect {
  void* dst;
  std::size_t dst_pitch;
  const void* src;
  std::size_t src_pitch;
  std::size_t width;
  std::size_t height;
};

// The driver's description of the copy, or the error cudart answers for the arguments.
cudaError_t describe(const Rect& rect, cudaMemcpyKind kind, CUDA_MEMCPY2D* copy) noexcept {
  if (static_cast<int>(kind) < cudaMemcpyHostToHost || static_cast<int>(kind) > cudaMemcpyDefault) {
    return cudaErrorInvalidMemcpyDirection;
  }
  if (rect.width > rect.dst_pitch || rect.width > rect.src_pitch) return cudaErrorInvalidPitchValue;
  *copy = CUDA_MEMCPY2D{};
  if (host_side(kind, true)) {
    copy->srcMemoryType = CU_MEMORYTYPE_HOST;
    copy->srcHost = rect.src;
  } else {
    copy->srcMemoryType = CU_MEMORYTYPE_UNIFIED;
    copy->srcDevice = unified_address(rect.src);
  }
  if (host_side(kind, false)) {
    copy->dstMemoryType = CU_MEMORYTYPE_HOST;
    copy->dstHost = rect.dst;
  } else {
    copy->dstMemoryType = CU_MEMORYTYPE_UNIFIED;
    copy->dstDevice = unified_address(rect.dst);
  }
  copy->srcPitch = rect.src_pitch;
  copy->dstPitch = rect.dst_pitch;
  copy->WidthInBytes = rect.width;
  copy->Height = rect.height;
  return cudaSuccess;
}

cudaError_t copy_2d(const Rect& rect, cudaMemcpyKind kind, bool per_thread) noexcept {
  CUDA_MEMCPY2D copy;
  if (const cudaError_t error = describe(rect, kind, &copy); error != cudaSuccess) return finish(error);
  if (rect.width == 0 || rect.height == 0) return cudaSuccess;
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  return finish(per_thread ? cuMemcpy2DUnaligned_v2_ptds(&copy) : cuMemcpy2DUnaligned(&copy));
}

cudaError_t copy_2d_async(const Rect& rect, cudaMemcpyKind kind, cudaStream_t stream, bool per_thread) noexcept {
  CUDA_MEMCPY2D copy;
  if (const cudaError_t error = describe(rect, kind, &copy); error != cudaSuccess) return finish(error);
  if (rect.width == 0 || rect.height == 0) return cudaSuccess;
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  return finish(cuMemcpy2DAsync(&copy, driver_stream(stream, per_thread)));
}

cudaError_t set_2d(void* ptr, std::size_t pitch, int value, std::size_t width, std::size_t height, bool per_thread) noexcept {
  if (height > 1 && pitch < width) return finish(cudaErrorInvalidValue);
  if (width == 0 || height == 0) return cudaSuccess;
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  const auto byte = static_cast<unsigned char>(value);
  return finish(per_thread ? cuMemsetD2D8_v2_ptds(unified_address(ptr), pitch, byte, width, height)
                           : cuMemsetD2D8(unified_address(ptr), pitch, byte, width, height));
}

cudaError_t set_2d_async(void* ptr, std::size_t pitch, int value, std::size_t width, std::size_t height,
                         cudaStream_t stream, bool per_thread) noexcept {
  if (height > 1 && pitch < width) return finish(cudaErrorInvalidValue);
  if (width == 0 || height == 0) return cudaSuccess;
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  return finish(cuMemsetD2D8Async(unified_address(ptr), pitch, static_cast<unsigned char>(value), width, height,
                                  driver_stream(stream, per_thread)));
}

}  // namespace
}  // namespace streampool::runtime

using namespace streampool::runtime;

// The pitch is the driver's (cuMemAllocPitch pads rows for coalescing; 512 bytes on current GPUs),
// asked for the widest accesses (16 bytes), which constrain the pitch the least.
CUDART_EXPORT cudaError_t cudaMallocPitch(void** devPtr, size_t* pitch, size_t width, size_t height) {
  if (devPtr == nullptr || pitch == nullptr) return finish(cudaErrorInvalidValue);
  *devPtr = nullptr;
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  if (width == 0 || height == 0) {  // nothing to allocate: a null pointer and the width as pitch
    *pitch = width;
    return cudaSuccess;
  }
  CUdeviceptr pointer = 0;
  const CUresult result = cuMemAllocPitch(&pointer, pitch, width, height, 16);
  *devPtr = reinterpret_cast<void*>(pointer);
  return finish(result);
}

CUDART_EXPORT cudaError_t cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                                       size_t height, cudaMemcpyKind kind) {
  return copy_2d({dst, dpitch, src, spitch, width, height}, kind, false);
}
CUDART_EXPORT cudaError_t cudaMemcpy2D_ptds(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                                            size_t height, cudaMemcpyKind kind) {
  return copy_2d({dst, dpitch, src, spitch, width, height}, kind, true);
}
CUDART_EXPORT cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                                            size_t height, cudaMemcpyKind kind, cudaStream_t stream) {
  return copy_2d_async({dst, dpitch, src, spitch, width, height}, kind, stream, false);
}
CUDART_EXPORT cudaError_t cudaMemcpy2DAsync_ptsz(void* dst, size_t dpitch, const void* src, size_t spitch,
                                                 size_t width, size_t height, cudaMemcpyKind kind,
                                                 cudaStream_t stream) {
  return copy_2d_async({dst, dpitch, src, spitch, width, height}, kind, stream, true);
}

CUDART_EXPORT cudaError_t cudaMemset2D(void* devPtr, size_t pitch, int value, size_t width, size_t height) {
  return set_2d(devPtr, pitch, value, width, height, false);
}
CUDART_EXPORT cudaError_t cudaMemset2D_ptds(void* devPtr, size_t pitch, int value, size_t width, size_t height) {
  return set_2d(devPtr, pitch, value, width, height, true);
}
CUDART_EXPORT cudaError_t cudaMemset2DAsync(void* devPtr, size_t pitch, int value, size_t width, size_t height,
                                            cudaStream_t stream) {
  return set_2d_async(devPtr, pitch, value, width, height, stream, false);
}
CUDART_EXPORT cudaError_t cudaMemset2DAsync_ptsz(void* devPtr, size_t pitch, int value, size_t width, size_t height,
                                                 cudaStream_t stream) {
  return set_2d_async(devPtr, pitch, value, width, height, stream, true);
}
