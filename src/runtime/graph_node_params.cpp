// The parameters of a graph's nodes read back and changed after the node was added, in the graph
// and in an instantiated graph: kernels (and their launch attributes), copies (3D, 1D and to or
// from __device__ variables), memsets, events, child graphs, memory nodes, the generic form
// (cudaGraphNodeSetParams); instantiation with parameters; and user objects, whose references a
// graph can own. Each is the driver's call on the parameters translated as graph_params.hpp does
// (a kernel named by its host stub, copies by unified address, in the current context).
#include <cstddef>

#include "api.hpp"
#include "copy_kinds.hpp"
#include "graph_params.hpp"
#include "registry.hpp"

extern "C" {
CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec* phGraphExec, CUgraph hGraph,
                                           CUDA_GRAPH_INSTANTIATE_PARAMS* instantiateParams);
cudaError_t cudaGraphInstantiateWithParams_ptsz(cudaGraphExec_t* pGraphExec, cudaGraph_t graph,
                                                cudaGraphInstantiateParams* instantiateParams);
}

namespace streampool::runtime {
namespace {

static_assert(sizeof(cudaKernelNodeAttrValue) == sizeof(CUkernelNodeAttrValue));
static_assert(static_cast<int>(cudaLaunchAttributePriority) == static_cast<int>(CU_LAUNCH_ATTRIBUTE_PRIORITY));
static_assert(sizeof(cudaGraphInstantiateParams) == sizeof(CUDA_GRAPH_INSTANTIATE_PARAMS) &&
              offsetof(cudaGraphInstantiateParams, uploadStream) ==
                  offsetof(CUDA_GRAPH_INSTANTIATE_PARAMS, hUploadStream) &&
              offsetof(cudaGraphInstantiateParams, errNode_out) ==
                  offsetof(CUDA_GRAPH_INSTANTIATE_PARAMS, hErrNode_out) &&
              offsetof(cudaGraphInstantiateParams, result_out) == offsetof(CUDA_GRAPH_INSTANTIATE_PARAMS, result_out));
static_assert(static_cast<int>(cudaGraphInstantiateConditionalHandleUnused) ==
              static_cast<int>(CUDA_GRAPH_INSTANTIATE_CONDITIONAL_HANDLE_UNUSED));
static_assert(sizeof(cudaMemAllocNodeParams) == sizeof(CUDA_MEM_ALLOC_NODE_PARAMS));
static_assert(static_cast<int>(cudaUserObjectNoDestructorSync) == static_cast<int>(CU_USER_OBJECT_NO_DESTRUCTOR_SYNC));
static_assert(static_cast<int>(cudaGraphUserObjectMove) == static_cast<int>(CU_GRAPH_USER_OBJECT_MOVE));

// A copy of `count` bytes to (to_symbol) or from a registered __device__ variable at `offset`, as
// the driver's 3D copy. The context must be current.
cudaError_t symbol_copy_params(bool to_symbol, void* memory, const void* symbol, std::size_t count,
                               std::size_t offset, cudaMemcpyKind kind, CUDA_MEMCPY3D* copy) noexcept {
  if (!(to_symbol ? valid_kind_to_symbol(kind) : valid_kind_from_symbol(kind))) return cudaErrorInvalidMemcpyDirection;
  CUdeviceptr address = 0;
  std::size_t size = 0;
  if (const cudaError_t error = variable_address(symbol, &address, &size); error != cudaSuccess) return error;
  if (offset > size || count > size - offset) return cudaErrorInvalidValue;
  void* variable = reinterpret_cast<void*>(address + offset);
  return to_symbol ? driver_copy_1d(variable, memory, count, kind, copy)
                   : driver_copy_1d(memory, variable, count, kind, copy);
}

// The three places a copy node's parameters go.
enum class CopyTarget { add, set, set_exec };
struct CopyNode {
  CopyTarget target;
  cudaGraphNode_t* added;  // add
  cudaGraph_t graph;
  const cudaGraphNode_t* dependencies;
  std::size_t count;
  cudaGraphNode_t node;  // set, set_exec
  cudaGraphExec_t exec;  // set_exec
};

cudaError_t apply_copy(const CopyNode& where, const CUDA_MEMCPY3D& copy) noexcept {
  switch (where.target) {
    case CopyTarget::add:
      return finish(cuGraphAddMemcpyNode(where.added, where.graph, where.dependencies, where.count, &copy,
                                         current_context()));
    case CopyTarget::set: return finish(cuGraphMemcpyNodeSetParams(where.node, &copy));
    case CopyTarget::set_exec:
      return finish(cuGraphExecMemcpyNodeSetParams(where.exec, where.node, &copy, current_context()));
  }
  return finish(cudaErrorInvalidValue);
}

cudaError_t symbol_copy_node(const CopyNode& where, bool to_symbol, void* memory, const void* symbol,
                             std::size_t count, std::size_t offset, cudaMemcpyKind kind) noexcept {
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  CUDA_MEMCPY3D copy;
  if (const cudaError_t error = symbol_copy_params(to_symbol, memory, symbol, count, offset, kind, &copy);
      error != cudaSuccess) {
    return finish(error);
  }
  return apply_copy(where, copy);
}

cudaError_t copy_3d_node(const CopyNode& where, const cudaMemcpy3DParms* params) noexcept {
  if (params == nullptr) return finish(cudaErrorInvalidValue);
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  CUDA_MEMCPY3D copy;
  if (const cudaError_t error = driver_copy_3d(*params, &copy); error != cudaSuccess) return finish(error);
  return apply_copy(where, copy);
}

cudaError_t instantiate_with_params(cudaGraphExec_t* exec, cudaGraph_t graph, cudaGraphInstantiateParams* params,
                                    bool per_thread) noexcept {
  if (exec == nullptr || params == nullptr) return finish(cudaErrorInvalidValue);
  auto* driver_params = reinterpret_cast<CUDA_GRAPH_INSTANTIATE_PARAMS*>(params);
  STREAMPOOL_WITH_CONTEXT(per_thread ? cuGraphInstantiateWithParams_ptsz(exec, graph, driver_params)
                                     : cuGraphInstantiateWithParams(exec, graph, driver_params));
}

cudaError_t set_node_params(cudaGraphExec_t exec, cudaGraphNode_t node, cudaGraphNodeParams* params,
                            bool in_exec) noexcept {
  if (params == nullptr) return finish(cudaErrorInvalidValue);
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  CUgraphNodeParams converted;
  if (const cudaError_t error = driver_node_params(*params, &converted); error != cudaSuccess) return finish(error);
  const CUresult result = in_exec ? cuGraphExecNodeSetParams(exec, node, &converted)
                                  : cuGraphNodeSetParams(node, &converted);
  if (result == CUDA_SUCCESS) copy_outputs(converted, params);
  return finish(result);
}

}  // namespace
}  // namespace streampool::runtime

