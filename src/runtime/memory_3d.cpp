// 3D memory: pitched allocations of a box (cudaMalloc3D), 3D copies of pitched linear memory and
// arrays (cudaMemcpy3D), between devices (cudaMemcpy3DPeer) and 3D memsets (cudaMemset3D), with their
// asynchronous and per-thread forms, through the driver's 3D copy, 3D peer copy and 2D memset.
#include "api.hpp"
#include "graph_params.hpp"

extern "C" {
CUresult cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D* pCopy);
CUresult cuMemcpy3DPeer_ptds(const CUDA_MEMCPY3D_PEER* pCopy);
CUresult cuMemsetD2D8_v2_ptds(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width, size_t Height);
cudaError_t cudaMemcpy3D_ptds(const cudaMemcpy3DParms* p);
cudaError_t cudaMemcpy3DAsync_ptsz(const cudaMemcpy3DParms* p, cudaStream_t stream);
cudaError_t cudaMemcpy3DPeer_ptds(const cudaMemcpy3DPeerParms* p);
cudaError_t cudaMemcpy3DPeerAsync_ptsz(const cudaMemcpy3DPeerParms* p, cudaStream_t stream);
cudaError_t cudaMemset3D_ptds(cudaPitchedPtr pitchedDevPtr, int value, cudaExtent extent);
cudaError_t cudaMemset3DAsync_ptsz(cudaPitchedPtr pitchedDevPtr, int value, cudaExtent extent, cudaStream_t stream);
}

namespace streampool::runtime {
namespace {

cudaError_t copy_3d(const cudaMemcpy3DParms* params, cudaStream_t stream, bool asynchronous, bool per_thread) noexcept {
  if (params == nullptr) return finish(cudaErrorInvalidValue);
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  CUDA_MEMCPY3D copy;
  if (const cudaError_t error = driver_copy_3d(*params, &copy); error != cudaSuccess) return finish(error);
  if (copy.WidthInBytes == 0 || copy.Height == 0 || copy.Depth == 0) return cudaSuccess;
  if (asynchronous) return finish(cuMemcpy3DAsync(&copy, driver_stream(stream, per_thread)));
  return finish(per_thread ? cuMemcpy3D_v2_ptds(&copy) : cuMemcpy3D(&copy));
}

// A peer copy is a 3D copy of device memory (or arrays) whose two sides name their devices' primary
// contexts.
cudaError_t copy_3d_peer(const cudaMemcpy3DPeerParms* params, cudaStream_t stream, bool asynchronous,
                         bool per_thread) noexcept {
  if (params == nullptr) return finish(cudaErrorInvalidValue);
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  CUcontext dst_context = nullptr;
  CUcontext src_context = nullptr;
  if (const cudaError_t error = primary_context(params->dstDevice, &dst_context); error != cudaSuccess) {
    return finish(error);
  }
  if (const cudaError_t error = primary_context(params->srcDevice, &src_context); error != cudaSuccess) {
    return finish(error);
  }
  cudaMemcpy3DParms same_device{};
  same_device.srcArray = params->srcArray;
  same_device.srcPos = params->srcPos;
  same_device.srcPtr = params->srcPtr;
  same_device.dstArray = params->dstArray;
  same_device.dstPos = params->dstPos;
  same_device.dstPtr = params->dstPtr;
  same_device.extent = params->extent;
  same_device.kind = cudaMemcpyDeviceToDevice;
  CUDA_MEMCPY3D copy;
  if (const cudaError_t error = driver_copy_3d(same_device, &copy); error != cudaSuccess) return finish(error);
  if (copy.WidthInBytes == 0 || copy.Height == 0 || copy.Depth == 0) return cudaSuccess;
  CUDA_MEMCPY3D_PEER peer{};
  peer.srcXInBytes = copy.srcXInBytes;
  peer.srcY = copy.srcY;
  peer.srcZ = copy.srcZ;
  peer.srcMemoryType = copy.srcMemoryType;
  peer.srcDevice = copy.srcDevice;
  peer.srcArray = copy.srcArray;
  peer.srcContext = src_context;
  peer.srcPitch = copy.srcPitch;
  peer.srcHeight = copy.srcHeight;
  peer.dstXInBytes = copy.dstXInBytes;
  peer.dstY = copy.dstY;
  peer.dstZ = copy.dstZ;
  peer.dstMemoryType = copy.dstMemoryType;
  peer.dstDevice = copy.dstDevice;
  peer.dstArray = copy.dstArray;
  peer.dstContext = dst_context;
  peer.dstPitch = copy.dstPitch;
  peer.dstHeight = copy.dstHeight;
  peer.WidthInBytes = copy.WidthInBytes;
  peer.Height = copy.Height;
  peer.Depth = copy.Depth;
  if (asynchronous) return finish(cuMemcpy3DPeerAsync(&peer, driver_stream(stream, per_thread)));
  return finish(per_thread ? cuMemcpy3DPeer_ptds(&peer) : cuMemcpy3DPeer(&peer));
}

// A 3D memset is a 2D memset of every slice; slices that follow on without a gap (as cudaMalloc3D
// lays them out, ysize == extent.height) are one 2D memset of height * depth rows.
cudaError_t set_3d(cudaPitchedPtr pointer, int value, cudaExtent extent, cudaStream_t stream, bool asynchronous,
                   bool per_thread) noexcept {
  if (extent.width == 0 || extent.height == 0 || extent.depth == 0) return cudaSuccess;
  if (pointer.ptr == nullptr) return finish(cudaErrorInvalidValue);
  if ((extent.height > 1 || extent.depth > 1) && pointer.pitch < extent.width) return finish(cudaErrorInvalidValue);
  if (extent.depth > 1 && pointer.ysize < extent.height) return finish(cudaErrorInvalidValue);
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  const auto byte = static_cast<unsigned char>(value);
  const auto set_rows = [&](CUdeviceptr start, std::size_t rows) {
    if (asynchronous) {
      return cuMemsetD2D8Async(start, pointer.pitch, byte, extent.width, rows, driver_stream(stream, per_thread));
    }
    return per_thread ? cuMemsetD2D8_v2_ptds(start, pointer.pitch, byte, extent.width, rows)
                      : cuMemsetD2D8(start, pointer.pitch, byte, extent.width, rows);
  };
  const CUdeviceptr base = unified_address(pointer.ptr);
  if (extent.depth == 1 || pointer.ysize == extent.height) return finish(set_rows(base, extent.height * extent.depth));
  const std::size_t slice_bytes = pointer.pitch * pointer.ysize;
  for (std::size_t slice = 0; slice < extent.depth; ++slice) {
    if (const CUresult result = set_rows(base + slice * slice_bytes, extent.height); result != CUDA_SUCCESS) {
      return finish(result);
    }
  }
  return cudaSuccess;
}

}  // namespace
}  // namespace streampool::runtime

