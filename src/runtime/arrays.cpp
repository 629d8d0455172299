// CUDA arrays: allocation (2D, 3D, layered, cubemap, surface load/store: the runtime's flags are the
// driver's), their description, and copies between arrays and linear memory in the 2D forms and the
// older 1D forms, which fill the array row after row from (wOffset, hOffset). A runtime array is the
// driver's CUarray. Offsets and widths are in bytes, as in cudart's 2D array copies. Copies between
// two arrays (cudaMemcpy2DArrayToArray, and the older cudaMemcpyArrayToArray, which runs on across
// rows as the 1D forms do) are the driver's 2D copies with an array on both sides. The per-thread
// forms (_ptds, _ptsz) take the calling thread's default stream for stream 0.
#include <algorithm>

#include "api.hpp"
#include "copy_kinds.hpp"
#include "channel_format.hpp"

extern "C" {
CUresult cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D* pCopy);
cudaError_t cudaMemcpy2DToArray_ptds(cudaArray_t dst, size_t wOffset, size_t hOffset, const void* src, size_t spitch,
                                     size_t width, size_t height, cudaMemcpyKind kind);
cudaError_t cudaMemcpy2DToArrayAsync_ptsz(cudaArray_t dst, size_t wOffset, size_t hOffset, const void* src,
                                          size_t spitch, size_t width, size_t height, cudaMemcpyKind kind,
                                          cudaStream_t stream);
cudaError_t cudaMemcpy2DFromArray_ptds(void* dst, size_t dpitch, cudaArray_const_t src, size_t wOffset, size_t hOffset,
                                       size_t width, size_t height, cudaMemcpyKind kind);
cudaError_t cudaMemcpy2DFromArrayAsync_ptsz(void* dst, size_t dpitch, cudaArray_const_t src, size_t wOffset,
                                            size_t hOffset, size_t width, size_t height, cudaMemcpyKind kind,
                                            cudaStream_t stream);
cudaError_t cudaMemcpyToArray_ptds(cudaArray_t dst, size_t wOffset, size_t hOffset, const void* src, size_t count,
                                   cudaMemcpyKind kind);
cudaError_t cudaMemcpyFromArray_ptds(void* dst, cudaArray_const_t src, size_t wOffset, size_t hOffset, size_t count,
                                     cudaMemcpyKind kind);
