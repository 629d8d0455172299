// Entry points: copies between contexts (cuMemcpyPeer, cudaMemcpyPeer's driver call). All "devices"
// share the host's memory here, so a peer copy is a copy in stream order once both contexts are
// known to be alive and both ranges lie in memory the fake handed out.
#include <cstring>

#include "api_guard.hpp"
#include "context.hpp"
#include "driver.hpp"
#include "pointer_info.hpp"
#include "stream_ops.hpp"

namespace fake {
namespace {

CUresult copy_peer(CUdeviceptr dst, CUcontext dst_context, CUdeviceptr src, CUcontext src_context, std::size_t bytes,
                   CUstream stream, DefaultStream default_stream, bool synchronous) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  Driver& driver = Driver::instance();
  if (!driver.live_context(reinterpret_cast<const Context*>(dst_context)) ||
      !driver.live_context(reinterpret_cast<const Context*>(src_context))) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  if (bytes == 0) return CUDA_SUCCESS;
  if (!device_range_usable(dst, bytes) || !device_range_usable(src, bytes)) return CUDA_ERROR_INVALID_VALUE;
  return submit_to_stream(
      stream, default_stream,
      [dst, src, bytes] {
        std::memmove(reinterpret_cast<void*>(static_cast<std::uintptr_t>(dst)),
                     reinterpret_cast<const void*>(static_cast<std::uintptr_t>(src)), bytes);
      },
      {}, synchronous);
}

}  // namespace
}  // namespace fake

using namespace fake;

FAKE_EXPORT CUresult cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                                  CUcontext srcContext, size_t ByteCount) {
  FAKE_ENTRY(copy_peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, nullptr, DefaultStream::legacy, true));
}
FAKE_EXPORT CUresult cuMemcpyPeer_ptds(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                                       CUcontext srcContext, size_t ByteCount) {
  FAKE_ENTRY(
      copy_peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, nullptr, DefaultStream::per_thread, true));
}
FAKE_EXPORT CUresult cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                                       CUcontext srcContext, size_t ByteCount, CUstream hStream) {
  FAKE_ENTRY(copy_peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream, DefaultStream::legacy, false));
}
FAKE_EXPORT CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                                            CUcontext srcContext, size_t ByteCount, CUstream hStream) {
  FAKE_ENTRY(
      copy_peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream, DefaultStream::per_thread, false));
}
