// Entry points: copy and memset nodes of graphs built by hand (linear memory only: the fake has no
// arrays), the generic cuGraphAddNode for those, empty and event nodes, and walking a graph's nodes. A copy or memset node is work the launch stream's worker runs
// in the node's turn, like the synchronous copy it describes.
#include <cstring>

#include "api_guard.hpp"
#include "driver.hpp"
#include "graph.hpp"
#include "pointer_info.hpp"

namespace fake {
namespace {

// The first byte of one side of a 3D copy; 0 for a side the fake cannot express (arrays).
std::uintptr_t side_start(CUmemorytype type, const void* host, CUdeviceptr device, std::size_t x, std::size_t y,
                          std::size_t z, std::size_t pitch, std::size_t height) {
  std::uintptr_t base = 0;
  switch (type) {
    case CU_MEMORYTYPE_HOST: base = reinterpret_cast<std::uintptr_t>(host); break;
    case CU_MEMORYTYPE_DEVICE:
    case CU_MEMORYTYPE_UNIFIED: base = device; break;
    default: return 0;
  }
  if (base == 0) return 0;
  return base + (z * height + y) * pitch + x;
}

CUresult add_work_node(CUgraphNode* out, CUgraph graph, const CUgraphNode* dependencies, std::size_t count,
                       CUgraphNodeType type, std::function<void()> work) {
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  GraphNode node;
  node.kind = GraphNodeKind::work;
  node.type = type;
  node.work = std::move(work);
  CUgraphNode added = add_graph_node(graph, dependencies, count, std::move(node));
  if (added == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *out = added;
  return CUDA_SUCCESS;
}

CUresult add_copy_node(CUgraphNode* out, CUgraph graph, const CUgraphNode* dependencies, std::size_t count,
                       const CUDA_MEMCPY3D* copy) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (copy == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const std::size_t width = copy->WidthInBytes;
  const std::size_t height = copy->Height;
  const std::size_t depth = copy->Depth;
  const std::size_t src_pitch = copy->srcPitch != 0 ? copy->srcPitch : width;
  const std::size_t dst_pitch = copy->dstPitch != 0 ? copy->dstPitch : width;
  const std::uintptr_t src = side_start(copy->srcMemoryType, copy->srcHost, copy->srcDevice, copy->srcXInBytes,
                                        copy->srcY, copy->srcZ, src_pitch, copy->srcHeight);
  const std::uintptr_t dst = side_start(copy->dstMemoryType, copy->dstHost, copy->dstDevice, copy->dstXInBytes,
                                        copy->dstY, copy->dstZ, dst_pitch, copy->dstHeight);
  if (src == 0 || dst == 0 || width == 0 || height == 0 || depth == 0) return CUDA_ERROR_INVALID_VALUE;
  const std::size_t src_slice = src_pitch * (copy->srcHeight != 0 ? copy->srcHeight : height);
  const std::size_t dst_slice = dst_pitch * (copy->dstHeight != 0 ? copy->dstHeight : height);
  return add_work_node(out, graph, dependencies, count, CU_GRAPH_NODE_TYPE_MEMCPY, [=] {
    for (std::size_t slice = 0; slice < depth; ++slice) {
      for (std::size_t row = 0; row < height; ++row) {
        std::memmove(reinterpret_cast<void*>(dst + slice * dst_slice + row * dst_pitch),
                     reinterpret_cast<const void*>(src + slice * src_slice + row * src_pitch), width);
      }
    }
  });
}

CUresult add_memset_node(CUgraphNode* out, CUgraph graph, const CUgraphNode* dependencies, std::size_t count,
                         const CUDA_MEMSET_NODE_PARAMS* params) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (params == nullptr || params->dst == 0 || params->width == 0 || params->height == 0) return CUDA_ERROR_INVALID_VALUE;
  const unsigned element = params->elementSize;
  if (element != 1 && element != 2 && element != 4) return CUDA_ERROR_INVALID_VALUE;
  const std::size_t row_bytes = params->width * element;
  const std::size_t pitch = params->height > 1 ? params->pitch : row_bytes;
  if (pitch < row_bytes || !device_range_usable(params->dst, (params->height - 1) * pitch + row_bytes)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const std::uintptr_t dst = params->dst;
  const std::size_t width = params->width;
  const std::size_t height = params->height;
  const unsigned value = params->value;
  return add_work_node(out, graph, dependencies, count, CU_GRAPH_NODE_TYPE_MEMSET, [=] {
    for (std::size_t row = 0; row < height; ++row) {
      auto* bytes = reinterpret_cast<unsigned char*>(dst + row * pitch);
      for (std::size_t index = 0; index < width; ++index) {
        // The low `element` bytes of the value, in memory order (little-endian, as on the GPU).
        std::memcpy(bytes + index * element, &value, element);
      }
    }
  });
}

// The generic form, for the node kinds of this file, empty nodes and event-record and event-wait nodes.
CUresult add_generic_node(CUgraphNode* out, CUgraph graph, const CUgraphNode* dependencies,
                          const CUgraphEdgeData* edges, std::size_t count, CUgraphNodeParams* params) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (params == nullptr) return CUDA_ERROR_INVALID_VALUE;
  (void)edges;  // default edges only: the fake runs nodes as a chain anyway
  switch (params->type) {
    case CU_GRAPH_NODE_TYPE_MEMCPY:
      return add_copy_node(out, graph, dependencies, count, &params->memcpy.copyParams);
    case CU_GRAPH_NODE_TYPE_MEMSET: {
      CUDA_MEMSET_NODE_PARAMS memset{};
      memset.dst = params->memset.dst;
      memset.pitch = params->memset.pitch;
      memset.value = params->memset.value;
      memset.elementSize = params->memset.elementSize;
      memset.width = params->memset.width;
      memset.height = params->memset.height;
      return add_memset_node(out, graph, dependencies, count, &memset);
    }
    case CU_GRAPH_NODE_TYPE_EMPTY:
      return add_work_node(out, graph, dependencies, count, CU_GRAPH_NODE_TYPE_EMPTY, [] {});
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
      return add_event_node(out, graph, dependencies, count, params->eventRecord.event, GraphNodeKind::event_record);
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
      return add_event_node(out, graph, dependencies, count, params->eventWait.event, GraphNodeKind::event_wait);
    default:
      return CUDA_ERROR_NOT_SUPPORTED;
  }
}

CUresult get_nodes(CUgraph graph, CUgraphNode* nodes, std::size_t* count) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::vector<CUgraphNode> handles;
  if (!graph_node_handles(graph, &handles)) return CUDA_ERROR_INVALID_VALUE;
  if (nodes != nullptr) {
    for (std::size_t index = 0; index < *count; ++index) nodes[index] = index < handles.size() ? handles[index] : nullptr;
  }
  *count = handles.size();
  return CUDA_SUCCESS;
}

CUresult node_type(CUgraphNode node, CUgraphNodeType* type) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (type == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return graph_node_type(node, type) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

}  // namespace
}  // namespace fake

