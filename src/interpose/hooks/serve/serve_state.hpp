// What STREAMPOOL_SERVE_MALLOC keeps per process (one per ProcessState: a forked child starts
// afresh): each device's pool that serves cuMemAlloc, the blocks served and the context each
// was served in, and each device's pitch alignment as the driver's cuMemAllocPitch shows it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "core/engine.hpp"
#include "driver/cuda_compat.hpp"

namespace streampool::interpose::serve_hooks {

inline constexpr int kMaxDevices = 64;

// The key the engine knows the served allocations by. Its low bits are 3: no stream key has them
// (created streams are handles, multiples of 4; the default streams' keys end in 1 and 2), so the
// engine never sees work on it, its clock never advances, and a block reaches it only through a
// free the host saw complete (cuMemFree, a synchronisation) or memory freshly mapped.
inline constexpr core::StreamKey kServeKey = 3;

// One served block: where it was served (cuMemAlloc memory belongs to its context).
struct Served {
  CUcontext context = nullptr;
  int device = -1;
};

struct ServeState {
  std::mutex create_mutex;  // creating a device's pool
  std::atomic<core::Pool*> pools[kMaxDevices]{};
  std::atomic<std::size_t> pitch_alignment[kMaxDevices]{};  // 0: not probed yet
  std::mutex blocks_mutex;
  std::unordered_map<std::uintptr_t, Served> blocks;  // by base address
};

}  // namespace streampool::interpose::serve_hooks
