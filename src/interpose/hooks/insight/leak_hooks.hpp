// STREAMPOOL_LEAKS=1: every pool allocation the engine serves records its call site, every free
// classifies itself, and at exit the allocations still live are reported grouped by call site
// (stderr, and STREAMPOOL_LEAKS_FILE as JSON). The bookkeeping is the insight layer's
// (src/insight/leak_ledger.hpp); this is where the hooks feed it.
//
// With the mode off the hooks pay one load and one predictable branch on a flag read once:
// leaks_on() below. Nothing else of the mode is reached.
//
// A bad free is reported on stderr (at warn, unless STREAMPOOL_LOG is off) with its call site and,
// where known, the allocation's and the earlier free's, and counted; the free still returns what
// it returns without the mode.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "driver/cuda_compat.hpp"

namespace streampool::core {
class Pool;
}

namespace streampool::interpose::insight_hooks {

namespace detail {
// -1 until STREAMPOOL_LEAKS is read, then 0 (off) or 1 (on).
extern std::atomic<int> leak_mode;
bool read_leak_mode() noexcept;
}  // namespace detail

inline bool leaks_on() noexcept {
  const int mode = detail::leak_mode.load(std::memory_order_relaxed);
  if (mode == 0) [[likely]] return false;
  return mode > 0 || detail::read_leak_mode();
}

// The engine served an allocation from `pool`.
void allocation_made(void* address, std::size_t bytes, core::Pool* pool) noexcept;

// The call site of the live pool allocation at `address` in one line, "" with the mode off or for
// an address it does not know (the out-of-memory report names its largest blocks' sites with it).
std::string call_site_of(std::uintptr_t address);

// A free about to be asked of the hooks (the stream's route not yet known), and its outcome.
struct FreeCheck {
  std::uintptr_t address = 0;
  std::uintptr_t stream = 0;
  int claim = 0;          // insight::LeakLedger::Claim
  std::uint64_t bytes = 0;
  std::uint32_t allocation_site = 0;
  int allocation_device = -1;
  std::uint64_t other_thread = 0;
  std::uint32_t free_site = 0;
  bool active = false;
};
FreeCheck free_starts(CUdeviceptr address, CUstream stream) noexcept;
// route_result: what resolving the stream answered; stream_device: its device where it succeeded.
void free_ended(const FreeCheck& check, CUresult route_result, CUdevice stream_device, CUresult result) noexcept;

// cuMemFree of a pool allocation freed it (no classification: cuMemFree's own checks answered).
void freed_at_once(CUdeviceptr address) noexcept;

// While one is alive on a thread, bad frees are neither counted nor reported again: the cudart
// fast path hands a free the hooks refused to cudart's own function, which asks the hooks again.
class RepeatedFree {
 public:
  RepeatedFree() noexcept;
  ~RepeatedFree();
  RepeatedFree(const RepeatedFree&) = delete;
  RepeatedFree& operator=(const RepeatedFree&) = delete;
};

// A stream was destroyed (a later free on its handle is a free on a destroyed stream).
void stream_destroyed(CUstream stream) noexcept;

// The JSON report now (streampool_leak_report); "{}"-like with nothing recorded when the mode is off.
std::string leak_report_json();

}  // namespace streampool::interpose::insight_hooks
