// Walking and editing a graph's structure (dependencies, edges, nodes removed, nodes found in a
// clone), host nodes' parameters, nodes enabled or disabled in an instantiated graph, and the
// graph's description as a DOT file. The runtime's handles, edge data and host-node parameters are
// the driver's, byte for byte.
#include "api.hpp"

namespace streampool::runtime {
namespace {

static_assert(sizeof(cudaHostNodeParams) == sizeof(CUDA_HOST_NODE_PARAMS));
static_assert(sizeof(cudaGraphEdgeData) == sizeof(CUgraphEdgeData));

CUgraphEdgeData* edges(cudaGraphEdgeData* data) noexcept { return reinterpret_cast<CUgraphEdgeData*>(data); }
const CUgraphEdgeData* edges(const cudaGraphEdgeData* data) noexcept {
  return reinterpret_cast<const CUgraphEdgeData*>(data);
}

}  // namespace
}  // namespace streampool::runtime

using namespace streampool::runtime;

CUDART_EXPORT cudaError_t cudaGraphNodeGetDependencies(cudaGraphNode_t node, cudaGraphNode_t* pDependencies,
                                                       cudaGraphEdgeData* edgeData, size_t* pNumDependencies) {
  if (pNumDependencies == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuGraphNodeGetDependencies(node, pDependencies, edges(edgeData), pNumDependencies));
}

CUDART_EXPORT cudaError_t cudaGraphNodeGetDependentNodes(cudaGraphNode_t node, cudaGraphNode_t* pDependentNodes,
                                                         cudaGraphEdgeData* edgeData, size_t* pNumDependentNodes) {
  if (pNumDependentNodes == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuGraphNodeGetDependentNodes(node, pDependentNodes, edges(edgeData), pNumDependentNodes));
}

CUDART_EXPORT cudaError_t cudaGraphGetEdges(cudaGraph_t graph, cudaGraphNode_t* from, cudaGraphNode_t* to,
                                            cudaGraphEdgeData* edgeData, size_t* numEdges) {
  if (numEdges == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuGraphGetEdges(graph, from, to, edges(edgeData), numEdges));
}

CUDART_EXPORT cudaError_t cudaGraphRemoveDependencies(cudaGraph_t graph, const cudaGraphNode_t* from,
                                                      const cudaGraphNode_t* to, const cudaGraphEdgeData* edgeData,
                                                      size_t numDependencies) {
  STREAMPOOL_WITH_CONTEXT(cuGraphRemoveDependencies(graph, from, to, edges(edgeData), numDependencies));
}

CUDART_EXPORT cudaError_t cudaGraphDestroyNode(cudaGraphNode_t node) { STREAMPOOL_WITH_CONTEXT(cuGraphDestroyNode(node)); }

CUDART_EXPORT cudaError_t cudaGraphNodeFindInClone(cudaGraphNode_t* pNode, cudaGraphNode_t originalNode,
                                                   cudaGraph_t clonedGraph) {
  if (pNode == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuGraphNodeFindInClone(pNode, originalNode, clonedGraph));
}

CUDART_EXPORT cudaError_t cudaGraphChildGraphNodeGetGraph(cudaGraphNode_t node, cudaGraph_t* pGraph) {
  if (pGraph == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuGraphChildGraphNodeGetGraph(node, pGraph));
}

CUDART_EXPORT cudaError_t cudaGraphHostNodeGetParams(cudaGraphNode_t node, cudaHostNodeParams* pNodeParams) {
  if (pNodeParams == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuGraphHostNodeGetParams(node, reinterpret_cast<CUDA_HOST_NODE_PARAMS*>(pNodeParams)));
}

CUDART_EXPORT cudaError_t cudaGraphHostNodeSetParams(cudaGraphNode_t node, const cudaHostNodeParams* pNodeParams) {
  if (pNodeParams == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(
      cuGraphHostNodeSetParams(node, reinterpret_cast<const CUDA_HOST_NODE_PARAMS*>(pNodeParams)));
}

CUDART_EXPORT cudaError_t cudaGraphExecHostNodeSetParams(cudaGraphExec_t hGraphExec, cudaGraphNode_t node,
                                                         const cudaHostNodeParams* pNodeParams) {
  if (pNodeParams == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuGraphExecHostNodeSetParams(hGraphExec, node,
                                                       reinterpret_cast<const CUDA_HOST_NODE_PARAMS*>(pNodeParams)));
}

CUDART_EXPORT cudaError_t cudaGraphNodeSetEnabled(cudaGraphExec_t hGraphExec, cudaGraphNode_t hNode,
                                                  unsigned int isEnabled) {
  STREAMPOOL_WITH_CONTEXT(cuGraphNodeSetEnabled(hGraphExec, hNode, isEnabled));
}

CUDART_EXPORT cudaError_t cudaGraphNodeGetEnabled(cudaGraphExec_t hGraphExec, cudaGraphNode_t hNode,
                                                  unsigned int* isEnabled) {
  if (isEnabled == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuGraphNodeGetEnabled(hGraphExec, hNode, isEnabled));
}

CUDART_EXPORT cudaError_t cudaGraphExecGetFlags(cudaGraphExec_t graphExec, unsigned long long* flags) {
  if (flags == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuGraphExecGetFlags(graphExec, reinterpret_cast<cuuint64_t*>(flags)));
}

CUDART_EXPORT cudaError_t cudaGraphDebugDotPrint(cudaGraph_t graph, const char* path, unsigned int flags) {
  if (path == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuGraphDebugDotPrint(graph, path, flags));
}
