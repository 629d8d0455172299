// Stream capture and graphs. Capture begin/end reach streampool's capture hooks (the engine hands
// allocations on a capturing stream to the real driver, which makes graph memory nodes of them).
#include <cstddef>

#include "api.hpp"
#include "graph_params.hpp"

extern "C" {
cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t stream, cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t* pGraph);
cudaError_t cudaStreamIsCapturing_ptsz(cudaStream_t stream, cudaStreamCaptureStatus* pCaptureStatus);
cudaError_t cudaStreamGetCaptureInfo_ptsz(cudaStream_t stream, cudaStreamCaptureStatus* captureStatus_out,
                                          unsigned long long* id_out, cudaGraph_t* graph_out,
                                          const cudaGraphNode_t** dependencies_out,
                                          const cudaGraphEdgeData** edgeData_out, size_t* numDependencies_out);
cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream);
cudaError_t cudaGraphUpload_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream);
}

namespace streampool::runtime {
namespace {

static_assert(sizeof(cudaMemAllocNodeParams) == sizeof(CUDA_MEM_ALLOC_NODE_PARAMS));
static_assert(offsetof(cudaMemAllocNodeParams, dptr) == offsetof(CUDA_MEM_ALLOC_NODE_PARAMS, dptr));
static_assert(sizeof(cudaGraphEdgeData) == sizeof(CUgraphEdgeData));

cudaError_t begin_capture(cudaStream_t stream, cudaStreamCaptureMode mode, bool per_thread) noexcept {
  STREAMPOOL_WITH_CONTEXT(cuStreamBeginCapture(driver_stream(stream, per_thread), static_cast<CUstreamCaptureMode>(mode)));
}

// No graph pointer is the driver's to judge: a capture into an existing graph
// (cudaStreamBeginCaptureToGraph) ends with none (NVIDIA's graphConditionalNodes sample does).
cudaError_t end_capture(cudaStream_t stream, cudaGraph_t* graph, bool per_thread) noexcept {
  STREAMPOOL_WITH_CONTEXT(cuStreamEndCapture(driver_stream(stream, per_thread), graph));
}

cudaError_t is_capturing(cudaStream_t stream, cudaStreamCaptureStatus* status, bool per_thread) noexcept {
  if (status == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(
      cuStreamIsCapturing(driver_stream(stream, per_thread), reinterpret_cast<CUstreamCaptureStatus*>(status)));
}

cudaError_t capture_info(cudaStream_t stream, cudaStreamCaptureStatus* status, unsigned long long* id,
                         cudaGraph_t* graph, const cudaGraphNode_t** dependencies, const cudaGraphEdgeData** edges,
                         size_t* count, bool per_thread) noexcept {
  if (status == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuStreamGetCaptureInfo_v3(driver_stream(stream, per_thread),
                                                    reinterpret_cast<CUstreamCaptureStatus*>(status), reinterpret_cast<cuuint64_t*>(id), graph,
                                                    dependencies, reinterpret_cast<const CUgraphEdgeData**>(edges),
                                                    count));
}

}  // namespace
}  // namespace streampool::runtime

using namespace streampool::runtime;

CUDART_EXPORT cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode) {
  return begin_capture(stream, mode, false);
}
CUDART_EXPORT cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t stream, cudaStreamCaptureMode mode) {
  return begin_capture(stream, mode, true);
}
CUDART_EXPORT cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* pGraph) {
  return end_capture(stream, pGraph, false);
}
CUDART_EXPORT cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t* pGraph) {
  return end_capture(stream, pGraph, true);
}
CUDART_EXPORT cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* pCaptureStatus) {
  return is_capturing(stream, pCaptureStatus, false);
}
CUDART_EXPORT cudaError_t cudaStreamIsCapturing_ptsz(cudaStream_t stream, cudaStreamCaptureStatus* pCaptureStatus) {
  return is_capturing(stream, pCaptureStatus, true);
}
CUDART_EXPORT cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream, cudaStreamCaptureStatus* captureStatus_out,
                                                   unsigned long long* id_out, cudaGraph_t* graph_out,
                                                   const cudaGraphNode_t** dependencies_out,
                                                   const cudaGraphEdgeData** edgeData_out, size_t* numDependencies_out) {
  return capture_info(stream, captureStatus_out, id_out, graph_out, dependencies_out, edgeData_out,
                      numDependencies_out, false);
}
CUDART_EXPORT cudaError_t cudaStreamGetCaptureInfo_ptsz(cudaStream_t stream, cudaStreamCaptureStatus* captureStatus_out,
                                                        unsigned long long* id_out, cudaGraph_t* graph_out,
                                                        const cudaGraphNode_t** dependencies_out,
                                                        const cudaGraphEdgeData** edgeData_out,
                                                        size_t* numDependencies_out) {
  return capture_info(stream, captureStatus_out, id_out, graph_out, dependencies_out, edgeData_out,
                      numDependencies_out, true);
}

