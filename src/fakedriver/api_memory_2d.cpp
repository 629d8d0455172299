// Entry points: pitched (2D) allocations, 2D and 3D copies and 2D memsets, the forms cudart 13 uses
// for cudaMallocPitch, cudaMemcpy2D/3D and cudaMemset2D, synchronous ones on the default stream,
// asynchronous ones in stream order, between linear memory (unified, host or device addresses) and
// fake arrays (array.hpp). Every row's device side must lie in memory the fake handed out, every
// array row inside the array (an error instead of a crash in the test process). A 3D peer copy
// (cuMemcpy3DPeer) is a 3D copy once both contexts are known alive: all "devices" share the host's
// memory here.
#include <cstring>

#include "allocations.hpp"
#include "api_guard.hpp"
#include "array.hpp"
#include "context.hpp"
#include "driver.hpp"
#include "pointer_info.hpp"
#include "stream_ops.hpp"

namespace fake {
namespace {

constexpr DefaultStream kLegacy = DefaultStream::legacy;
constexpr DefaultStream kPerThread = DefaultStream::per_thread;
// Rows start 512 bytes apart at least, as NVIDIA's driver pads them on current GPUs.
constexpr std::size_t kPitchAlignment = 512;

CUresult alloc_pitch(CUdeviceptr* out, std::size_t* pitch, std::size_t width, std::size_t height, unsigned element) {
  Context* context = nullptr;
  if (CUresult status = require_current_context(context); status != CUDA_SUCCESS) return status;
  if (out == nullptr || pitch == nullptr || width == 0 || height == 0) return CUDA_ERROR_INVALID_VALUE;
  if (element != 4 && element != 8 && element != 16) return CUDA_ERROR_INVALID_VALUE;
  const std::size_t rounded = (width + kPitchAlignment - 1) / kPitchAlignment * kPitchAlignment;
  if (rounded < width || rounded > ~std::size_t{0} / height) return CUDA_ERROR_OUT_OF_MEMORY;
  std::uintptr_t address = 0;
  if (CUresult status = allocate_memory(MemoryKind::device, rounded * height, context, address); status != CUDA_SUCCESS) {
    return status;
  }
  *out = address;
  *pitch = rounded;
  return CUDA_SUCCESS;
}

// One side of a copy: its first byte and pitch, and whether it must be memory the fake handed out.
struct Plane {
  std::uintptr_t start = 0;
  std::size_t pitch = 0;
  std::size_t slice = 0;    // bytes from one slice to the next (3D copies)
  bool device = false;
  std::uintptr_t end = 0;   // arrays: one past their last byte (the copy must stay inside)
};

// The plane of one side at (x bytes, y, z): linear memory with the given pitch and slice height,
// or an array with its own.
bool plane_of(CUmemorytype type, const void* host, CUdeviceptr device, CUarray array, std::size_t x, std::size_t y,
              std::size_t z, std::size_t pitch, std::size_t height, Plane& plane) {
  switch (type) {
    case CU_MEMORYTYPE_HOST: plane.start = reinterpret_cast<std::uintptr_t>(host); break;
    case CU_MEMORYTYPE_DEVICE: plane.start = device; plane.device = true; break;
    case CU_MEMORYTYPE_UNIFIED:
      plane.start = device;
      plane.device = lookup_pointer(device).has_value();
      break;
    case CU_MEMORYTYPE_ARRAY: {
      ArrayLayout layout;
      if (!array_layout(array, &layout)) return false;
      plane.start = layout.base;
      plane.end = layout.base + layout.pitch * layout.height * layout.depth;
      pitch = layout.pitch;
      height = layout.height;
      break;
    }
    default: return false;
  }
  plane.start += (z * height + y) * pitch + x;
  plane.pitch = pitch;
  plane.slice = pitch * height;
  return plane.start != 0;
}

bool rows_usable(const Plane& plane, std::size_t width, std::size_t height, std::size_t depth = 1) {
  if (width == 0 || height == 0 || depth == 0) return true;
  const std::size_t span = (depth - 1) * plane.slice + (height - 1) * plane.pitch + width;
  if (plane.end != 0) return width <= plane.pitch && plane.start + span <= plane.end;
  return !plane.device || device_range_usable(plane.start, span);
}

CUresult copy_2d(const CUDA_MEMCPY2D* copy, CUstream stream, DefaultStream default_stream, bool synchronous) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (copy == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const std::size_t width = copy->WidthInBytes;
  const std::size_t height = copy->Height;
  if (width == 0 || height == 0) return CUDA_SUCCESS;
  Plane src;
  Plane dst;
  if (!plane_of(copy->srcMemoryType, copy->srcHost, copy->srcDevice, copy->srcArray, copy->srcXInBytes, copy->srcY, 0,
                copy->srcPitch, 0, src) ||
      !plane_of(copy->dstMemoryType, copy->dstHost, copy->dstDevice, copy->dstArray, copy->dstXInBytes, copy->dstY, 0,
                copy->dstPitch, 0, dst)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  // A pitch shorter than a row would overlap rows; a single row needs no pitch.
  if ((height > 1 && (src.pitch < width || dst.pitch < width)) || !rows_usable(src, width, height) ||
      !rows_usable(dst, width, height)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return submit_to_stream(
      stream, default_stream,
      [src, dst, width, height] {
        for (std::size_t row = 0; row < height; ++row) {
          std::memmove(reinterpret_cast<void*>(dst.start + row * dst.pitch),
                       reinterpret_cast<const void*>(src.start + row * src.pitch), width);
        }
      },
      {}, synchronous);
}

CUresult copy_3d(const CUDA_MEMCPY3D* copy, CUstream stream, DefaultStream default_stream, bool synchronous) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (copy == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const std::size_t width = copy->WidthInBytes;
  const std::size_t height = copy->Height;
  const std::size_t depth = copy->Depth;
  if (width == 0 || height == 0 || depth == 0) return CUDA_SUCCESS;
  // A slice is pitch * height bytes; the planes start at (x, y) of slice z.
  Plane src;
  Plane dst;
  if (!plane_of(copy->srcMemoryType, copy->srcHost, copy->srcDevice, copy->srcArray, copy->srcXInBytes, copy->srcY,
                copy->srcZ, copy->srcPitch, copy->srcHeight, src) ||
      !plane_of(copy->dstMemoryType, copy->dstHost, copy->dstDevice, copy->dstArray, copy->dstXInBytes, copy->dstY,
                copy->dstZ, copy->dstPitch, copy->dstHeight, dst)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if ((height * depth > 1 && (src.pitch < width || dst.pitch < width)) ||
      (depth > 1 && (src.slice < height * src.pitch || dst.slice < height * dst.pitch)) ||
      !rows_usable(src, width, height, depth) || !rows_usable(dst, width, height, depth)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const std::size_t src_slice = src.slice;
  const std::size_t dst_slice = dst.slice;
  return submit_to_stream(
      stream, default_stream,
      [src, dst, width, height, depth, src_slice, dst_slice] {
        for (std::size_t slice = 0; slice < depth; ++slice) {
          for (std::size_t row = 0; row < height; ++row) {
            std::memmove(reinterpret_cast<void*>(dst.start + slice * dst_slice + row * dst.pitch),
                         reinterpret_cast<const void*>(src.start + slice * src_slice + row * src.pitch), width);
          }
        }
      },
      {}, synchronous);
}

CUresult copy_3d_peer(const CUDA_MEMCPY3D_PEER* peer, CUstream stream, DefaultStream default_stream,
                      bool synchronous) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (peer == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Driver& driver = Driver::instance();
  if (!driver.live_context(reinterpret_cast<const Context*>(peer->srcContext)) ||
      !driver.live_context(reinterpret_cast<const Context*>(peer->dstContext))) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  CUDA_MEMCPY3D copy{};
  copy.srcXInBytes = peer->srcXInBytes;
  copy.srcY = peer->srcY;
  copy.srcZ = peer->srcZ;
  copy.srcMemoryType = peer->srcMemoryType;
  copy.srcHost = peer->srcHost;
  copy.srcDevice = peer->srcDevice;
  copy.srcArray = peer->srcArray;
  copy.srcPitch = peer->srcPitch;
  copy.srcHeight = peer->srcHeight;
  copy.dstXInBytes = peer->dstXInBytes;
  copy.dstY = peer->dstY;
  copy.dstZ = peer->dstZ;
  copy.dstMemoryType = peer->dstMemoryType;
  copy.dstHost = peer->dstHost;
  copy.dstDevice = peer->dstDevice;
  copy.dstArray = peer->dstArray;
  copy.dstPitch = peer->dstPitch;
  copy.dstHeight = peer->dstHeight;
  copy.WidthInBytes = peer->WidthInBytes;
  copy.Height = peer->Height;
  copy.Depth = peer->Depth;
  return copy_3d(&copy, stream, default_stream, synchronous);
}

CUresult set_2d(CUdeviceptr dst, std::size_t pitch, unsigned char value, std::size_t width, std::size_t height,
                CUstream stream, DefaultStream default_stream, bool synchronous) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (width == 0 || height == 0) return CUDA_SUCCESS;
  Plane plane;
  plane.start = dst;
  plane.pitch = pitch;
  plane.device = true;
  if (dst == 0 || (height > 1 && pitch < width) || !rows_usable(plane, width, height)) return CUDA_ERROR_INVALID_VALUE;
  return submit_to_stream(
      stream, default_stream,
      [plane, value, width, height] {
        for (std::size_t row = 0; row < height; ++row) {
          std::memset(reinterpret_cast<void*>(plane.start + row * plane.pitch), value, width);
        }
      },
      {}, synchronous);
}

}  // namespace
}  // namespace fake

using namespace fake;

FAKE_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pPitch, size_t WidthInBytes, size_t Height,
                                        unsigned int ElementSizeBytes) {
  FAKE_ENTRY(alloc_pitch(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes));
}

FAKE_EXPORT CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D* pCopy) { FAKE_ENTRY(copy_2d(pCopy, nullptr, kLegacy, true)); }
FAKE_EXPORT CUresult cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D* pCopy) {
  FAKE_ENTRY(copy_2d(pCopy, nullptr, kPerThread, true));
}
FAKE_EXPORT CUresult cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D* pCopy) {
  FAKE_ENTRY(copy_2d(pCopy, nullptr, kLegacy, true));
}
FAKE_EXPORT CUresult cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D* pCopy) {
  FAKE_ENTRY(copy_2d(pCopy, nullptr, kPerThread, true));
}
FAKE_EXPORT CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D* pCopy, CUstream hStream) {
  FAKE_ENTRY(copy_2d(pCopy, hStream, kLegacy, false));
}
FAKE_EXPORT CUresult cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D* pCopy, CUstream hStream) {
  FAKE_ENTRY(copy_2d(pCopy, hStream, kPerThread, false));
}

