// 3D copies of pitched linear memory and arrays (cudaMemcpy3D and its asynchronous and per-thread
// forms), through the driver's 3D copy.
#include "api.hpp"
#include "graph_params.hpp"

extern "C" {
CUresult cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D* pCopy);
cudaError_t cudaMemcpy3D_ptds(const cudaMemcpy3DParms* p);
cudaError_t cudaMemcpy3DAsync_ptsz(const cudaMemcpy3DParms* p, cudaStream_t stream);
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

}  // namespace
}  // namespace streampool::runtime

using namespace streampool::runtime;

CUDART_EXPORT cudaError_t cudaMemcpy3D(const cudaMemcpy3DParms* p) { return copy_3d(p, nullptr, false, false); }
CUDART_EXPORT cudaError_t cudaMemcpy3D_ptds(const cudaMemcpy3DParms* p) { return copy_3d(p, nullptr, false, true); }
CUDART_EXPORT cudaError_t cudaMemcpy3DAsync(const cudaMemcpy3DParms* p, cudaStream_t stream) {
  return copy_3d(p, stream, true, false);
}
CUDART_EXPORT cudaError_t cudaMemcpy3DAsync_ptsz(const cudaMemcpy3DParms* p, cudaStream_t stream) {
  return copy_3d(p, stream, true, true);
}
