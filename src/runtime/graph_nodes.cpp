// Graphs built by hand beyond the basic nodes (graph.cpp): copy and memset nodes, child graphs and
// dependencies, cloning and walking a graph, updating an instantiated graph (kernel parameters, a
// whole-graph update), and the device's graph-memory attributes. Copy and memset nodes run in the
// current context, as cudart's do.
#include <cstring>

#include "api.hpp"
#include "graph_params.hpp"

namespace streampool::runtime {
namespace {

static_assert(sizeof(cudaGraphExecUpdateResultInfo) == sizeof(CUgraphExecUpdateResultInfo));
static_assert(static_cast<int>(cudaGraphNodeTypeConditional) == static_cast<int>(CU_GRAPH_NODE_TYPE_CONDITIONAL));
static_assert(static_cast<int>(cudaGraphMemAttrReservedMemHigh) ==
              static_cast<int>(CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH));

cudaError_t add_copy_node(cudaGraphNode_t* node, cudaGraph_t graph, const cudaGraphNode_t* dependencies,
                          std::size_t count, const CUDA_MEMCPY3D& copy) noexcept {
  return finish(cuGraphAddMemcpyNode(node, graph, dependencies, count, &copy, current_context()));
}

}  // namespace
}  // namespace streampool::runtime

using namespace streampool::runtime;

CUDART_EXPORT cudaError_t cudaGraphAddMemcpyNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                                 const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                                 const cudaMemcpy3DParms* pCopyParams) {
  if (pCopyParams == nullptr) return finish(cudaErrorInvalidValue);
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  CUDA_MEMCPY3D copy;
  if (const cudaError_t error = driver_copy_3d(*pCopyParams, &copy); error != cudaSuccess) return finish(error);
  return add_copy_node(pGraphNode, graph, pDependencies, numDependencies, copy);
}

CUDART_EXPORT cudaError_t cudaGraphAddMemcpyNode1D(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                                   const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                                   void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  CUDA_MEMCPY3D copy;
  if (const cudaError_t error = driver_copy_1d(dst, src, count, kind, &copy); error != cudaSuccess) return finish(error);
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  return add_copy_node(pGraphNode, graph, pDependencies, numDependencies, copy);
}

CUDART_EXPORT cudaError_t cudaGraphAddMemsetNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                                 const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                                 const cudaMemsetParams* pMemsetParams) {
  if (pMemsetParams == nullptr) return finish(cudaErrorInvalidValue);
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  const CUDA_MEMSET_NODE_PARAMS params = driver_memset(*pMemsetParams);
  return finish(cuGraphAddMemsetNode(pGraphNode, graph, pDependencies, numDependencies, &params, current_context()));
}

CUDART_EXPORT cudaError_t cudaGraphAddChildGraphNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                                     const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                                     cudaGraph_t childGraph) {
  STREAMPOOL_WITH_CONTEXT(cuGraphAddChildGraphNode(pGraphNode, graph, pDependencies, numDependencies, childGraph));
}

CUDART_EXPORT cudaError_t cudaGraphAddDependencies(cudaGraph_t graph, const cudaGraphNode_t* from,
                                                   const cudaGraphNode_t* to, const cudaGraphEdgeData* edgeData,
                                                   size_t numDependencies) {
  STREAMPOOL_WITH_CONTEXT(cuGraphAddDependencies(graph, from, to, reinterpret_cast<const CUgraphEdgeData*>(edgeData),
                                                 numDependencies));
}

CUDART_EXPORT cudaError_t cudaGraphClone(cudaGraph_t* pGraphClone, cudaGraph_t originalGraph) {
  if (pGraphClone == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuGraphClone(pGraphClone, originalGraph));
}

CUDART_EXPORT cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* numNodes) {
  if (numNodes == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuGraphGetNodes(graph, nodes, numNodes));
}

CUDART_EXPORT cudaError_t cudaGraphGetRootNodes(cudaGraph_t graph, cudaGraphNode_t* pRootNodes, size_t* pNumRootNodes) {
  if (pNumRootNodes == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuGraphGetRootNodes(graph, pRootNodes, pNumRootNodes));
}

CUDART_EXPORT cudaError_t cudaGraphNodeGetType(cudaGraphNode_t node, cudaGraphNodeType* pType) {
  if (pType == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuGraphNodeGetType(node, reinterpret_cast<CUgraphNodeType*>(pType)));
}

CUDART_EXPORT cudaError_t cudaGraphKernelNodeSetParams(cudaGraphNode_t node, const cudaKernelNodeParams* pNodeParams) {
  CUDA_KERNEL_NODE_PARAMS params;
  if (const cudaError_t error = driver_kernel_params(pNodeParams, &params); error != cudaSuccess) return finish(error);
  return finish(cuGraphKernelNodeSetParams(node, &params));
}

CUDART_EXPORT cudaError_t cudaGraphExecKernelNodeSetParams(cudaGraphExec_t hGraphExec, cudaGraphNode_t node,
                                                           const cudaKernelNodeParams* pNodeParams) {
  CUDA_KERNEL_NODE_PARAMS params;
  if (const cudaError_t error = driver_kernel_params(pNodeParams, &params); error != cudaSuccess) return finish(error);
  return finish(cuGraphExecKernelNodeSetParams(hGraphExec, node, &params));
}

CUDART_EXPORT cudaError_t cudaGraphExecMemsetNodeSetParams(cudaGraphExec_t hGraphExec, cudaGraphNode_t node,
                                                           const cudaMemsetParams* pNodeParams) {
  if (pNodeParams == nullptr) return finish(cudaErrorInvalidValue);
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  const CUDA_MEMSET_NODE_PARAMS params = driver_memset(*pNodeParams);
  return finish(cuGraphExecMemsetNodeSetParams(hGraphExec, node, &params, current_context()));
}

CUDART_EXPORT cudaError_t cudaGraphExecMemcpyNodeSetParams1D(cudaGraphExec_t hGraphExec, cudaGraphNode_t node,
                                                             void* dst, const void* src, size_t count,
                                                             cudaMemcpyKind kind) {
  CUDA_MEMCPY3D copy;
  if (const cudaError_t error = driver_copy_1d(dst, src, count, kind, &copy); error != cudaSuccess) return finish(error);
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  return finish(cuGraphExecMemcpyNodeSetParams(hGraphExec, node, &copy, current_context()));
}

// A failed update is cudaErrorGraphExecUpdateFailure with the reason in *resultInfo, as the driver says.
CUDART_EXPORT cudaError_t cudaGraphExecUpdate(cudaGraphExec_t hGraphExec, cudaGraph_t hGraph,
                                              cudaGraphExecUpdateResultInfo* resultInfo) {
  if (resultInfo == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(
      cuGraphExecUpdate(hGraphExec, hGraph, reinterpret_cast<CUgraphExecUpdateResultInfo*>(resultInfo)));
}

CUDART_EXPORT cudaError_t cudaDeviceGetGraphMemAttribute(int device, cudaGraphMemAttributeType attr, void* value) {
  if (value == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuDeviceGetGraphMemAttribute(device, static_cast<CUgraphMem_attribute>(attr), value));
}

CUDART_EXPORT cudaError_t cudaDeviceSetGraphMemAttribute(int device, cudaGraphMemAttributeType attr, void* value) {
  if (value == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuDeviceSetGraphMemAttribute(device, static_cast<CUgraphMem_attribute>(attr), value));
}