using namespace streampool::runtime;

// Kernel nodes. The function comes back as the kernel's host stub (or its cudaKernel_t), as it was given.
CUDART_EXPORT cudaError_t cudaGraphKernelNodeGetParams(cudaGraphNode_t node, cudaKernelNodeParams* pNodeParams) {
  if (pNodeParams == nullptr) return finish(cudaErrorInvalidValue);
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  CUDA_KERNEL_NODE_PARAMS params{};
  if (const CUresult result = cuGraphKernelNodeGetParams(node, &params); result != CUDA_SUCCESS) return finish(result);
  const void* host = host_function_of(params.func);
  *pNodeParams = cudaKernelNodeParams{};
  pNodeParams->func = const_cast<void*>(host != nullptr ? host : static_cast<const void*>(params.kern));
  pNodeParams->gridDim = dim3(params.gridDimX, params.gridDimY, params.gridDimZ);
  pNodeParams->blockDim = dim3(params.blockDimX, params.blockDimY, params.blockDimZ);
  pNodeParams->sharedMemBytes = params.sharedMemBytes;
  pNodeParams->kernelParams = params.kernelParams;
  pNodeParams->extra = params.extra;
  return cudaSuccess;
}

CUDART_EXPORT cudaError_t cudaGraphKernelNodeGetAttribute(cudaGraphNode_t hNode, cudaKernelNodeAttrID attr,
                                                          cudaKernelNodeAttrValue* value_out) {
  if (value_out == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuGraphKernelNodeGetAttribute(hNode, static_cast<CUkernelNodeAttrID>(attr),
                                                        reinterpret_cast<CUkernelNodeAttrValue*>(value_out)));
}

