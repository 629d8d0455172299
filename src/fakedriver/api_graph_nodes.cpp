// Entry points: the graph nodes of kernels, of graph memory and of child graphs (graph.hpp), and
// the device's graph memory: its attributes and trim (graph_memory.hpp).
// A kernel node is recorded, not run, each time its graph is launched. A memory alloc node allocates
// at once, in the current context, and its address is the graph's for the graph's life (CUDA fixes
// the address of graph memory when the node is added, too); what a launch uses and reserves is
// accounted by graph_memory.hpp. A child graph node owns a copy of its child graph, memory nodes
// included (NVIDIA's driver refuses to copy a graph with memory nodes; it takes one whose ownership
// is moved into the node, which the fake does not offer).
#include <algorithm>

#include "allocations.hpp"
#include "api_guard.hpp"
#include "driver.hpp"
#include "graph.hpp"
#include "graph_memory.hpp"
#include "launch_record.hpp"

namespace fake {
namespace {

CUresult add_node(CUgraphNode* out, CUgraph graph, const CUgraphNode* dependencies, size_t count, GraphNode node) {
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUgraphNode added = add_graph_node(graph, dependencies, count, std::move(node));
  if (added == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *out = added;
  return CUDA_SUCCESS;
}

CUresult add_kernel_node(CUgraphNode* out, CUgraph graph, const CUgraphNode* dependencies, size_t count,
                         const CUDA_KERNEL_NODE_PARAMS* params) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (params == nullptr || params->gridDimX == 0 || params->gridDimY == 0 || params->gridDimZ == 0 ||
      params->blockDimX == 0 || params->blockDimY == 0 || params->blockDimZ == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (!is_function(params->func)) return CUDA_ERROR_INVALID_VALUE;
  GraphNode node;
  node.kind = GraphNodeKind::kernel;
  node.type = CU_GRAPH_NODE_TYPE_KERNEL;
  node.function = params->func;
  const unsigned grid[3] = {params->gridDimX, params->gridDimY, params->gridDimZ};
  const unsigned block[3] = {params->blockDimX, params->blockDimY, params->blockDimZ};
  std::copy(grid, grid + 3, node.grid);
  std::copy(block, block + 3, node.block);
  node.shared_bytes = params->sharedMemBytes;
  return add_node(out, graph, dependencies, count, std::move(node));
}

CUresult add_mem_alloc_node(CUgraphNode* out, CUgraph graph, const CUgraphNode* dependencies, size_t count,
                            CUDA_MEM_ALLOC_NODE_PARAMS* params) {
  Context* context = nullptr;
  if (CUresult status = require_current_context(context); status != CUDA_SUCCESS) return status;
  if (params == nullptr || params->bytesize == 0 || params->poolProps.allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
      params->poolProps.location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (CUresult status = require_device(params->poolProps.location.id); status != CUDA_SUCCESS) return status;
  std::uintptr_t address = 0;
  if (CUresult status = allocate_memory(MemoryKind::device, params->bytesize, context, address);
      status != CUDA_SUCCESS) {
    return status;
  }
  GraphNode node;
  node.kind = GraphNodeKind::mem_alloc;
  node.type = CU_GRAPH_NODE_TYPE_MEM_ALLOC;
  node.alloc = *params;
  node.alloc.accessDescs = nullptr;
  node.alloc.accessDescCount = 0;
  node.alloc.dptr = address;
  if (CUresult status = add_node(out, graph, dependencies, count, std::move(node)); status != CUDA_SUCCESS) {
    free_memory(address, true, false);
    return status;
  }
  params->dptr = address;
  return CUDA_SUCCESS;
}

CUresult add_mem_free_node(CUgraphNode* out, CUgraph graph, const CUgraphNode* dependencies, size_t count,
                           CUdeviceptr address) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (!find_allocation(address)) return CUDA_ERROR_INVALID_VALUE;
  GraphNode node;
  node.kind = GraphNodeKind::mem_free;
  node.type = CU_GRAPH_NODE_TYPE_MEM_FREE;
  node.freed = address;
  return add_node(out, graph, dependencies, count, std::move(node));
}

CUresult graph_mem_trim(CUdevice device) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (CUresult status = require_device(device); status != CUDA_SUCCESS) return status;
  graph_memory_trim(device);
  return CUDA_SUCCESS;
}

CUresult alloc_node_params(CUgraphNode node, CUDA_MEM_ALLOC_NODE_PARAMS* out) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const bool found = change_graph_node(node, [out](GraphNode& held) {
    if (held.kind != GraphNodeKind::mem_alloc) return false;
    *out = held.alloc;
    return true;
  });
  return found ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult free_node_params(CUgraphNode node, CUdeviceptr* out) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const bool found = change_graph_node(node, [out](GraphNode& held) {
    if (held.kind != GraphNodeKind::mem_free) return false;
    *out = held.freed;
    return true;
  });
  return found ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult add_child_graph_node(CUgraphNode* out, CUgraph graph, const CUgraphNode* dependencies, size_t count,
                              CUgraph child) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (child == graph) return CUDA_ERROR_INVALID_VALUE;
  CUgraph copy = clone_graph(child);
  if (copy == nullptr) return CUDA_ERROR_INVALID_VALUE;
  GraphNode node;
  node.kind = GraphNodeKind::child;
  node.type = CU_GRAPH_NODE_TYPE_GRAPH;
  node.child = copy;
  if (CUresult status = add_node(out, graph, dependencies, count, std::move(node)); status != CUDA_SUCCESS) {
    destroy_graph(copy);
    return status;
  }
  return CUDA_SUCCESS;
}

CUresult child_graph_of(CUgraphNode node, CUgraph* out) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const bool found = change_graph_node(node, [out](GraphNode& held) {
    if (held.kind != GraphNodeKind::child) return false;
    *out = held.child;
    return true;
  });
  return found ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult get_graph_mem_attribute(CUdevice device, CUgraphMem_attribute attribute, void* value) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  return graph_memory_attribute(device, attribute, value);
}

