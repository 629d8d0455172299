// Graph nodes described by the generic parameters (cudaGraphAddNode), conditional nodes and their
// handles, and capturing into an existing graph (the way a conditional node's body is filled) with
// the capture's dependencies updated. The generic parameters are the driver's, field for field,
// except where the runtime names a kernel by host stub and leaves out the context: those are filled
// in from the current context.
#include <cstring>

#include "api.hpp"
#include "graph_params.hpp"

extern "C" {
cudaError_t cudaStreamBeginCaptureToGraph_ptsz(cudaStream_t stream, cudaGraph_t graph,
                                               const cudaGraphNode_t* dependencies,
                                               const cudaGraphEdgeData* dependencyData, size_t numDependencies,
                                               cudaStreamCaptureMode mode);
cudaError_t cudaStreamUpdateCaptureDependencies_ptsz(cudaStream_t stream, cudaGraphNode_t* dependencies,
                                                     const cudaGraphEdgeData* dependencyData, size_t numDependencies,
                                                     unsigned int flags);
CUresult cuStreamUpdateCaptureDependencies_v2(CUstream hStream, CUgraphNode* dependencies,
                                              const CUgraphEdgeData* dependencyData, size_t numDependencies,
                                              unsigned int flags);
}

namespace streampool::runtime {
namespace {

static_assert(sizeof(cudaGraphNodeParams) == sizeof(CUgraphNodeParams));
static_assert(sizeof(CUDA_KERNEL_NODE_PARAMS) == sizeof(CUDA_KERNEL_NODE_PARAMS_v3));
static_assert(sizeof(cudaHostNodeParamsV2) == sizeof(CUDA_HOST_NODE_PARAMS_v2));
static_assert(sizeof(cudaChildGraphNodeParams) == sizeof(CUDA_CHILD_GRAPH_NODE_PARAMS));
static_assert(sizeof(cudaEventRecordNodeParams) == sizeof(CUDA_EVENT_RECORD_NODE_PARAMS));
static_assert(sizeof(cudaEventWaitNodeParams) == sizeof(CUDA_EVENT_WAIT_NODE_PARAMS));
static_assert(sizeof(cudaMemAllocNodeParamsV2) == sizeof(CUDA_MEM_ALLOC_NODE_PARAMS_v2));
static_assert(sizeof(cudaMemFreeNodeParams) == sizeof(CUDA_MEM_FREE_NODE_PARAMS));
static_assert(offsetof(cudaMemAllocNodeParamsV2, dptr) == offsetof(CUDA_MEM_ALLOC_NODE_PARAMS_v2, dptr));
static_assert(sizeof(cudaExternalSemaphoreSignalNodeParamsV2) == sizeof(CUDA_EXT_SEM_SIGNAL_NODE_PARAMS_v2) &&
              sizeof(cudaExternalSemaphoreWaitNodeParamsV2) == sizeof(CUDA_EXT_SEM_WAIT_NODE_PARAMS_v2));

cudaError_t capture_to_graph(cudaStream_t stream, cudaGraph_t graph, const cudaGraphNode_t* dependencies,
                             const cudaGraphEdgeData* edges, std::size_t count, cudaStreamCaptureMode mode,
                             bool per_thread) noexcept {
  STREAMPOOL_WITH_CONTEXT(cuStreamBeginCaptureToGraph(driver_stream(stream, per_thread), graph, dependencies,
                                                      reinterpret_cast<const CUgraphEdgeData*>(edges), count,
                                                      static_cast<CUstreamCaptureMode>(mode)));
}

cudaError_t update_dependencies(cudaStream_t stream, cudaGraphNode_t* dependencies, const cudaGraphEdgeData* edges,
                                std::size_t count, unsigned flags, bool per_thread) noexcept {
  STREAMPOOL_WITH_CONTEXT(cuStreamUpdateCaptureDependencies_v2(driver_stream(stream, per_thread), dependencies,
                                                               reinterpret_cast<const CUgraphEdgeData*>(edges), count,
                                                               flags));
}

}  // namespace

// The driver's parameters for the runtime's; the node types whose layouts match are copied as they are.
cudaError_t driver_node_params(const cudaGraphNodeParams& params, CUgraphNodeParams* out) noexcept {
  *out = CUgraphNodeParams{};
  out->type = static_cast<CUgraphNodeType>(params.type);
  switch (params.type) {
    case cudaGraphNodeTypeKernel: {
      const cudaKernelNodeParamsV2& kernel = params.kernel;
      const KernelLaunchShape shape{kernel.func, kernel.gridDim, kernel.blockDim, kernel.sharedMemBytes,
                                    kernel.kernelParams, kernel.extra};
      CUDA_KERNEL_NODE_PARAMS converted;
      if (const cudaError_t error = driver_kernel_params(shape, &converted); error != cudaSuccess) return error;
      std::memcpy(&out->kernel, &converted, sizeof(converted));
      return cudaSuccess;
    }
    case cudaGraphNodeTypeMemcpy:
      out->memcpy.copyCtx = current_context();
      return driver_copy_3d(params.memcpy.copyParams, &out->memcpy.copyParams);
    case cudaGraphNodeTypeMemset: {
      const cudaMemsetParamsV2& memset = params.memset;
      out->memset.dst = reinterpret_cast<CUdeviceptr>(memset.dst);
      out->memset.pitch = memset.pitch;
      out->memset.value = memset.value;
      out->memset.elementSize = memset.elementSize;
      out->memset.width = memset.width;
      out->memset.height = memset.height;
      out->memset.ctx = current_context();
      return cudaSuccess;
    }
    case cudaGraphNodeTypeConditional:
      out->conditional.handle = params.conditional.handle;
      out->conditional.type = static_cast<CUgraphConditionalNodeType>(params.conditional.type);
      out->conditional.size = params.conditional.size;
      out->conditional.ctx = current_context();
      return cudaSuccess;
    case cudaGraphNodeTypeHost:
    case cudaGraphNodeTypeGraph:
    case cudaGraphNodeTypeEmpty:
    case cudaGraphNodeTypeWaitEvent:
    case cudaGraphNodeTypeEventRecord:
    case cudaGraphNodeTypeMemAlloc:
    case cudaGraphNodeTypeMemFree:
    case cudaGraphNodeTypeExtSemaphoreSignal:
    case cudaGraphNodeTypeExtSemaphoreWait:
      std::memcpy(out, &params, sizeof(*out));
      return cudaSuccess;
    default:
      return cudaErrorInvalidValue;
  }
}

// What the driver hands back in the parameters: the body graphs of a conditional node, the address
// of an allocation node.
void copy_outputs(const CUgraphNodeParams& driver, cudaGraphNodeParams* params) noexcept {
  if (params->type == cudaGraphNodeTypeConditional) params->conditional.phGraph_out = driver.conditional.phGraph_out;
  if (params->type == cudaGraphNodeTypeMemAlloc) params->alloc.dptr = reinterpret_cast<void*>(driver.alloc.dptr);
}

}  // namespace streampool::runtime

