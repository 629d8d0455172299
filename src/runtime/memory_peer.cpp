// Copies between devices (cudaMemcpyPeer, cudaMemcpyPeerAsync): the driver's peer copy between the two
// devices' primary contexts, retained on first use as the runtime retains every device's. Peer access
// need not be enabled: the driver stages the copy when it is not.
#include "api.hpp"

namespace streampool::runtime {
namespace {

cudaError_t copy_peer(void* dst, int dst_device, const void* src, int src_device, std::size_t count, cudaStream_t stream,
                      bool asynchronous) noexcept {
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  CUcontext dst_context = nullptr;
  CUcontext src_context = nullptr;
  if (const cudaError_t error = primary_context(dst_device, &dst_context); error != cudaSuccess) return finish(error);
  if (const cudaError_t error = primary_context(src_device, &src_context); error != cudaSuccess) return finish(error);
  if (count == 0) return cudaSuccess;
  const CUdeviceptr to = reinterpret_cast<CUdeviceptr>(dst);
  const CUdeviceptr from = reinterpret_cast<CUdeviceptr>(src);
  return finish(asynchronous ? cuMemcpyPeerAsync(to, dst_context, from, src_context, count, stream)
                             : cuMemcpyPeer(to, dst_context, from, src_context, count));
}

}  // namespace
}  // namespace streampool::runtime

using namespace streampool::runtime;

CUDART_EXPORT cudaError_t cudaMemcpyPeer(void* dst, int dstDevice, const void* src, int srcDevice, size_t count) {
  return copy_peer(dst, dstDevice, src, srcDevice, count, nullptr, false);
}

CUDART_EXPORT cudaError_t cudaMemcpyPeerAsync(void* dst, int dstDevice, const void* src, int srcDevice, size_t count,
                                              cudaStream_t stream) {
  return copy_peer(dst, dstDevice, src, srcDevice, count, stream, true);
}