CUresult set_graph_mem_attribute(CUdevice device, CUgraphMem_attribute attribute, void* value) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  return set_graph_memory_attribute(device, attribute, value);
}

}  // namespace
}  // namespace fake

using namespace fake;

FAKE_EXPORT CUresult cuGraphAddKernelNode_v2(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                             size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS* nodeParams) {
  FAKE_ENTRY(add_kernel_node(phGraphNode, hGraph, dependencies, numDependencies, nodeParams));
}
FAKE_EXPORT CUresult cuGraphAddMemAllocNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                            size_t numDependencies, CUDA_MEM_ALLOC_NODE_PARAMS* nodeParams) {
  FAKE_ENTRY(add_mem_alloc_node(phGraphNode, hGraph, dependencies, numDependencies, nodeParams));
}
FAKE_EXPORT CUresult cuGraphAddMemFreeNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                           size_t numDependencies, CUdeviceptr dptr) {
  FAKE_ENTRY(add_mem_free_node(phGraphNode, hGraph, dependencies, numDependencies, dptr));
}
FAKE_EXPORT CUresult cuDeviceGraphMemTrim(CUdevice device) { FAKE_ENTRY(graph_mem_trim(device)); }
FAKE_EXPORT CUresult cuGraphMemAllocNodeGetParams(CUgraphNode hNode, CUDA_MEM_ALLOC_NODE_PARAMS* params_out) {
  FAKE_ENTRY(alloc_node_params(hNode, params_out));
}
FAKE_EXPORT CUresult cuGraphMemFreeNodeGetParams(CUgraphNode hNode, CUdeviceptr* dptr_out) {
  FAKE_ENTRY(free_node_params(hNode, dptr_out));
}
FAKE_EXPORT CUresult cuGraphAddChildGraphNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                              size_t numDependencies, CUgraph childGraph) {
  FAKE_ENTRY(add_child_graph_node(phGraphNode, hGraph, dependencies, numDependencies, childGraph));
}
FAKE_EXPORT CUresult cuGraphChildGraphNodeGetGraph(CUgraphNode hNode, CUgraph* phGraph) {
  FAKE_ENTRY(child_graph_of(hNode, phGraph));
}
FAKE_EXPORT CUresult cuDeviceGetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void* value) {
  FAKE_ENTRY(get_graph_mem_attribute(device, attr, value));
}
FAKE_EXPORT CUresult cuDeviceSetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void* value) {
  FAKE_ENTRY(set_graph_mem_attribute(device, attr, value));
}
