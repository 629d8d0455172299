// The runtime's descriptions of graph nodes and copies translated into the driver's: a kernel named by
// its host stub becomes the CUfunction of the current context (its module loaded), a 3D copy of
// pitched linear memory or arrays becomes a CUDA_MEMCPY3D (linear memory by unified pointers), a memset is the same
// fields plus the context. Each answers the runtime's error for arguments it cannot express.
#pragma once

#include "api.hpp"

namespace streampool::runtime {

struct KernelLaunchShape {
  const void* func;  // host stub or cudaKernel_t
  dim3 grid;
  dim3 block;
  unsigned shared_bytes;
  void** params;
  void** extra;
};

// The context must be current (ensure_context()).
cudaError_t driver_kernel_params(const KernelLaunchShape& shape, CUDA_KERNEL_NODE_PARAMS* out) noexcept;
// A kernel node's runtime parameters as the driver's: null is invalid; makes the context ready.
cudaError_t driver_kernel_params(const cudaKernelNodeParams* params, CUDA_KERNEL_NODE_PARAMS* out) noexcept;
// Linear memory or arrays (whose descriptions are asked of the driver: the context must be current).
cudaError_t driver_copy_3d(const cudaMemcpy3DParms& params, CUDA_MEMCPY3D* out) noexcept;
// A 1D copy of `count` bytes as a 3D one.
cudaError_t driver_copy_1d(void* dst, const void* src, std::size_t count, cudaMemcpyKind kind, CUDA_MEMCPY3D* out) noexcept;
CUDA_MEMSET_NODE_PARAMS driver_memset(const cudaMemsetParams& params) noexcept;
// The runtime's 3D copy as the driver holds it, back (a graph node's parameters): arrays'
// positions and the width in elements again, linear sides as pitched pointers, the kind from which
// sides are host memory (cudaMemcpyDefault when neither is). The context must be current.
cudaError_t runtime_copy_3d(const CUDA_MEMCPY3D& copy, cudaMemcpy3DParms* out) noexcept;
// The generic node parameters (cudaGraphAddNode, cudaGraphNodeSetParams) as the driver's; a kernel
// or a copy needs the context current.
cudaError_t driver_node_params(const cudaGraphNodeParams& params, CUgraphNodeParams* out) noexcept;
// What the driver hands back in the generic parameters (a conditional node's bodies, an allocation's
// address), copied into the runtime's.
void copy_outputs(const CUgraphNodeParams& driver, cudaGraphNodeParams* params) noexcept;
// The calling thread's current context (nullptr if none).
CUcontext current_context() noexcept;

}  // namespace streampool::runtime