using namespace streampool::runtime;

// A box is `depth` slices of `height` pitched rows, one pitched allocation (cudaMallocPitch's pitch).
CUDART_EXPORT cudaError_t cudaMalloc3D(cudaPitchedPtr* pitchedDevPtr, cudaExtent extent) {
  if (pitchedDevPtr == nullptr) return finish(cudaErrorInvalidValue);
  *pitchedDevPtr = cudaPitchedPtr{nullptr, extent.width, extent.width, extent.height};
  if (extent.depth != 0 && extent.height > ~std::size_t{0} / extent.depth) return finish(cudaErrorMemoryAllocation);
  void* pointer = nullptr;
  std::size_t pitch = 0;
  if (const cudaError_t error = cudaMallocPitch(&pointer, &pitch, extent.width, extent.height * extent.depth);
      error != cudaSuccess) {
    return error;
  }
  *pitchedDevPtr = cudaPitchedPtr{pointer, pitch, extent.width, extent.height};
  return cudaSuccess;
}

CUDART_EXPORT cudaError_t cudaMemcpy3D(const cudaMemcpy3DParms* p) { return copy_3d(p, nullptr, false, false); }
CUDART_EXPORT cudaError_t cudaMemcpy3D_ptds(const cudaMemcpy3DParms* p) { return copy_3d(p, nullptr, false, true); }
CUDART_EXPORT cudaError_t cudaMemcpy3DAsync(const cudaMemcpy3DParms* p, cudaStream_t stream) {
  return copy_3d(p, stream, true, false);
}
CUDART_EXPORT cudaError_t cudaMemcpy3DAsync_ptsz(const cudaMemcpy3DParms* p, cudaStream_t stream) {
  return copy_3d(p, stream, true, true);
}

CUDART_EXPORT cudaError_t cudaMemcpy3DPeer(const cudaMemcpy3DPeerParms* p) {
  return copy_3d_peer(p, nullptr, false, false);
}
CUDART_EXPORT cudaError_t cudaMemcpy3DPeer_ptds(const cudaMemcpy3DPeerParms* p) {
  return copy_3d_peer(p, nullptr, false, true);
}
CUDART_EXPORT cudaError_t cudaMemcpy3DPeerAsync(const cudaMemcpy3DPeerParms* p, cudaStream_t stream) {
  return copy_3d_peer(p, stream, true, false);
}
CUDART_EXPORT cudaError_t cudaMemcpy3DPeerAsync_ptsz(const cudaMemcpy3DPeerParms* p, cudaStream_t stream) {
  return copy_3d_peer(p, stream, true, true);
}

CUDART_EXPORT cudaError_t cudaMemset3D(cudaPitchedPtr pitchedDevPtr, int value, cudaExtent extent) {
  return set_3d(pitchedDevPtr, value, extent, nullptr, false, false);
}
CUDART_EXPORT cudaError_t cudaMemset3D_ptds(cudaPitchedPtr pitchedDevPtr, int value, cudaExtent extent) {
  return set_3d(pitchedDevPtr, value, extent, nullptr, false, true);
}
CUDART_EXPORT cudaError_t cudaMemset3DAsync(cudaPitchedPtr pitchedDevPtr, int value, cudaExtent extent,
                                            cudaStream_t stream) {
  return set_3d(pitchedDevPtr, value, extent, stream, true, false);
}
CUDART_EXPORT cudaError_t cudaMemset3DAsync_ptsz(cudaPitchedPtr pitchedDevPtr, int value, cudaExtent extent,
                                                 cudaStream_t stream) {
  return set_3d(pitchedDevPtr, value, extent, stream, true, true);
}
