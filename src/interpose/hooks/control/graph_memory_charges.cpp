#include "graph_memory_charges.hpp"

#include "driver/capture_tracker.hpp"
#include "driver/driver_table.hpp"
#include "hooks/process_state.hpp"
#include "hooks/report/oom_report.hpp"
#include "process_limit.hpp"

namespace streampool::interpose::control_hooks {

namespace ctl = streampool::control;

namespace {

// Child graphs deeper than this are not walked (their allocations go uncounted at launch).
constexpr int kMaxGraphDepth = 16;

GraphMemoryState& graph_state() noexcept { return state().caps.graph; }

void add_bytes(std::vector<GraphDeviceBytes>& devices, int device, std::uint64_t bytes) {
  for (GraphDeviceBytes& entry : devices) {
    if (entry.device == device) {
      entry.bytes = __builtin_add_overflow(entry.bytes, bytes, &entry.bytes) ? UINT64_MAX : entry.bytes;
      return;
    }
  }
  devices.push_back(GraphDeviceBytes{device, bytes});
}

// Sums the bytes of the graph's memory-allocation nodes per device, child graphs included.
void walk_graph(CUgraph graph, int depth, std::vector<GraphDeviceBytes>& devices) {
  const driver::DriverTable& table = driver::real();
  if (depth > kMaxGraphDepth || table.cuGraphGetNodes == nullptr || table.cuGraphNodeGetType == nullptr) return;
  std::size_t count = 0;
  if (table.cuGraphGetNodes(graph, nullptr, &count) != CUDA_SUCCESS || count == 0) return;
  std::vector<CUgraphNode> nodes(count);
  if (table.cuGraphGetNodes(graph, nodes.data(), &count) != CUDA_SUCCESS) return;
  nodes.resize(count < nodes.size() ? count : nodes.size());
  for (CUgraphNode node : nodes) {
    CUgraphNodeType type{};
    if (table.cuGraphNodeGetType(node, &type) != CUDA_SUCCESS) continue;
    if (type == CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
      CUDA_MEM_ALLOC_NODE_PARAMS params{};
      if (forward(table.cuGraphMemAllocNodeGetParams, node, &params) == CUDA_SUCCESS &&
          params.poolProps.location.type == CU_MEM_LOCATION_TYPE_DEVICE && params.bytesize != 0) {
        add_bytes(devices, params.poolProps.location.id, params.bytesize);
      }
    } else if (type == CU_GRAPH_NODE_TYPE_GRAPH) {
      CUgraph child = nullptr;
      if (forward(table.cuGraphChildGraphNodeGetGraph, node, &child) == CUDA_SUCCESS && child != nullptr) {
        walk_graph(child, depth + 1, devices);
      }
    }
  }
}

bool graph_attribute(int device, CUgraphMem_attribute attribute, std::uint64_t* value) noexcept {
  cuuint64_t answer = 0;
  if (forward(driver::real().cuDeviceGetGraphMemAttribute, device, attribute, static_cast<void*>(&answer)) !=
      CUDA_SUCCESS) {
    return false;
  }
  *value = answer;
  return true;
}

// Sets the device's graph charge to what the driver reports reserved (kept where it cannot say).
void sync_device(int device) noexcept {
  if (device < 0 || device >= ctl::kMaxDevices) return;
  CapState& s = state().caps;
  try {
    // Read under the lock: two re-reads racing could otherwise leave the older figure last.
    std::lock_guard lock(s.graph.mutex);
    std::uint64_t reserved = 0;
    if (!graph_attribute(device, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &reserved)) return;
    const std::uint64_t held = s.cap.held(ctl::Holder::graph, device);
    if (reserved > held) s.cap.charge_past_limit(ctl::Holder::graph, device, reserved - held);
    if (reserved < held) s.cap.uncharge(ctl::Holder::graph, device, held - reserved);
  } catch (...) {
  }
}

// What a launch needing `bytes` on `device` may add to the reservation: the attributes' estimate.
bool fits(int device, std::uint64_t bytes) noexcept {
  std::uint64_t used = 0, reserved = 0;
  if (!graph_attribute(device, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &used) ||
      !graph_attribute(device, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &reserved)) {
    return true;  // nothing to estimate from: the launch is the driver's to refuse
  }
  std::uint64_t needed = 0;
  if (__builtin_add_overflow(used, bytes, &needed)) return false;
  const std::uint64_t growth = needed > reserved ? needed - reserved : 0;
  return growth == 0 || growth <= process_cap().effective_headroom(device);
}

// The growth to report with a refusal (the figure fits() compared).
std::uint64_t growth_of(int device, std::uint64_t bytes) noexcept {
  std::uint64_t used = 0, reserved = 0;
  (void)graph_attribute(device, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &used);
  (void)graph_attribute(device, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &reserved);
  const std::uint64_t needed = used + bytes < used ? UINT64_MAX : used + bytes;
  return needed > reserved ? needed - reserved : 0;
}

// Whether the launch may go: on each device with a limit, it fits, or fits once the pools' unused
// memory and the graph memory no live allocation uses went back. Under the estimate the graph
// trim changes no answer of its own (what it gives back leaves the reservation it came from); it
// runs because the driver may not reuse its reservation as the estimate assumes, and because a
// refused launch should leave the device with what it could give back given back, as the pools'
// refusals do.
bool admit(const std::vector<GraphDeviceBytes>& devices) noexcept {
  for (const GraphDeviceBytes& need : devices) {
    if (process_cap().effective_limit(need.device) == ctl::kNoLimit || fits(need.device, need.bytes)) continue;
    (void)reclaim_cached(need.device);
    (void)forward(driver::real().cuDeviceGraphMemTrim, need.device);
    sync_device(need.device);
    if (fits(need.device, need.bytes)) continue;
    report_driver_out_of_memory(need.device, static_cast<std::size_t>(growth_of(need.device, need.bytes)));
    return false;
  }
  return true;
}

// Whether `stream` is capturing (a launch there adds a node to the capture and runs nothing); a
// stream the driver cannot say about is taken as capturing: nothing is estimated or refused.
bool capturing(CUstream stream, bool per_thread) noexcept {
  if (!driver::captures_possible()) return false;
  const driver::DriverTable& table = driver::real();
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  const CUresult result = per_thread ? forward(table.cuStreamIsCapturing_ptsz, stream, &status)
                                     : forward(table.cuStreamIsCapturing, stream, &status);
  return result != CUDA_SUCCESS || status != CU_STREAM_CAPTURE_STATUS_NONE;
}

// What a known executable graph allocates (false: not known).
bool known_exec(CUgraphExec exec, GraphExecMemory* out) {
  ProcessState* current = existing_state();
  if (current == nullptr || current->caps.graph.known.load(std::memory_order_acquire) == 0) return false;
  GraphMemoryState& g = current->caps.graph;
  std::lock_guard lock(g.mutex);
  const auto found = g.execs.find(reinterpret_cast<std::uintptr_t>(exec));
  if (found == g.execs.end()) return false;
  *out = found->second;
  return true;
}

}  // namespace

CUresult graph_instantiated(CUresult result, const CUgraphExec* exec, CUgraph graph) noexcept {
  if (result != CUDA_SUCCESS || exec == nullptr || *exec == nullptr || graph == nullptr || !limit_set()) return result;
  try {
    GraphExecMemory memory;
    walk_graph(graph, 0, memory.devices);
    if (memory.devices.empty()) return result;
    (void)forward(driver::real().cuCtxGetCurrent, &memory.context);
    GraphMemoryState& g = graph_state();
    std::lock_guard lock(g.mutex);
    g.execs[reinterpret_cast<std::uintptr_t>(*exec)] = std::move(memory);
    g.known.store(g.execs.size(), std::memory_order_release);
  } catch (...) {
    // Not known: launched unestimated, its reservation counted at the next re-read.
  }
  return result;
}

CUresult graph_launch(GraphLaunchFn real, CUgraphExec exec, CUstream stream, bool per_thread) noexcept {
  GraphExecMemory memory;
  try {
    if (!known_exec(exec, &memory) || capturing(stream, per_thread)) return forward(real, exec, stream);
  } catch (...) {
    return forward(real, exec, stream);
  }
  if (!admit(memory.devices)) return CUDA_ERROR_OUT_OF_MEMORY;
  const CUresult result = forward(real, exec, stream);
  if (result == CUDA_SUCCESS) {
    for (const GraphDeviceBytes& need : memory.devices) sync_device(need.device);
  }
  return result;
}

CUresult graph_exec_destroy(CUgraphExec exec) noexcept {
  const driver::DriverTable& table = driver::real();
  GraphExecMemory memory;
  try {
    if (!known_exec(exec, &memory)) return forward(table.cuGraphExecDestroy, exec);
  } catch (...) {
    return forward(table.cuGraphExecDestroy, exec);
  }
  const CUresult result = forward(table.cuGraphExecDestroy, exec);
  if (result != CUDA_SUCCESS) return result;
  try {
    GraphMemoryState& g = graph_state();
    std::lock_guard lock(g.mutex);
    g.execs.erase(reinterpret_cast<std::uintptr_t>(exec));
    g.known.store(g.execs.size(), std::memory_order_release);
  } catch (...) {
  }
  // A driver may give back the graph's reservation with it (NVIDIA's keeps it until a trim).
  for (const GraphDeviceBytes& need : memory.devices) sync_device(need.device);
  return result;
}

CUresult graph_mem_trim(CUdevice device) noexcept {
  const CUresult result = forward(driver::real().cuDeviceGraphMemTrim, device);
  if (result == CUDA_SUCCESS && limit_set()) sync_device(device);
  return result;
}

CUresult graph_mem_set_attribute(CUdevice device, CUgraphMem_attribute attribute, void* value) noexcept {
  const CUresult result = forward(driver::real().cuDeviceSetGraphMemAttribute, device, attribute, value);
  if (result == CUDA_SUCCESS && limit_set()) sync_device(device);
  return result;
}

void graph_memory_context_ended(CUcontext context) noexcept {
  ProcessState* current = existing_state();
  if (current == nullptr || context == nullptr) return;
  CapState& s = current->caps;
  try {
    {
      std::lock_guard lock(s.graph.mutex);
      for (auto it = s.graph.execs.begin(); it != s.graph.execs.end();) {
        it = it->second.context == context ? s.graph.execs.erase(it) : std::next(it);
      }
      s.graph.known.store(s.graph.execs.size(), std::memory_order_release);
    }
    // The driver gave back what the context's graphs held; which device it was on is gone with it.
    for (int device = 0; device < ctl::kMaxDevices; ++device) {
      if (s.cap.held(ctl::Holder::graph, device) != 0) sync_device(device);
    }
  } catch (...) {
  }
}

}  // namespace streampool::interpose::control_hooks
