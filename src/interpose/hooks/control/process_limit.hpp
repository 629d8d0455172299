// The hooks' side of the process cap (STREAMPOOL_LIMIT): reading and resolving the setting, the
// pools' backings charged to it, the driver's synchronous allocations counted by the hooks that
// forward them, cuMemGetInfo answered within it, and reclaiming cached memory before a refusal.
//
// What is counted (device memory only): every device pool's mapped granules (or chunks), exportable
// pools included; cuMemAlloc, cuMemAllocPitch and cuMemCreate of device memory; CUDA arrays,
// mipmapped ones among them (array_charges.hpp, mipmap_charges.hpp); the memory the driver
// reserves for graphs' memory-allocation nodes, as the graph memory attributes report it
// (graph_memory_charges.hpp). Not counted: pinned host pools and managed pools (host memory, or
// memory the driver migrates and evicts on its own), cuMemHostAlloc, cuMemAllocManaged, IPC
// imports (the exporting process holds that memory and is charged for it), contexts, modules and
// the driver's other reservations. The
// last are reported as an estimate: the device's free memory at the first cuMemGetInfo under the
// cap, less its free memory now, less what was counted since.
//
// Nothing here is on the allocation fast path: the pools are charged at growth, the forwarded
// calls are the driver's slow synchronous ones.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "control/group_budget.hpp"
#include "control/process_cap.hpp"
#include "core/backing.hpp"
#include "core/engine.hpp"
#include "core/pool_props.hpp"
#include "driver/cuda_compat.hpp"
#include "graph_memory_charges.hpp"

namespace streampool::interpose::control_hooks {

// One forwarded allocation: where it was charged, and the context that owns it (cuMemAlloc memory
// ends with its context; cuMemCreate memory does not, and has none).
struct Forwarded {
  int device = -1;
  std::uint64_t bytes = 0;
  CUcontext context = nullptr;
};

// The cap's state, one per ProcessState (a forked child starts afresh with the setting re-read).
struct CapState {
  // Declared before the cap that charges it: it outlives the cap.
  std::unique_ptr<streampool::control::GroupBudget> group;  // STREAMPOOL_GROUP, if set and usable
  streampool::control::ProcessCap cap;
  std::atomic<bool> resolved{false};
  std::atomic<bool> limited{false};
  std::atomic<int> device_count{0};  // as the driver said when the limits were resolved
  std::mutex resolve_mutex;
  bool setting_read = false;  // under resolve_mutex
  streampool::control::LimitSpec spec;
  std::mutex forwarded_mutex;
  std::unordered_map<std::uintptr_t, Forwarded> allocations;  // cuMemAlloc(Pitch) pointers
  std::unordered_map<std::uint64_t, Forwarded> handles;       // cuMemCreate handles
  std::unordered_map<std::uintptr_t, Forwarded> arrays;       // cuArrayCreate, cuArray3DCreate
  std::unordered_map<std::uintptr_t, Forwarded> mipmaps;      // cuMipmappedArrayCreate (charged as arrays)
  GraphMemoryState graph;                                     // executable graphs that allocate
  // Per device, at the first cuMemGetInfo under the cap: the device's free memory and what was
  // counted then (0 free: not measured yet). The base of the estimate of what is not counted.
  std::atomic<std::uint64_t> free_at_start[streampool::control::kMaxDevices]{};
  std::atomic<std::uint64_t> counted_at_start[streampool::control::kMaxDevices]{};
  std::atomic<std::uint64_t> free_last[streampool::control::kMaxDevices]{};     // at the latest one
  std::atomic<std::uint64_t> counted_last[streampool::control::kMaxDevices]{};
};

// The process's cap, with its limits resolved (once the driver can say what devices it has).
streampool::control::ProcessCap& process_cap() noexcept;
// Whether STREAMPOOL_LIMIT set a limit on any device.
bool limit_set() noexcept;

// The device whose memory a pool of these props takes, or -1 (not device memory: not counted).
int charged_device(const core::PoolProps& props) noexcept;
// The backing a pool gets: charged to the process cap where the pool takes device memory.
std::unique_ptr<core::Backing> capped(const core::PoolProps& props, std::unique_ptr<core::Backing> backing);

// Gives back to the device what the pools hold unused (their free granules): what an allocation
// over the cap tries before it fails. True if anything was released.
bool reclaim_cached(int device) noexcept;
// The same for the device a pool's allocation failed on, where that device has a limit: the
// allocation is worth trying again if it released anything.
bool reclaim_for(const core::Pool* pool) noexcept;

// Charges one of the driver's own allocations as `holder`; over the cap, the pools' cached memory
// is given back first, and a refusal is reported (report/oom_report.hpp) as the pools' failures are.
bool charge_driver_memory(streampool::control::Holder holder, int device, std::uint64_t bytes) noexcept;

// The forwarded synchronous allocations (hooks/memory_hooks.cpp): the real call through `real`.
CUresult mem_alloc(CUdeviceptr* dptr, std::size_t bytes) noexcept;
CUresult mem_alloc_pitch(CUdeviceptr* dptr, std::size_t* pitch, std::size_t width, std::size_t height,
                         unsigned element_bytes) noexcept;
// A cuMemFree_v2 of memory that is not a pool's: forwarded, and given back if it was counted.
CUresult mem_free_forwarded(CUdeviceptr dptr) noexcept;
CUresult mem_create(CUmemGenericAllocationHandle* handle, std::size_t bytes, const CUmemAllocationProp* prop,
                    unsigned long long flags) noexcept;
CUresult mem_release(CUmemGenericAllocationHandle handle) noexcept;
// A context ended: the driver freed its cuMemAlloc memory.
void context_ended(CUcontext context) noexcept;

// cuMemGetInfo under the cap: total = the cap, free = the cap less what the process holds (and
// never more than the device really has free).
CUresult mem_get_info(std::size_t* free_bytes, std::size_t* total_bytes) noexcept;

// For reports: one device's figures. False past the devices that exist.
struct DeviceFigures {
  std::uint64_t limit = streampool::control::kNoLimit;
  std::uint64_t pools_bytes = 0;      // mapped by the pools (in use + cached)
  std::uint64_t in_use_bytes = 0;     // of that, allocated (the pools' used statistic)
  std::uint64_t cached_bytes = 0;     // of that, held free
  std::uint64_t forwarded_bytes = 0;  // cuMemAlloc, cuMemAllocPitch, cuMemCreate
  std::uint64_t arrays_bytes = 0;     // cuArrayCreate, cuArray3DCreate, cuMipmappedArrayCreate
  std::uint64_t graph_bytes = 0;      // reserved for graphs' memory-allocation nodes (the driver's figure)
  std::uint64_t estimated_other_bytes = 0;  // uncounted use since the first cuMemGetInfo (estimate)
  std::uint64_t peak_bytes = 0;             // the most counted at once (all holders)
  std::uint64_t served_malloc_bytes = 0;    // of in_use_bytes, served for cuMemAlloc (STREAMPOOL_SERVE_MALLOC)
};
// No driver call: fit for the report at exit, after the driver's teardown.
bool device_figures(int device, DeviceFigures* figures) noexcept;
// The devices worth reporting: those the driver said it has, and any other that holds something.
int reported_devices() noexcept;

}  // namespace streampool::interpose::control_hooks