CUDART_EXPORT cudaError_t cudaGraphKernelNodeSetAttribute(cudaGraphNode_t hNode, cudaKernelNodeAttrID attr,
                                                          const cudaKernelNodeAttrValue* value) {
  if (value == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuGraphKernelNodeSetAttribute(hNode, static_cast<CUkernelNodeAttrID>(attr),
                                                        reinterpret_cast<const CUkernelNodeAttrValue*>(value)));
}

CUDART_EXPORT cudaError_t cudaGraphKernelNodeCopyAttributes(cudaGraphNode_t hDst, cudaGraphNode_t hSrc) {
  STREAMPOOL_WITH_CONTEXT(cuGraphKernelNodeCopyAttributes(hDst, hSrc));
}

// Copy nodes.
CUDART_EXPORT cudaError_t cudaGraphMemcpyNodeGetParams(cudaGraphNode_t node, cudaMemcpy3DParms* pNodeParams) {
  if (pNodeParams == nullptr) return finish(cudaErrorInvalidValue);
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  CUDA_MEMCPY3D copy{};
  if (const CUresult result = cuGraphMemcpyNodeGetParams(node, &copy); result != CUDA_SUCCESS) return finish(result);
  return finish(runtime_copy_3d(copy, pNodeParams));
}

CUDART_EXPORT cudaError_t cudaGraphMemcpyNodeSetParams(cudaGraphNode_t node, const cudaMemcpy3DParms* pNodeParams) {
  return copy_3d_node({CopyTarget::set, nullptr, nullptr, nullptr, 0, node, nullptr}, pNodeParams);
}

CUDART_EXPORT cudaError_t cudaGraphMemcpyNodeSetParams1D(cudaGraphNode_t node, void* dst, const void* src,
                                                         size_t count, cudaMemcpyKind kind) {
  CUDA_MEMCPY3D copy;
  if (const cudaError_t error = driver_copy_1d(dst, src, count, kind, &copy); error != cudaSuccess) return finish(error);
  STREAMPOOL_WITH_CONTEXT(cuGraphMemcpyNodeSetParams(node, &copy));
}

CUDART_EXPORT cudaError_t cudaGraphExecMemcpyNodeSetParams(cudaGraphExec_t hGraphExec, cudaGraphNode_t node,
                                                           const cudaMemcpy3DParms* pNodeParams) {
  return copy_3d_node({CopyTarget::set_exec, nullptr, nullptr, nullptr, 0, node, hGraphExec}, pNodeParams);
}

CUDART_EXPORT cudaError_t cudaGraphAddMemcpyNodeToSymbol(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                                         const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                                         const void* symbol, const void* src, size_t count,
                                                         size_t offset, cudaMemcpyKind kind) {
  return symbol_copy_node({CopyTarget::add, pGraphNode, graph, pDependencies, numDependencies, nullptr, nullptr},
                          true, const_cast<void*>(src), symbol, count, offset, kind);
}

CUDART_EXPORT cudaError_t cudaGraphAddMemcpyNodeFromSymbol(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                                           const cudaGraphNode_t* pDependencies,
                                                           size_t numDependencies, void* dst, const void* symbol,
                                                           size_t count, size_t offset, cudaMemcpyKind kind) {
  return symbol_copy_node({CopyTarget::add, pGraphNode, graph, pDependencies, numDependencies, nullptr, nullptr},
                          false, dst, symbol, count, offset, kind);
}

CUDART_EXPORT cudaError_t cudaGraphMemcpyNodeSetParamsToSymbol(cudaGraphNode_t node, const void* symbol,
                                                               const void* src, size_t count, size_t offset,
                                                               cudaMemcpyKind kind) {
  return symbol_copy_node({CopyTarget::set, nullptr, nullptr, nullptr, 0, node, nullptr}, true,
                          const_cast<void*>(src), symbol, count, offset, kind);
}

