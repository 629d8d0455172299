#include "graph_memory.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>

#include "driver.hpp"

namespace fake {
namespace {

struct DeviceGraphMemory {
  std::uint64_t reserved = 0;
  std::uint64_t reserved_high = 0;
  std::uint64_t used = 0;
  std::uint64_t used_high = 0;
};

struct LiveAllocation {
  int device = 0;
  std::uint64_t bytes = 0;
  const Context* context = nullptr;
};

struct GraphMemory {
  std::mutex mutex;
  std::map<int, DeviceGraphMemory> devices;
  std::map<CUdeviceptr, LiveAllocation> live;
};

GraphMemory& graph_memory() {
  static auto* instance = new GraphMemory();  // never destroyed
  return *instance;
}

void end_locked(GraphMemory& memory, std::map<CUdeviceptr, LiveAllocation>::iterator live) {
  memory.devices[live->second.device].used -= live->second.bytes;
  memory.live.erase(live);
}

}  // namespace

CUresult graph_memory_launch(const std::vector<GraphNode>& nodes, const Context* context, bool make_live) {
  GraphMemory& memory = graph_memory();
  std::lock_guard lock(memory.mutex);
  std::map<int, std::uint64_t> needed;
  for (const GraphNode& node : nodes) {
    if (node.kind != GraphNodeKind::mem_alloc) continue;
    if (make_live && memory.live.contains(node.alloc.dptr)) return CUDA_ERROR_INVALID_VALUE;
    needed[node.alloc.poolProps.location.id] += node.alloc.bytesize;
  }
  for (const auto& [device, bytes] : needed) {
    DeviceGraphMemory& figures = memory.devices[device];
    figures.reserved = std::max(figures.reserved, figures.used + bytes);
    figures.reserved_high = std::max(figures.reserved_high, figures.reserved);
  }
  if (!make_live) return CUDA_SUCCESS;
  for (const GraphNode& node : nodes) {
    if (node.kind == GraphNodeKind::mem_alloc) {
      const int device = node.alloc.poolProps.location.id;
      memory.live[node.alloc.dptr] = LiveAllocation{device, node.alloc.bytesize, context};
      DeviceGraphMemory& figures = memory.devices[device];
      figures.used += node.alloc.bytesize;
      figures.used_high = std::max(figures.used_high, figures.used);
    } else if (node.kind == GraphNodeKind::mem_free) {
      if (auto live = memory.live.find(node.freed); live != memory.live.end()) end_locked(memory, live);
    }
  }
  return CUDA_SUCCESS;
}

bool graph_memory_free(CUdeviceptr address) {
  GraphMemory& memory = graph_memory();
  std::lock_guard lock(memory.mutex);
  auto live = memory.live.find(address);
  if (live == memory.live.end()) return false;
  end_locked(memory, live);
  return true;
}

void graph_memory_trim(int device) {
  GraphMemory& memory = graph_memory();
  std::lock_guard lock(memory.mutex);
  DeviceGraphMemory& figures = memory.devices[device];
  figures.reserved = figures.used;
}

void graph_memory_context_ended(const Context* context, int device) {
  GraphMemory& memory = graph_memory();
  std::lock_guard lock(memory.mutex);
  for (auto live = memory.live.begin(); live != memory.live.end();) {
    if (live->second.context == context) {
      auto ended = live++;
      end_locked(memory, ended);
    } else {
      ++live;
    }
  }
  DeviceGraphMemory& figures = memory.devices[device];
  figures.reserved = figures.used;
}

CUresult graph_memory_attribute(int device, CUgraphMem_attribute attribute, void* value) {
  if (CUresult status = require_device(device); status != CUDA_SUCCESS) return status;
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  GraphMemory& memory = graph_memory();
  std::lock_guard lock(memory.mutex);
  const DeviceGraphMemory& figures = memory.devices[device];
  cuuint64_t answer = 0;
  switch (attribute) {
    case CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT: answer = figures.used; break;
    case CU_GRAPH_MEM_ATTR_USED_MEM_HIGH: answer = figures.used_high; break;
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT: answer = figures.reserved; break;
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH: answer = figures.reserved_high; break;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  *static_cast<cuuint64_t*>(value) = answer;
  return CUDA_SUCCESS;
}

CUresult set_graph_memory_attribute(int device, CUgraphMem_attribute attribute, void* value) {
  if (CUresult status = require_device(device); status != CUDA_SUCCESS) return status;
  if (value == nullptr || *static_cast<const cuuint64_t*>(value) != 0) return CUDA_ERROR_INVALID_VALUE;
  GraphMemory& memory = graph_memory();
  std::lock_guard lock(memory.mutex);
  DeviceGraphMemory& figures = memory.devices[device];
  switch (attribute) {
    case CU_GRAPH_MEM_ATTR_USED_MEM_HIGH: figures.used_high = figures.used; break;
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH: figures.reserved_high = figures.reserved; break;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

}  // namespace fake
