// cudaStreamAddCallback: the driver's stream callback with the runtime's signature. The callback gets
// the stream as the caller named it and the runtime's code for the stream's status; the adapter that
// carries both lives until the callback ran (the driver calls it exactly once).
#include "api.hpp"

extern "C" {
cudaError_t cudaStreamAddCallback_ptsz(cudaStream_t stream, cudaStreamCallback_t callback, void* userData,
                                       unsigned int flags);
}

namespace streampool::runtime {
namespace {

struct PendingCallback {
  cudaStreamCallback_t callback;
  cudaStream_t stream;
  void* user_data;
};

void CUDA_CB run_callback(CUstream, CUresult status, void* data) {
  PendingCallback* pending = static_cast<PendingCallback*>(data);
  const cudaError_t error = status == CUDA_SUCCESS ? cudaSuccess : to_runtime_error(status);
  pending->callback(pending->stream, error, pending->user_data);
  delete pending;
}

cudaError_t add_callback(cudaStream_t stream, cudaStreamCallback_t callback, void* user_data, unsigned flags,
                         bool per_thread) noexcept {
  // Flags are reserved and must be 0.
  if (callback == nullptr || flags != 0) return finish(cudaErrorInvalidValue);
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  return guarded([&] {
    auto* pending = new PendingCallback{callback, stream, user_data};
    const CUresult result = cuStreamAddCallback(driver_stream(stream, per_thread), run_callback, pending, 0);
    if (result != CUDA_SUCCESS) delete pending;
    return finish(result);
  });
}

}  // namespace
}  // namespace streampool::runtime

using namespace streampool::runtime;

CUDART_EXPORT cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback, void* userData,
                                                unsigned int flags) {
  return add_callback(stream, callback, userData, flags, false);
}
CUDART_EXPORT cudaError_t cudaStreamAddCallback_ptsz(cudaStream_t stream, cudaStreamCallback_t callback,
                                                     void* userData, unsigned int flags) {
  return add_callback(stream, callback, userData, flags, true);
}