using namespace fake;

// cuda.h maps cuGraphAddNode to cuGraphAddNode_v2 (with edge data); the library exports both.
#undef cuGraphAddNode
FAKE_EXPORT CUresult cuGraphAddNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                    size_t numDependencies, CUgraphNodeParams* nodeParams);

FAKE_EXPORT CUresult cuGraphAddMemcpyNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                          size_t numDependencies, const CUDA_MEMCPY3D* copyParams, CUcontext) {
  FAKE_ENTRY(add_copy_node(phGraphNode, hGraph, dependencies, numDependencies, copyParams));
}
FAKE_EXPORT CUresult cuGraphAddMemsetNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                          size_t numDependencies, const CUDA_MEMSET_NODE_PARAMS* memsetParams,
                                          CUcontext) {
  FAKE_ENTRY(add_memset_node(phGraphNode, hGraph, dependencies, numDependencies, memsetParams));
}
FAKE_EXPORT CUresult cuGraphAddNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                    size_t numDependencies, CUgraphNodeParams* nodeParams) {
  FAKE_ENTRY(add_generic_node(phGraphNode, hGraph, dependencies, nullptr, numDependencies, nodeParams));
}
FAKE_EXPORT CUresult cuGraphAddNode_v2(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                       const CUgraphEdgeData* dependencyData, size_t numDependencies,
                                       CUgraphNodeParams* nodeParams) {
  FAKE_ENTRY(add_generic_node(phGraphNode, hGraph, dependencies, dependencyData, numDependencies, nodeParams));
}
FAKE_EXPORT CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode* nodes, size_t* numNodes) {
  FAKE_ENTRY(get_nodes(hGraph, nodes, numNodes));
}
FAKE_EXPORT CUresult cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType* type) { FAKE_ENTRY(node_type(hNode, type)); }