using namespace streampool::runtime;

CUDART_EXPORT cudaError_t cudaGraphAddNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                           const cudaGraphNode_t* pDependencies,
                                           const cudaGraphEdgeData* dependencyData, size_t numDependencies,
                                           cudaGraphNodeParams* nodeParams) {
  if (nodeParams == nullptr) return finish(cudaErrorInvalidValue);
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  CUgraphNodeParams params;
  if (const cudaError_t error = driver_node_params(*nodeParams, &params); error != cudaSuccess) return finish(error);
  const CUresult result = cuGraphAddNode(pGraphNode, graph, pDependencies,
                                         reinterpret_cast<const CUgraphEdgeData*>(dependencyData), numDependencies,
                                         &params);
  if (result == CUDA_SUCCESS) copy_outputs(params, nodeParams);
  return finish(result);
}

CUDART_EXPORT cudaError_t cudaGraphConditionalHandleCreate(cudaGraphConditionalHandle* pHandle_out, cudaGraph_t graph,
                                                           unsigned int defaultLaunchValue, unsigned int flags) {
  if (pHandle_out == nullptr) return finish(cudaErrorInvalidValue);
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  static_assert(sizeof(cudaGraphConditionalHandle) == sizeof(CUgraphConditionalHandle));
  return finish(cuGraphConditionalHandleCreate(reinterpret_cast<CUgraphConditionalHandle*>(pHandle_out), graph,
                                               current_context(), defaultLaunchValue, flags));
}

CUDART_EXPORT cudaError_t cudaStreamBeginCaptureToGraph(cudaStream_t stream, cudaGraph_t graph,
                                                        const cudaGraphNode_t* dependencies,
                                                        const cudaGraphEdgeData* dependencyData,
                                                        size_t numDependencies, cudaStreamCaptureMode mode) {
  return capture_to_graph(stream, graph, dependencies, dependencyData, numDependencies, mode, false);
}
CUDART_EXPORT cudaError_t cudaStreamBeginCaptureToGraph_ptsz(cudaStream_t stream, cudaGraph_t graph,
                                                             const cudaGraphNode_t* dependencies,
                                                             const cudaGraphEdgeData* dependencyData,
                                                             size_t numDependencies, cudaStreamCaptureMode mode) {
  return capture_to_graph(stream, graph, dependencies, dependencyData, numDependencies, mode, true);
}

CUDART_EXPORT cudaError_t cudaStreamUpdateCaptureDependencies(cudaStream_t stream, cudaGraphNode_t* dependencies,
                                                              const cudaGraphEdgeData* dependencyData,
                                                              size_t numDependencies, unsigned int flags) {
  return update_dependencies(stream, dependencies, dependencyData, numDependencies, flags, false);
}
CUDART_EXPORT cudaError_t cudaStreamUpdateCaptureDependencies_ptsz(cudaStream_t stream, cudaGraphNode_t* dependencies,
                                                                   const cudaGraphEdgeData* dependencyData,
                                                                   size_t numDependencies, unsigned int flags) {
  return update_dependencies(stream, dependencies, dependencyData, numDependencies, flags, true);
}