CUDART_EXPORT cudaError_t cudaGraphCreate(cudaGraph_t* pGraph, unsigned int flags) {
  if (pGraph == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuGraphCreate(pGraph, flags));
}
CUDART_EXPORT cudaError_t cudaGraphDestroy(cudaGraph_t graph) { STREAMPOOL_WITH_CONTEXT(cuGraphDestroy(graph)); }
CUDART_EXPORT cudaError_t cudaGraphInstantiate(cudaGraphExec_t* pGraphExec, cudaGraph_t graph, unsigned long long flags) {
  if (pGraphExec == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuGraphInstantiateWithFlags(pGraphExec, graph, flags));
}
CUDART_EXPORT cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t* pGraphExec, cudaGraph_t graph,
                                                        unsigned long long flags) {
  return cudaGraphInstantiate(pGraphExec, graph, flags);
}
CUDART_EXPORT cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream) {
  STREAMPOOL_WITH_CONTEXT(cuGraphLaunch(graphExec, driver_stream(stream, false)));
}
CUDART_EXPORT cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream) {
  STREAMPOOL_WITH_CONTEXT(cuGraphLaunch(graphExec, driver_stream(stream, true)));
}
CUDART_EXPORT cudaError_t cudaGraphUpload(cudaGraphExec_t graphExec, cudaStream_t stream) {
  STREAMPOOL_WITH_CONTEXT(cuGraphUpload(graphExec, driver_stream(stream, false)));
}
CUDART_EXPORT cudaError_t cudaGraphUpload_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream) {
  STREAMPOOL_WITH_CONTEXT(cuGraphUpload(graphExec, driver_stream(stream, true)));
}
CUDART_EXPORT cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec) {
  STREAMPOOL_WITH_CONTEXT(cuGraphExecDestroy(graphExec));
}
CUDART_EXPORT cudaError_t cudaDeviceGraphMemTrim(int device) { STREAMPOOL_WITH_CONTEXT(cuDeviceGraphMemTrim(device)); }

CUDART_EXPORT cudaError_t cudaGraphAddEmptyNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                                const cudaGraphNode_t* pDependencies, size_t numDependencies) {
  STREAMPOOL_WITH_CONTEXT(cuGraphAddEmptyNode(pGraphNode, graph, pDependencies, numDependencies));
}
CUDART_EXPORT cudaError_t cudaGraphAddHostNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                               const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                               const cudaHostNodeParams* pNodeParams) {
  if (pNodeParams == nullptr) return finish(cudaErrorInvalidValue);
  static_assert(sizeof(cudaHostNodeParams) == sizeof(CUDA_HOST_NODE_PARAMS));
  STREAMPOOL_WITH_CONTEXT(cuGraphAddHostNode(pGraphNode, graph, pDependencies, numDependencies,
                                             reinterpret_cast<const CUDA_HOST_NODE_PARAMS*>(pNodeParams)));
}
CUDART_EXPORT cudaError_t cudaGraphAddEventRecordNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                                      const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                                      cudaEvent_t event) {
  STREAMPOOL_WITH_CONTEXT(cuGraphAddEventRecordNode(pGraphNode, graph, pDependencies, numDependencies, event));
}
CUDART_EXPORT cudaError_t cudaGraphAddEventWaitNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                                    const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                                    cudaEvent_t event) {
  STREAMPOOL_WITH_CONTEXT(cuGraphAddEventWaitNode(pGraphNode, graph, pDependencies, numDependencies, event));
}
CUDART_EXPORT cudaError_t cudaGraphAddMemAllocNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                                   const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                                   cudaMemAllocNodeParams* nodeParams) {
  if (nodeParams == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuGraphAddMemAllocNode(pGraphNode, graph, pDependencies, numDependencies,
                                                 reinterpret_cast<CUDA_MEM_ALLOC_NODE_PARAMS*>(nodeParams)));
}
CUDART_EXPORT cudaError_t cudaGraphAddMemFreeNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                                  const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                                  void* dptr) {
  STREAMPOOL_WITH_CONTEXT(cuGraphAddMemFreeNode(pGraphNode, graph, pDependencies, numDependencies,
                                                reinterpret_cast<CUdeviceptr>(dptr)));
}
CUDART_EXPORT cudaError_t cudaGraphAddKernelNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                                 const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                                 const cudaKernelNodeParams* pNodeParams) {
  CUDA_KERNEL_NODE_PARAMS params;
  if (const cudaError_t error = driver_kernel_params(pNodeParams, &params); error != cudaSuccess) return finish(error);
  return finish(cuGraphAddKernelNode(pGraphNode, graph, pDependencies, numDependencies, &params));
}

// The calling thread's capture interaction mode (which unsafe calls a capture elsewhere forbids);
// the modes are the driver's.
CUDART_EXPORT cudaError_t cudaThreadExchangeStreamCaptureMode(cudaStreamCaptureMode* mode) {
  if (mode == nullptr) return finish(cudaErrorInvalidValue);
  return finish(cuThreadExchangeStreamCaptureMode(reinterpret_cast<CUstreamCaptureMode*>(mode)));
}