FAKE_EXPORT CUresult cuMemcpy3D_v2(const CUDA_MEMCPY3D* pCopy) { FAKE_ENTRY(copy_3d(pCopy, nullptr, kLegacy, true)); }
FAKE_EXPORT CUresult cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D* pCopy) {
  FAKE_ENTRY(copy_3d(pCopy, nullptr, kPerThread, true));
}
FAKE_EXPORT CUresult cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D* pCopy, CUstream hStream) {
  FAKE_ENTRY(copy_3d(pCopy, hStream, kLegacy, false));
}
FAKE_EXPORT CUresult cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D* pCopy, CUstream hStream) {
  FAKE_ENTRY(copy_3d(pCopy, hStream, kPerThread, false));
}

FAKE_EXPORT CUresult cuMemcpy3DPeer(const CUDA_MEMCPY3D_PEER* pCopy) {
  FAKE_ENTRY(copy_3d_peer(pCopy, nullptr, kLegacy, true));
}
FAKE_EXPORT CUresult cuMemcpy3DPeer_ptds(const CUDA_MEMCPY3D_PEER* pCopy) {
  FAKE_ENTRY(copy_3d_peer(pCopy, nullptr, kPerThread, true));
}
FAKE_EXPORT CUresult cuMemcpy3DPeerAsync(const CUDA_MEMCPY3D_PEER* pCopy, CUstream hStream) {
  FAKE_ENTRY(copy_3d_peer(pCopy, hStream, kLegacy, false));
}
FAKE_EXPORT CUresult cuMemcpy3DPeerAsync_ptsz(const CUDA_MEMCPY3D_PEER* pCopy, CUstream hStream) {
  FAKE_ENTRY(copy_3d_peer(pCopy, hStream, kPerThread, false));
}

FAKE_EXPORT CUresult cuMemsetD2D8_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
                                     size_t Height) {
  FAKE_ENTRY(set_2d(dstDevice, dstPitch, uc, Width, Height, nullptr, kLegacy, true));
}
FAKE_EXPORT CUresult cuMemsetD2D8_v2_ptds(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
                                          size_t Height) {
  FAKE_ENTRY(set_2d(dstDevice, dstPitch, uc, Width, Height, nullptr, kPerThread, true));
}
FAKE_EXPORT CUresult cuMemsetD2D8Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
                                       size_t Height, CUstream hStream) {
  FAKE_ENTRY(set_2d(dstDevice, dstPitch, uc, Width, Height, hStream, kLegacy, false));
}
FAKE_EXPORT CUresult cuMemsetD2D8Async_ptsz(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
                                            size_t Height, CUstream hStream) {
  FAKE_ENTRY(set_2d(dstDevice, dstPitch, uc, Width, Height, hStream, kPerThread, false));
}
