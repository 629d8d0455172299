// What the hooks share process-wide: the one Engine (created on first use, never destroyed: the
// real driver is torn down before us at exit and hooks may still run then), its Ordering, the
// default and current pools, the re-entry guard and the translation of engine results.
//
// Fork: the child abandons the parent's state (its locks may be held by threads that did not
// survive) and starts afresh on its next hook call; the parent's pool handles mean nothing there,
// as CUDA itself does not survive a fork once initialised.
#pragma once

#include <atomic>
#include <mutex>

#include "driver/cuda_compat.hpp"
#include "driver/driver_table.hpp"
#include "driver/event_ordering.hpp"
#include "driver/settings.hpp"
#include "core/engine.hpp"
#include "control/process_limit.hpp"
#include "insight/nvtx_registry.hpp"
#include "location_pools.hpp"
#include "reentry_guard.hpp"
#include "report/oom_report.hpp"
#include "serve/serve_state.hpp"

namespace streampool::interpose {

// Default and current pools of each device's pinned memory (those of host and managed locations are
// LocationPools'). Defaults are created on first request.
class PoolDirectory {
 public:
  static constexpr int kMaxDevices = 64;

  explicit PoolDirectory(core::Engine& engine) noexcept : engine_(engine) {}

  // The pool cuMemAllocAsync uses on this device: one atomic load once it exists. Every change of
  // a current pool invalidates the routes (the allocation hooks cache a device's current pool).
  CUresult device_current(CUdevice device, core::Pool** pool) noexcept {
    if (device >= 0 && device < kMaxDevices) [[likely]] {
      core::Pool* current = device_current_[device].load(std::memory_order_acquire);
      if (current != nullptr) [[likely]] {
        *pool = current;
        return CUDA_SUCCESS;
      }
    }
    return device_default(device, pool);
  }
  CUresult device_default(CUdevice device, core::Pool** pool) noexcept;
  CUresult set_device_current(CUdevice device, core::Pool* pool) noexcept;

  bool is_default(const core::Pool* pool) const noexcept;
  // A pool is being destroyed: wherever it was current, the default becomes current again.
  void forget(const core::Pool* pool) noexcept;

 private:
  CUresult create_default(const core::PoolProps& props, std::atomic<core::Pool*>& default_slot,
                          std::atomic<core::Pool*>& current_slot, core::Pool** pool) noexcept;

  core::Engine& engine_;
  std::mutex create_mutex_;
  std::atomic<core::Pool*> device_default_[kMaxDevices]{};
  std::atomic<core::Pool*> device_current_[kMaxDevices]{};
};

struct ProcessState {
  driver::EventOrdering ordering;
  core::Engine engine{ordering};
  PoolDirectory pools{engine};
  LocationPools location_pools{engine};  // host and managed locations (location_pools.hpp)
  control_hooks::CapState caps;            // STREAMPOOL_LIMIT (control/process_limit.hpp)
  OomReports oom;                          // failed allocations (report/oom_report.hpp)
  serve_hooks::ServeState serve;           // STREAMPOOL_SERVE_MALLOC (serve/serve_malloc.hpp)
  // The state a forked child abandoned before this one was made: kept reachable, so that a leak
  // checker does not report at the child's exit what was abandoned on purpose.
  ProcessState* abandoned_before_fork = nullptr;
};

namespace detail {
extern std::atomic<ProcessState*> process_state;
ProcessState& create_process_state() noexcept;
}  // namespace detail

inline ProcessState& state() noexcept {
  ProcessState* current = detail::process_state.load(std::memory_order_acquire);
  if (current != nullptr) [[likely]] return *current;
  return detail::create_process_state();
}
inline core::Engine& engine() noexcept { return state().engine; }
inline PoolDirectory& pools() noexcept { return state().pools; }
inline LocationPools& location_pools() noexcept { return state().location_pools; }
// The state if it exists, without creating it (reports, exit paths).
inline ProcessState* existing_state() noexcept {
  return detail::process_state.load(std::memory_order_acquire);
}

// The props of a device's default pool (pinned device memory of `device`), and of the pools made
// like it (serve/serve_pools.cpp).
core::PoolProps device_pool_props(CUdevice device) noexcept;

// Once per process, on the first hook call: fork handler, STREAMPOOL_STATS report at exit.
void note_first_use() noexcept;

// Every hook opens a scope first (the interposer's one re-entry depth, shared with cuGetProcAddress).
// A hook forwards unchanged when streampool is disabled (STREAMPOOL_DISABLE=1) or when it was entered
// from inside streampool (the real driver calling an exported name back, or our own slow paths).
using HookScope = ReentryGuard;
inline bool bypass(const HookScope& scope) noexcept {
  return scope.nested() || driver::passthrough_requested();
}

CUresult to_cuda_slow(core::Status status) noexcept;
inline CUresult to_cuda(core::Status status) noexcept {
  return status == core::Status::success ? CUDA_SUCCESS : to_cuda_slow(status);
}

// Calls the real entry point, or answers as the driver would if it has none.
template <class Fn, class... Args>
CUresult forward(Fn fn, Args... args) noexcept {
  if (fn == nullptr) return driver::missing_entry_result();
  return fn(args...);
}

}  // namespace streampool::interpose

// Every hooked function: C linkage, exported, the exact cuda.h signature.
#define STREAMPOOL_HOOK extern "C" __attribute__((visibility("default")))