cudaError_t cudaMemcpyToArrayAsync_ptsz(cudaArray_t dst, size_t wOffset, size_t hOffset, const void* src, size_t count,
                                        cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t cudaMemcpyFromArrayAsync_ptsz(void* dst, cudaArray_const_t src, size_t wOffset, size_t hOffset,
                                          size_t count, cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t cudaMemcpyArrayToArray_ptds(cudaArray_t dst, size_t wOffsetDst, size_t hOffsetDst, cudaArray_const_t src,
                                        size_t wOffsetSrc, size_t hOffsetSrc, size_t count, cudaMemcpyKind kind);
cudaError_t cudaMemcpy2DArrayToArray_ptds(cudaArray_t dst, size_t wOffsetDst, size_t hOffsetDst,
                                          cudaArray_const_t src, size_t wOffsetSrc, size_t hOffsetSrc, size_t width,
                                          size_t height, cudaMemcpyKind kind);
}

namespace streampool::runtime {
namespace {

// How a copy is queued: synchronously (on the legacy or the per-thread default stream) or in
// `stream`'s order.
struct Queue {
  cudaStream_t stream;
  bool asynchronous;
  bool per_thread;
};
constexpr Queue kSynchronous{nullptr, false, false};
constexpr Queue kSynchronousPerThread{nullptr, false, true};

CUresult driver_copy_2d(const CUDA_MEMCPY2D& copy, Queue queue) noexcept {
  if (queue.asynchronous) return cuMemcpy2DAsync(&copy, driver_stream(queue.stream, queue.per_thread));
  return queue.per_thread ? cuMemcpy2DUnaligned_v2_ptds(&copy) : cuMemcpy2DUnaligned(&copy);
}

// The bytes of one row of `array` (0 when the driver does not know it).
std::size_t row_bytes(cudaArray_const_t array) noexcept {
  CUDA_ARRAY3D_DESCRIPTOR descriptor{};
  if (cuArray3DGetDescriptor(&descriptor, driver_array(array)) != CUDA_SUCCESS) return 0;
  return descriptor.Width * element_bytes(descriptor.Format, descriptor.NumChannels);
}

static_assert(cudaArrayLayered == CUDA_ARRAY3D_LAYERED && cudaArraySurfaceLoadStore == CUDA_ARRAY3D_SURFACE_LDST &&
              cudaArrayCubemap == CUDA_ARRAY3D_CUBEMAP && cudaArrayTextureGather == CUDA_ARRAY3D_TEXTURE_GATHER);

cudaError_t create(cudaArray_t* array, const cudaChannelFormatDesc* desc, cudaExtent extent, unsigned flags) noexcept {
  if (array == nullptr || desc == nullptr) return finish(cudaErrorInvalidValue);
  DriverFormat format{};
  if (const cudaError_t error = driver_format(*desc, &format); error != cudaSuccess) return finish(error);
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  CUDA_ARRAY3D_DESCRIPTOR descriptor{};
  descriptor.Width = extent.width;
  descriptor.Height = extent.height;
  descriptor.Depth = extent.depth;
  descriptor.Format = format.format;
  descriptor.NumChannels = format.channels;
  descriptor.Flags = flags;
  CUarray handle = nullptr;
  const CUresult result = cuArray3DCreate(&handle, &descriptor);
  if (result == CUDA_SUCCESS) *array = reinterpret_cast<cudaArray_t>(handle);
  return finish(result);
}

// One side of a 2D copy: an array at (x bytes, y), or linear memory named as the kind says.
void array_side(cudaArray_const_t array, std::size_t x, std::size_t y, CUmemorytype* type, CUarray* handle,
                std::size_t* x_out, std::size_t* y_out) noexcept {
  *type = CU_MEMORYTYPE_ARRAY;
  *handle = driver_array(array);
  *x_out = x;
  *y_out = y;
}

struct Linear {
  const void* pointer;
  std::size_t pitch;
};

// A 2D copy between an array and linear memory (to_array: linear -> array).
cudaError_t copy_array_2d(bool to_array, cudaArray_const_t array, std::size_t x, std::size_t y, Linear linear,
                          std::size_t width, std::size_t height, cudaMemcpyKind kind, Queue queue) noexcept {
  if (!valid_kind(kind)) return finish(cudaErrorInvalidMemcpyDirection);
  if (array == nullptr) return finish(cudaErrorInvalidValue);
  if (width > linear.pitch) return finish(cudaErrorInvalidPitchValue);
  if (width == 0 || height == 0) return cudaSuccess;
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  CUDA_MEMCPY2D copy{};
  const bool host = host_side(kind, to_array);
  if (to_array) {
    array_side(array, x, y, &copy.dstMemoryType, &copy.dstArray, &copy.dstXInBytes, &copy.dstY);
    copy.srcMemoryType = host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_UNIFIED;
    copy.srcHost = linear.pointer;
    copy.srcDevice = reinterpret_cast<CUdeviceptr>(linear.pointer);
    copy.srcPitch = linear.pitch;
  } else {
    array_side(array, x, y, &copy.srcMemoryType, &copy.srcArray, &copy.srcXInBytes, &copy.srcY);
    copy.dstMemoryType = host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_UNIFIED;
    copy.dstHost = const_cast<void*>(linear.pointer);
    copy.dstDevice = reinterpret_cast<CUdeviceptr>(linear.pointer);
    copy.dstPitch = linear.pitch;
  }
  copy.WidthInBytes = width;
  copy.Height = height;
  return finish(driver_copy_2d(copy, queue));
}

// The older 1D form: `count` bytes from (x bytes, y) on, row after row: a partial first row, whole
// rows, a partial last row.
cudaError_t copy_array_1d(bool to_array, cudaArray_const_t array, std::size_t x, std::size_t y, const void* linear,
                          std::size_t count, cudaMemcpyKind kind, Queue queue) noexcept {
  if (!valid_kind(kind)) return finish(cudaErrorInvalidMemcpyDirection);
  if (array == nullptr) return finish(cudaErrorInvalidValue);
  if (count == 0) return cudaSuccess;
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  const std::size_t row = row_bytes(array);
  if (row == 0) return finish(cudaErrorInvalidResourceHandle);
  if (x >= row) return finish(cudaErrorInvalidValue);
  const auto* bytes = static_cast<const unsigned char*>(linear);
  const std::size_t first = std::min(count, row - x);
  if (const cudaError_t error = copy_array_2d(to_array, array, x, y, {bytes, first}, first, 1, kind, queue);
      error != cudaSuccess) {
    return error;
  }
  std::size_t done = first;
  const std::size_t whole_rows = (count - done) / row;
  if (whole_rows != 0) {
    if (const cudaError_t error =
            copy_array_2d(to_array, array, 0, y + 1, {bytes + done, row}, row, whole_rows, kind, queue);
        error != cudaSuccess) {
      return error;
    }
    done += whole_rows * row;
  }
  if (done < count) {
    return copy_array_2d(to_array, array, 0, y + 1 + whole_rows, {bytes + done, count - done}, count - done, 1, kind,
                         queue);
  }
  return cudaSuccess;
}

struct ArrayPlace {
  cudaArray_const_t array;
  std::size_t x;  // bytes
  std::size_t y;
};

CUDA_MEMCPY2D between_arrays(ArrayPlace dst, ArrayPlace src, std::size_t width, std::size_t height) noexcept {
  CUDA_MEMCPY2D copy{};
  array_side(src.array, src.x, src.y, &copy.srcMemoryType, &copy.srcArray, &copy.srcXInBytes, &copy.srcY);
  array_side(dst.array, dst.x, dst.y, &copy.dstMemoryType, &copy.dstArray, &copy.dstXInBytes, &copy.dstY);
  copy.WidthInBytes = width;
  copy.Height = height;
  return copy;
}

cudaError_t copy_arrays_2d(ArrayPlace dst, ArrayPlace src, std::size_t width, std::size_t height, cudaMemcpyKind kind,
                           bool per_thread) noexcept {
  if (!valid_kind(kind)) return finish(cudaErrorInvalidMemcpyDirection);
  if (dst.array == nullptr || src.array == nullptr) return finish(cudaErrorInvalidValue);
  if (width == 0 || height == 0) return cudaSuccess;
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  return finish(driver_copy_2d(between_arrays(dst, src, width, height), {nullptr, false, per_thread}));
}

// `count` bytes from one array to another, each side running on from its (x, y) row after row: whole
// rows in one copy where both sides are row-aligned and as wide, else pieces that end where either
// side's row does.
cudaError_t copy_arrays_1d(ArrayPlace dst, ArrayPlace src, std::size_t count, cudaMemcpyKind kind,
                           bool per_thread) noexcept {
  if (!valid_kind(kind)) return finish(cudaErrorInvalidMemcpyDirection);
  // A missing array is a bad handle, as cudart answers, not a bad value.
  if (dst.array == nullptr || src.array == nullptr) return finish(cudaErrorInvalidResourceHandle);
  if (count == 0) return cudaSuccess;
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  const std::size_t dst_row = row_bytes(dst.array);
  const std::size_t src_row = row_bytes(src.array);
  if (dst_row == 0 || src_row == 0) return finish(cudaErrorInvalidResourceHandle);
  if (dst.x >= dst_row || src.x >= src_row) return finish(cudaErrorInvalidValue);
  const Queue queue{nullptr, false, per_thread};
  while (count != 0) {
    if (dst.x == 0 && src.x == 0 && dst_row == src_row && count >= dst_row) {
      const std::size_t rows = count / dst_row;
      if (const CUresult result = driver_copy_2d(between_arrays(dst, src, dst_row, rows), queue);
          result != CUDA_SUCCESS) {
        return finish(result);
      }
      dst.y += rows;
      src.y += rows;
      count -= rows * dst_row;
      continue;
    }
    const std::size_t piece = std::min({count, dst_row - dst.x, src_row - src.x});
    if (const CUresult result = driver_copy_2d(between_arrays(dst, src, piece, 1), queue); result != CUDA_SUCCESS) {
      return finish(result);
    }
    count -= piece;
    dst.x += piece;
    src.x += piece;
    if (dst.x == dst_row) dst = {dst.array, 0, dst.y + 1};
    if (src.x == src_row) src = {src.array, 0, src.y + 1};
  }
  return cudaSuccess;
}

}  // namespace
}  // namespace streampool::runtime

using namespace streampool::runtime;

CUDART_EXPORT cudaError_t cudaMallocArray(cudaArray_t* array, const cudaChannelFormatDesc* desc, size_t width,
                                          size_t height, unsigned int flags) {
  return create(array, desc, cudaExtent{width, height, 0}, flags);
}

CUDART_EXPORT cudaError_t cudaMalloc3DArray(cudaArray_t* array, const cudaChannelFormatDesc* desc, cudaExtent extent,
                                            unsigned int flags) {
  return create(array, desc, extent, flags);
}

CUDART_EXPORT cudaError_t cudaFreeArray(cudaArray_t array) {
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  if (array == nullptr) return cudaSuccess;
  return finish(cuArrayDestroy(driver_array(array)));
}

CUDART_EXPORT cudaError_t cudaArrayGetInfo(cudaChannelFormatDesc* desc, cudaExtent* extent, unsigned int* flags,
                                           cudaArray_t array) {
  if (array == nullptr) return finish(cudaErrorInvalidValue);
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  CUDA_ARRAY3D_DESCRIPTOR descriptor{};
  if (const CUresult result = cuArray3DGetDescriptor(&descriptor, driver_array(array)); result != CUDA_SUCCESS) {
    return finish(result);
  }
  if (desc != nullptr) *desc = runtime_format(descriptor.Format, descriptor.NumChannels);
  if (extent != nullptr) *extent = cudaExtent{descriptor.Width, descriptor.Height, descriptor.Depth};
  if (flags != nullptr) *flags = descriptor.Flags;
  return cudaSuccess;
}

CUDART_EXPORT cudaError_t cudaGetChannelDesc(cudaChannelFormatDesc* desc, cudaArray_const_t array) {
  if (desc == nullptr) return finish(cudaErrorInvalidValue);
  return cudaArrayGetInfo(desc, nullptr, nullptr, const_cast<cudaArray_t>(array));
}

CUDART_EXPORT cudaError_t cudaMemcpy2DToArray(cudaArray_t dst, size_t wOffset, size_t hOffset, const void* src,
                                              size_t spitch, size_t width, size_t height, cudaMemcpyKind kind) {
  return copy_array_2d(true, dst, wOffset, hOffset, {src, spitch}, width, height, kind, kSynchronous);
}
CUDART_EXPORT cudaError_t cudaMemcpy2DToArray_ptds(cudaArray_t dst, size_t wOffset, size_t hOffset, const void* src,
                                                   size_t spitch, size_t width, size_t height, cudaMemcpyKind kind) {
  return copy_array_2d(true, dst, wOffset, hOffset, {src, spitch}, width, height, kind, kSynchronousPerThread);
}
CUDART_EXPORT cudaError_t cudaMemcpy2DToArrayAsync(cudaArray_t dst, size_t wOffset, size_t hOffset, const void* src,
                                                   size_t spitch, size_t width, size_t height, cudaMemcpyKind kind,
                                                   cudaStream_t stream) {
  return copy_array_2d(true, dst, wOffset, hOffset, {src, spitch}, width, height, kind, {stream, true, false});
}
CUDART_EXPORT cudaError_t cudaMemcpy2DToArrayAsync_ptsz(cudaArray_t dst, size_t wOffset, size_t hOffset,
                                                        const void* src, size_t spitch, size_t width, size_t height,
                                                        cudaMemcpyKind kind, cudaStream_t stream) {
  return copy_array_2d(true, dst, wOffset, hOffset, {src, spitch}, width, height, kind, {stream, true, true});
}
CUDART_EXPORT cudaError_t cudaMemcpy2DFromArray(void* dst, size_t dpitch, cudaArray_const_t src, size_t wOffset,
                                                size_t hOffset, size_t width, size_t height, cudaMemcpyKind kind) {
  return copy_array_2d(false, src, wOffset, hOffset, {dst, dpitch}, width, height, kind, kSynchronous);
}
CUDART_EXPORT cudaError_t cudaMemcpy2DFromArray_ptds(void* dst, size_t dpitch, cudaArray_const_t src, size_t wOffset,
                                                     size_t hOffset, size_t width, size_t height, cudaMemcpyKind kind) {
  return copy_array_2d(false, src, wOffset, hOffset, {dst, dpitch}, width, height, kind, kSynchronousPerThread);
}
CUDART_EXPORT cudaError_t cudaMemcpy2DFromArrayAsync(void* dst, size_t dpitch, cudaArray_const_t src, size_t wOffset,
                                                     size_t hOffset, size_t width, size_t height, cudaMemcpyKind kind,
                                                     cudaStream_t stream) {
  return copy_array_2d(false, src, wOffset, hOffset, {dst, dpitch}, width, height, kind, {stream, true, false});
}
CUDART_EXPORT cudaError_t cudaMemcpy2DFromArrayAsync_ptsz(void* dst, size_t dpitch, cudaArray_const_t src,
                                                          size_t wOffset, size_t hOffset, size_t width, size_t height,
                                                          cudaMemcpyKind kind, cudaStream_t stream) {
  return copy_array_2d(false, src, wOffset, hOffset, {dst, dpitch}, width, height, kind, {stream, true, true});
}
CUDART_EXPORT cudaError_t cudaMemcpyToArray(cudaArray_t dst, size_t wOffset, size_t hOffset, const void* src,
                                            size_t count, cudaMemcpyKind kind) {
  return copy_array_1d(true, dst, wOffset, hOffset, src, count, kind, kSynchronous);
}
CUDART_EXPORT cudaError_t cudaMemcpyToArray_ptds(cudaArray_t dst, size_t wOffset, size_t hOffset, const void* src,
                                                 size_t count, cudaMemcpyKind kind) {
  return copy_array_1d(true, dst, wOffset, hOffset, src, count, kind, kSynchronousPerThread);
}
CUDART_EXPORT cudaError_t cudaMemcpyToArrayAsync(cudaArray_t dst, size_t wOffset, size_t hOffset, const void* src,
                                                 size_t count, cudaMemcpyKind kind, cudaStream_t stream) {
  return copy_array_1d(true, dst, wOffset, hOffset, src, count, kind, {stream, true, false});
}
CUDART_EXPORT cudaError_t cudaMemcpyToArrayAsync_ptsz(cudaArray_t dst, size_t wOffset, size_t hOffset, const void* src,
                                                      size_t count, cudaMemcpyKind kind, cudaStream_t stream) {
  return copy_array_1d(true, dst, wOffset, hOffset, src, count, kind, {stream, true, true});
}
CUDART_EXPORT cudaError_t cudaMemcpyFromArray(void* dst, cudaArray_const_t src, size_t wOffset, size_t hOffset,
                                              size_t count, cudaMemcpyKind kind) {
  return copy_array_1d(false, src, wOffset, hOffset, dst, count, kind, kSynchronous);
}
CUDART_EXPORT cudaError_t cudaMemcpyFromArray_ptds(void* dst, cudaArray_const_t src, size_t wOffset, size_t hOffset,
                                                   size_t count, cudaMemcpyKind kind) {
  return copy_array_1d(false, src, wOffset, hOffset, dst, count, kind, kSynchronousPerThread);
}
CUDART_EXPORT cudaError_t cudaMemcpyFromArrayAsync(void* dst, cudaArray_const_t src, size_t wOffset, size_t hOffset,
                                                   size_t count, cudaMemcpyKind kind, cudaStream_t stream) {
  return copy_array_1d(false, src, wOffset, hOffset, dst, count, kind, {stream, true, false});
}
CUDART_EXPORT cudaError_t cudaMemcpyFromArrayAsync_ptsz(void* dst, cudaArray_const_t src, size_t wOffset,
                                                        size_t hOffset, size_t count, cudaMemcpyKind kind,
                                                        cudaStream_t stream) {
  return copy_array_1d(false, src, wOffset, hOffset, dst, count, kind, {stream, true, true});
}
CUDART_EXPORT cudaError_t cudaMemcpyArrayToArray(cudaArray_t dst, size_t wOffsetDst, size_t hOffsetDst,
                                                 cudaArray_const_t src, size_t wOffsetSrc, size_t hOffsetSrc,
                                                 size_t count, cudaMemcpyKind kind) {
  return copy_arrays_1d({dst, wOffsetDst, hOffsetDst}, {src, wOffsetSrc, hOffsetSrc}, count, kind, false);
}
CUDART_EXPORT cudaError_t cudaMemcpyArrayToArray_ptds(cudaArray_t dst, size_t wOffsetDst, size_t hOffsetDst,
                                                      cudaArray_const_t src, size_t wOffsetSrc, size_t hOffsetSrc,
                                                      size_t count, cudaMemcpyKind kind) {
  return copy_arrays_1d({dst, wOffsetDst, hOffsetDst}, {src, wOffsetSrc, hOffsetSrc}, count, kind, true);
}
CUDART_EXPORT cudaError_t cudaMemcpy2DArrayToArray(cudaArray_t dst, size_t wOffsetDst, size_t hOffsetDst,
                                                   cudaArray_const_t src, size_t wOffsetSrc, size_t hOffsetSrc,
                                                   size_t width, size_t height, cudaMemcpyKind kind) {
  return copy_arrays_2d({dst, wOffsetDst, hOffsetDst}, {src, wOffsetSrc, hOffsetSrc}, width, height, kind, false);
}
CUDART_EXPORT cudaError_t cudaMemcpy2DArrayToArray_ptds(cudaArray_t dst, size_t wOffsetDst, size_t hOffsetDst,
                                                        cudaArray_const_t src, size_t wOffsetSrc, size_t hOffsetSrc,
                                                        size_t width, size_t height, cudaMemcpyKind kind) {
  return copy_arrays_2d({dst, wOffsetDst, hOffsetDst}, {src, wOffsetSrc, hOffsetSrc}, width, height, kind, true);
}
