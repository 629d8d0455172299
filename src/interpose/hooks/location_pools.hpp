// The default and current pools of the locations that are not a device's pinned memory: pinned
// host memory (Host, and each HostNuma node) and managed memory (no location, Host, each HostNuma
// node, each device as the preferred location). One pair per (allocation type, location), as
// cuMemGetDefaultMemPool / cuMemGetMemPool / cuMemSetMemPool describe them; a device's pinned pools
// stay in PoolDirectory (cuMemAllocAsync reads them on its fast path). Slow-path calls only: one
// mutex. Defaults are created on first request with the location's props and never destroyed.
#pragma once

#include <map>
#include <mutex>
#include <tuple>

#include "driver/cuda_compat.hpp"
#include "core/engine.hpp"

namespace streampool::interpose {

class LocationPools {
 public:
  // A (allocation type, location) that names pools here; ids normalised (Host and None: 0).
  struct Place {
    int allocation_type = 0;
    int location_type = 0;
    int location_id = 0;
    auto key() const { return std::tie(allocation_type, location_type, location_id); }
    bool operator<(const Place& other) const { return key() < other.key(); }
  };

  explicit LocationPools(core::Engine& engine) noexcept : engine_(engine) {}

  CUresult default_pool(const Place& place, core::Pool** pool) noexcept;
  CUresult current_pool(const Place& place, core::Pool** pool) noexcept;
  CUresult set_current(const Place& place, core::Pool* pool) noexcept;
  bool is_default(const core::Pool* pool) const noexcept;
  // A pool is being destroyed: wherever it was current, the default becomes current again.
  void forget(const core::Pool* pool) noexcept;

  // The props of a pool serving `place` (its default's).
  static core::PoolProps props_for(const Place& place) noexcept;

 private:
  struct Entry {
    core::Pool* default_pool = nullptr;
    core::Pool* current = nullptr;
  };
  // The place's entry with its default created; nullptr with *result set on failure.
  Entry* entry_locked(const Place& place, CUresult* result);

  core::Engine& engine_;
  mutable std::mutex mutex_;
  std::map<Place, Entry> entries_;
};

}  // namespace streampool::interpose