CUDART_EXPORT cudaError_t cudaGraphMemcpyNodeSetParamsFromSymbol(cudaGraphNode_t node, void* dst, const void* symbol,
                                                                 size_t count, size_t offset, cudaMemcpyKind kind) {
  return symbol_copy_node({CopyTarget::set, nullptr, nullptr, nullptr, 0, node, nullptr}, false, dst, symbol, count,
                          offset, kind);
}

CUDART_EXPORT cudaError_t cudaGraphExecMemcpyNodeSetParamsToSymbol(cudaGraphExec_t hGraphExec, cudaGraphNode_t node,
                                                                   const void* symbol, const void* src, size_t count,
                                                                   size_t offset, cudaMemcpyKind kind) {
  return symbol_copy_node({CopyTarget::set_exec, nullptr, nullptr, nullptr, 0, node, hGraphExec}, true,
                          const_cast<void*>(src), symbol, count, offset, kind);
}

CUDART_EXPORT cudaError_t cudaGraphExecMemcpyNodeSetParamsFromSymbol(cudaGraphExec_t hGraphExec, cudaGraphNode_t node,
                                                                     void* dst, const void* symbol, size_t count,
                                                                     size_t offset, cudaMemcpyKind kind) {
  return symbol_copy_node({CopyTarget::set_exec, nullptr, nullptr, nullptr, 0, node, hGraphExec}, false, dst, symbol,
                          count, offset, kind);
}

// Memset nodes.
CUDART_EXPORT cudaError_t cudaGraphMemsetNodeGetParams(cudaGraphNode_t node, cudaMemsetParams* pNodeParams) {
  if (pNodeParams == nullptr) return finish(cudaErrorInvalidValue);
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  CUDA_MEMSET_NODE_PARAMS params{};
  if (const CUresult result = cuGraphMemsetNodeGetParams(node, &params); result != CUDA_SUCCESS) return finish(result);
  *pNodeParams = cudaMemsetParams{};
  pNodeParams->dst = reinterpret_cast<void*>(params.dst);
  pNodeParams->pitch = params.pitch;
  pNodeParams->value = params.value;
  pNodeParams->elementSize = params.elementSize;
  pNodeParams->width = params.width;
  pNodeParams->height = params.height;
  return cudaSuccess;
}

CUDART_EXPORT cudaError_t cudaGraphMemsetNodeSetParams(cudaGraphNode_t node, const cudaMemsetParams* pNodeParams) {
  if (pNodeParams == nullptr) return finish(cudaErrorInvalidValue);
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  const CUDA_MEMSET_NODE_PARAMS params = driver_memset(*pNodeParams);
  return finish(cuGraphMemsetNodeSetParams(node, &params));
}

// Event nodes.
CUDART_EXPORT cudaError_t cudaGraphEventRecordNodeGetEvent(cudaGraphNode_t node, cudaEvent_t* event_out) {
  if (event_out == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuGraphEventRecordNodeGetEvent(node, event_out));
}
CUDART_EXPORT cudaError_t cudaGraphEventRecordNodeSetEvent(cudaGraphNode_t node, cudaEvent_t event) {
  STREAMPOOL_WITH_CONTEXT(cuGraphEventRecordNodeSetEvent(node, event));
}
CUDART_EXPORT cudaError_t cudaGraphEventWaitNodeGetEvent(cudaGraphNode_t node, cudaEvent_t* event_out) {
  if (event_out == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuGraphEventWaitNodeGetEvent(node, event_out));
}
CUDART_EXPORT cudaError_t cudaGraphEventWaitNodeSetEvent(cudaGraphNode_t node, cudaEvent_t event) {
  STREAMPOOL_WITH_CONTEXT(cuGraphEventWaitNodeSetEvent(node, event));
}
CUDART_EXPORT cudaError_t cudaGraphExecEventRecordNodeSetEvent(cudaGraphExec_t hGraphExec, cudaGraphNode_t hNode,
                                                               cudaEvent_t event) {
  STREAMPOOL_WITH_CONTEXT(cuGraphExecEventRecordNodeSetEvent(hGraphExec, hNode, event));
}
CUDART_EXPORT cudaError_t cudaGraphExecEventWaitNodeSetEvent(cudaGraphExec_t hGraphExec, cudaGraphNode_t hNode,
                                                             cudaEvent_t event) {
  STREAMPOOL_WITH_CONTEXT(cuGraphExecEventWaitNodeSetEvent(hGraphExec, hNode, event));
}

