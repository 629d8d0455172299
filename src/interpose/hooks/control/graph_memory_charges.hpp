// Graph memory under the process cap (STREAMPOOL_LIMIT): the device memory the driver reserves for
// the memory-allocation nodes of instantiated graphs, charged as the graph holder at what the
// driver reports (cuDeviceGetGraphMemAttribute, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT).
//
// The driver alone decides when graph memory is reserved (at an upload or a launch) and given back
// (cuDeviceGraphMemTrim), so the charge follows its report: after a successful launch or upload of
// a graph known to allocate, a trim, an executable graph's destruction, a change of the graph
// memory attributes and the end of a context, the device's charge is set to the reserved figure
// (counted even past the cap: the memory is taken by then).
//
// What can be refused is a launch or an upload of such a graph: its growth is estimated from the
// attributes as max(0, USED_MEM_CURRENT + the graph's allocation bytes - RESERVED_MEM_CURRENT),
// the most it needs if no allocation reuses another's memory, and past the cap the pools' unused
// memory and the graph memory no live allocation uses (cuDeviceGraphMemTrim) go back first; then
// CUDA_ERROR_OUT_OF_MEMORY, the graph not launched. An estimate: the driver may place graph memory
// otherwise (reuse within the graph, granularity), and it cannot see graphs instantiated before
// the hooks did (or while no cap was set), nor graphs launched from the device: those are never
// refused, and what they reserve is counted at the next re-read.
//
// Only with a cap set, and only for executable graphs whose graph held memory-allocation nodes
// when it was instantiated (found by walking it, child graphs included): a program without a cap,
// and a launch of a graph without such nodes, makes no driver call it did not make before, and
// the launch hooks cost one atomic load while no such graph is known.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "driver/cuda_compat.hpp"

namespace streampool::interpose::control_hooks {

// What one executable graph allocates per launch on a device.
struct GraphDeviceBytes {
  int device = -1;
  std::uint64_t bytes = 0;
};

struct GraphExecMemory {
  std::vector<GraphDeviceBytes> devices;
  CUcontext context = nullptr;  // the executable graph ends with it
};

// The executable graphs known to allocate, one per CapState.
struct GraphMemoryState {
  std::atomic<std::size_t> known{0};  // execs.size(), read without the lock on every launch
  std::mutex mutex;                   // the map, and the graph charge's updates (one at a time)
  std::unordered_map<std::uintptr_t, GraphExecMemory> execs;
};

// After a (forwarded) instantiation: with a cap set and `result` a success, learns what the graph
// allocates. Answers `result`.
CUresult graph_instantiated(CUresult result, const CUgraphExec* exec, CUgraph graph) noexcept;

// cuGraphLaunch(_ptsz) and cuGraphUpload(_ptsz): refused past the cap as above, else forwarded,
// and the graph charge re-read after a success.
using GraphLaunchFn = CUresult (*)(CUgraphExec, CUstream);
CUresult graph_launch(GraphLaunchFn real, CUgraphExec exec, CUstream stream, bool per_thread) noexcept;

// Forwarded; the graph charge re-read after a success.
CUresult graph_exec_destroy(CUgraphExec exec) noexcept;
CUresult graph_mem_trim(CUdevice device) noexcept;
CUresult graph_mem_set_attribute(CUdevice device, CUgraphMem_attribute attribute, void* value) noexcept;

// A context ended: its executable graphs are forgotten, and every device's graph charge re-read.
// Called under no lock of the cap's.
void graph_memory_context_ended(CUcontext context) noexcept;

}  // namespace streampool::interpose::control_hooks
