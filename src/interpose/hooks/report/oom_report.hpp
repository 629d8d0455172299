// The out-of-memory report where an allocation finally fails (after the cap's reclaim and the
// engine's own last resorts), or where the cap refuses one of the driver's own allocations: the
// hooks' side of src/insight/oom_report.hpp.
//
// report_out_of_memory gathers the figures (the engine's statistics and free figures of the
// device's pools, its largest live allocations, the process cap's counters, and the real driver's
// cuMemGetInfo when no capture is in progress anywhere), chooses the explanation, keeps the report
// as JSON for streampool_oom_report, records an out_of_memory event in the trace, and writes the
// report to stderr for the first failure of the process (unless STREAMPOOL_LOG is off or below
// warn); at exit, one line counts the failures after it.
//
// What it may not do, since the failing call is the program's: allocate device memory (it asks
// nothing of the pools but figures), call the driver in a way that breaks a capture (cuMemGetInfo
// only while no capture runs; no event, no query), re-enter the hooks (it runs inside the failing
// hook's scope, and calls the real driver's table directly), or race itself: several threads may
// fail at once, each gathering its own figures; the count is one atomic, the kept report one
// string under a mutex, and only the thread that made the count 1 writes to stderr.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

#include "core/engine.hpp"
#include "driver/cuda_compat.hpp"

namespace streampool::interpose {

// Per process state (one per ProcessState: a forked child starts its count afresh).
struct OomReports {
  std::atomic<std::uint64_t> failures{0};
  std::mutex mutex;
  std::string last_json;  // under mutex; empty until a failure
};

// An allocation of `bytes` from `pool` on `stream` (as the program named it; `per_thread` for the
// _ptsz entry points) failed for lack of memory. Never throws.
void report_out_of_memory(core::Pool* pool, std::size_t bytes, CUstream stream, bool per_thread) noexcept;
// The same for one of the driver's own allocations (cuMemAlloc, cuMemAllocPitch, cuMemCreate) of
// `device` memory that the process cap refused (hooks/control/process_limit.cpp).
void report_driver_out_of_memory(int device, std::size_t bytes) noexcept;

// While one lives on a thread, that thread's failures are not reported again: the cudart fast
// path (hooks/runtime_fast_path.cpp) repeats a failed allocation through cudart's own function.
struct OomRetryScope {
  OomRetryScope() noexcept;
  ~OomRetryScope();
  OomRetryScope(const OomRetryScope&) = delete;
  OomRetryScope& operator=(const OomRetryScope&) = delete;
};

// The last failure's report as JSON; empty when none failed. May throw (the caller catches).
std::string last_oom_report_json();
// How many allocations failed for lack of memory in this process so far.
std::uint64_t oom_failures() noexcept;

}  // namespace streampool::interpose
