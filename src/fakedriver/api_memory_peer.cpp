// Entry points: copies between contexts (cuMemcpyPeer, cudaMemcpyPeer's driver call). All "devices"
// share the host's memory here, so a peer copy is a copy in stream order once both contexts are
// known to be alive and both ranges lie in memory the fake handed out. A batch of copies
// (cuMemcpyBatchAsync) is checked whole (counts, attribute ranges and access orders, a stream other
// than the legacy one, every device range) and then runs as one piece of work in stream order.
#include <cstring>
#include <vector>

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

bool side_usable(CUdeviceptr address, std::size_t bytes) {
  if (address == 0) return false;
  return !lookup_pointer(address).has_value() || device_range_usable(address, bytes);
}

// attrsIdxs starts at 0 and rises, each below count; every attribute names an access order.
bool attributes_valid(std::size_t count, const CUmemcpyAttributes* attrs, const std::size_t* indices,
                      std::size_t attr_count) {
  if (attrs == nullptr || indices == nullptr || attr_count == 0 || attr_count > count || indices[0] != 0) return false;
  for (std::size_t i = 0; i < attr_count; ++i) {
    if (indices[i] >= count || (i != 0 && indices[i] <= indices[i - 1])) return false;
    if (attrs[i].srcAccessOrder < CU_MEMCPY_SRC_ACCESS_ORDER_STREAM ||
        attrs[i].srcAccessOrder > CU_MEMCPY_SRC_ACCESS_ORDER_ANY) {
      return false;
    }
  }
  return true;
}

CUresult copy_batch(const CUdeviceptr* dsts, const CUdeviceptr* srcs, const std::size_t* sizes, std::size_t count,
                    const CUmemcpyAttributes* attrs, const std::size_t* indices, std::size_t attr_count,
                    CUstream stream, DefaultStream default_stream) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (stream == CU_STREAM_LEGACY || (stream == nullptr && default_stream == DefaultStream::legacy)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (count == 0 || dsts == nullptr || srcs == nullptr || sizes == nullptr ||
      !attributes_valid(count, attrs, indices, attr_count)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  struct Piece {
    CUdeviceptr dst;
    CUdeviceptr src;
    std::size_t bytes;
  };
  std::vector<Piece> pieces;
  pieces.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    if (sizes[i] == 0 || !side_usable(dsts[i], sizes[i]) || !side_usable(srcs[i], sizes[i])) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    pieces.push_back({dsts[i], srcs[i], sizes[i]});
  }
  return submit_to_stream(stream, default_stream, [pieces = std::move(pieces)] {
    for (const Piece& piece : pieces) {
      std::memmove(reinterpret_cast<void*>(static_cast<std::uintptr_t>(piece.dst)),
                   reinterpret_cast<const void*>(static_cast<std::uintptr_t>(piece.src)), piece.bytes);
    }
  });
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
FAKE_EXPORT CUresult cuMemcpyBatchAsync_v2(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
                                          CUmemcpyAttributes* attrs, size_t* attrsIdxs, size_t numAttrs,
                                          CUstream hStream) {
  FAKE_ENTRY(copy_batch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, hStream, DefaultStream::legacy));
}
FAKE_EXPORT CUresult cuMemcpyBatchAsync_v2_ptsz(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
                                               CUmemcpyAttributes* attrs, size_t* attrsIdxs, size_t numAttrs,
                                               CUstream hStream) {
  FAKE_ENTRY(copy_batch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, hStream, DefaultStream::per_thread));
}
