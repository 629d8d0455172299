#include "location_pools.hpp"

#include "driver/vmm_backing.hpp"
#include "pool_backing.hpp"
#include "process_state.hpp"

namespace streampool::interpose {

core::PoolProps LocationPools::props_for(const Place& place) noexcept {
  core::PoolProps props;
  props.kind = place.allocation_type == CU_MEM_ALLOCATION_TYPE_MANAGED ? core::PoolKind::managed
                                                                       : core::PoolKind::pinned_host;
  props.allocation_type = place.allocation_type;
  props.location_type = place.location_type;
  props.location_id = place.location_id;
  return props;
}

LocationPools::Entry* LocationPools::entry_locked(const Place& place, CUresult* result) {
  Entry& entry = entries_[place];
  if (entry.default_pool == nullptr) {
    const core::PoolProps props = props_for(place);
    std::unique_ptr<core::Backing> backing;
    core::Status status = driver::make_backing(props, &backing, insight_hooks::nvtx_enabled());
    if (core::ok(status)) status = engine_.create_pool(props, hooked_backing(props, std::move(backing)), &entry.default_pool);
    if (!core::ok(status)) {
      entries_.erase(place);
      *result = to_cuda(status);
      return nullptr;
    }
    entry.current = entry.default_pool;
  }
  *result = CUDA_SUCCESS;
  return &entry;
}

CUresult LocationPools::default_pool(const Place& place, core::Pool** pool) noexcept {
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    CUresult result = CUDA_SUCCESS;
    Entry* entry = entry_locked(place, &result);
    if (entry != nullptr) *pool = entry->default_pool;
    return result;
  } catch (...) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
}

CUresult LocationPools::current_pool(const Place& place, core::Pool** pool) noexcept {
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    CUresult result = CUDA_SUCCESS;
    Entry* entry = entry_locked(place, &result);
    if (entry != nullptr) *pool = entry->current;
    return result;
  } catch (...) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
}

CUresult LocationPools::set_current(const Place& place, core::Pool* pool) noexcept {
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    CUresult result = CUDA_SUCCESS;
    Entry* entry = entry_locked(place, &result);
    if (entry != nullptr) entry->current = pool;
    return result;
  } catch (...) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
}

bool LocationPools::is_default(const core::Pool* pool) const noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [place, entry] : entries_) {
    if (entry.default_pool == pool) return true;
  }
  return false;
}

void LocationPools::forget(const core::Pool* pool) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [place, entry] : entries_) {
    if (entry.current == pool) entry.current = entry.default_pool;
  }
}

}  // namespace streampool::interpose