// Child graphs and memory nodes.
CUDART_EXPORT cudaError_t cudaGraphExecChildGraphNodeSetParams(cudaGraphExec_t hGraphExec, cudaGraphNode_t node,
                                                               cudaGraph_t childGraph) {
  STREAMPOOL_WITH_CONTEXT(cuGraphExecChildGraphNodeSetParams(hGraphExec, node, childGraph));
}
CUDART_EXPORT cudaError_t cudaGraphMemAllocNodeGetParams(cudaGraphNode_t node, cudaMemAllocNodeParams* params_out) {
  if (params_out == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(
      cuGraphMemAllocNodeGetParams(node, reinterpret_cast<CUDA_MEM_ALLOC_NODE_PARAMS*>(params_out)));
}
CUDART_EXPORT cudaError_t cudaGraphMemFreeNodeGetParams(cudaGraphNode_t node, void* dptr_out) {
  if (dptr_out == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuGraphMemFreeNodeGetParams(node, static_cast<CUdeviceptr*>(dptr_out)));
}

// The generic form.
CUDART_EXPORT cudaError_t cudaGraphNodeSetParams(cudaGraphNode_t node, cudaGraphNodeParams* nodeParams) {
  return set_node_params(nullptr, node, nodeParams, false);
}
CUDART_EXPORT cudaError_t cudaGraphExecNodeSetParams(cudaGraphExec_t graphExec, cudaGraphNode_t node,
                                                     cudaGraphNodeParams* nodeParams) {
  return set_node_params(graphExec, node, nodeParams, true);
}

// Instantiation with parameters: a failure's node and reason come back in the parameters, as the
// driver fills them; the per-thread form uploads to the calling thread's stream for stream 0.
CUDART_EXPORT cudaError_t cudaGraphInstantiateWithParams(cudaGraphExec_t* pGraphExec, cudaGraph_t graph,
                                                         cudaGraphInstantiateParams* instantiateParams) {
  return instantiate_with_params(pGraphExec, graph, instantiateParams, false);
}
CUDART_EXPORT cudaError_t cudaGraphInstantiateWithParams_ptsz(cudaGraphExec_t* pGraphExec, cudaGraph_t graph,
                                                              cudaGraphInstantiateParams* instantiateParams) {
  return instantiate_with_params(pGraphExec, graph, instantiateParams, true);
}

// User objects: a destructor run when the last reference (the program's or a graph's) goes.
CUDART_EXPORT cudaError_t cudaUserObjectCreate(cudaUserObject_t* object_out, void* ptr, cudaHostFn_t destroy,
                                               unsigned int initialRefcount, unsigned int flags) {
  if (object_out == nullptr || destroy == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuUserObjectCreate(object_out, ptr, destroy, initialRefcount, flags));
}
CUDART_EXPORT cudaError_t cudaUserObjectRetain(cudaUserObject_t object, unsigned int count) {
  STREAMPOOL_WITH_CONTEXT(cuUserObjectRetain(object, count));
}
CUDART_EXPORT cudaError_t cudaUserObjectRelease(cudaUserObject_t object, unsigned int count) {
  STREAMPOOL_WITH_CONTEXT(cuUserObjectRelease(object, count));
}
CUDART_EXPORT cudaError_t cudaGraphRetainUserObject(cudaGraph_t graph, cudaUserObject_t object, unsigned int count,
                                                    unsigned int flags) {
  STREAMPOOL_WITH_CONTEXT(cuGraphRetainUserObject(graph, object, count, flags));
}
CUDART_EXPORT cudaError_t cudaGraphReleaseUserObject(cudaGraph_t graph, cudaUserObject_t object, unsigned int count) {
  STREAMPOOL_WITH_CONTEXT(cuGraphReleaseUserObject(graph, object, count));
}
