#include "process_limit.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "capped_backing.hpp"
#include "driver/device_context.hpp"
#include "driver/driver_table.hpp"
#include "driver/log.hpp"
#include "hooks/process_state.hpp"
#include "hooks/report/oom_report.hpp"
#include "hooks/serve/serve_malloc.hpp"

namespace streampool::interpose::control_hooks {

namespace ctl = streampool::control;

namespace {

CapState& caps() noexcept { return state().caps; }

// Reads STREAMPOOL_LIMIT once per process state; a bad one is said once and ignored.
void read_setting_locked(CapState& s) noexcept {
  s.setting_read = true;
  const char* text = std::getenv("STREAMPOOL_LIMIT");
  if (text == nullptr || text[0] == '\0') return;
  const std::size_t length = strnlen(text, ctl::kMaxText + 1);
  if (const char* reason = ctl::parse_limit(std::string_view(text, length), &s.spec)) {
    log::notice(log::Level::warn, "STREAMPOOL_LIMIT=%.64s ignored: %s (expected 40G, 1.5GiB, 0.3, 30%% or 0:40G,1:20G)",
                text, reason);
  }
}

// Resolves the limits once the driver can count its devices (not before cuInit: tried again later).
void resolve(CapState& s) noexcept {
  if (s.resolved.load(std::memory_order_acquire)) return;
  std::lock_guard lock(s.resolve_mutex);
  if (s.resolved.load(std::memory_order_relaxed)) return;
  if (!s.setting_read) {
    read_setting_locked(s);
    // The group's budget is joined once, with the process's own settings; every charge of the
    // cap passes it too (ProcessCap::share_with).
    s.group = ctl::GroupBudget::from_environment();
    if (s.group != nullptr) s.cap.share_with(s.group.get());
  }
  int count = 0;
  const bool counted = driver::device_count(&count) == CUDA_SUCCESS;
  if (counted) s.device_count.store(count < ctl::kMaxDevices ? count : ctl::kMaxDevices, std::memory_order_release);
  if (!ctl::limits_anything(s.spec)) {
    s.limited.store(s.group != nullptr, std::memory_order_release);
    s.resolved.store(true, std::memory_order_release);
    return;
  }
  if (!counted) return;
  const int missing = ctl::first_device_missing(s.spec, count);
  if (missing >= 0) {
    log::notice(log::Level::warn, "STREAMPOOL_LIMIT names device %d, which this machine lacks (%d device%s): "
                "that entry is ignored", missing, count, count == 1 ? "" : "s");
  }
  const driver::DriverTable& table = driver::real();
  bool any = false;
  for (int device = 0; device < count && device < ctl::kMaxDevices; ++device) {
    size_t total = 0;
    if (table.cuDeviceTotalMem_v2 == nullptr || table.cuDeviceTotalMem_v2(&total, device) != CUDA_SUCCESS) total = 0;
    const std::uint64_t limit = ctl::resolve_limit(s.spec, device, total);
    if (limit == ctl::kNoLimit) continue;
    s.cap.set_limit(device, limit);
    any = true;
  }
  s.limited.store(any || s.group != nullptr, std::memory_order_release);
  s.resolved.store(true, std::memory_order_release);
}

CapState& resolved_caps() noexcept {
  CapState& s = caps();
  resolve(s);
  return s;
}

CUresult current_device(CUdevice* device) noexcept {
  const driver::DriverTable& table = driver::real();
  if (table.cuCtxGetDevice == nullptr) return driver::missing_entry_result();
  return table.cuCtxGetDevice(device);
}

}  // namespace

ctl::ProcessCap& process_cap() noexcept { return resolved_caps().cap; }

bool limit_set() noexcept { return resolved_caps().limited.load(std::memory_order_acquire); }

bool charge_driver_memory(ctl::Holder holder, int device, std::uint64_t bytes) noexcept {
  CapState& s = caps();
  if (s.cap.try_charge(holder, device, bytes)) return true;
  if (reclaim_cached(device) && s.cap.try_charge(holder, device, bytes)) return true;
  report_driver_out_of_memory(device, static_cast<std::size_t>(bytes));
  return false;
}

int charged_device(const core::PoolProps& props) noexcept {
  if (props.kind != core::PoolKind::device || props.location_type != CU_MEM_LOCATION_TYPE_DEVICE) return -1;
  return props.location_id;
}

std::unique_ptr<core::Backing> capped(const core::PoolProps& props, std::unique_ptr<core::Backing> backing) {
  const int device = charged_device(props);
  if (device < 0 || backing == nullptr) return backing;
  return std::make_unique<CappedBacking>(std::move(backing), process_cap(), device);
}

bool reclaim_cached(int device) noexcept {
  const std::uint64_t before = caps().cap.held(ctl::Holder::pools, device);
  if (before == 0) return false;
  try {
    // In the visit: a pool destroyed meanwhile on another thread is not reclaimed under it.
    engine().for_each_pool([device](core::Pool* pool) {
      if (charged_device(engine().props(pool)) == device) (void)engine().trim_to(pool, 0);
    });
  } catch (...) {
    return false;
  }
  return caps().cap.held(ctl::Holder::pools, device) < before;
}

bool reclaim_for(const core::Pool* pool) noexcept {
  try {
    const int device = charged_device(engine().props(pool));
    if (device < 0 || caps().cap.effective_limit(device) == ctl::kNoLimit) return false;
    return reclaim_cached(device);
  } catch (...) {
    return false;
  }
}

CUresult mem_alloc(CUdeviceptr* dptr, std::size_t bytes) noexcept {
  const driver::DriverTable& table = driver::real();
  if (dptr == nullptr || bytes == 0 || !limit_set()) return forward(table.cuMemAlloc_v2, dptr, bytes);
  try {
    CapState& s = caps();
    CUdevice device = 0;
    CUcontext context = nullptr;
    CUresult result = current_device(&device);
    if (result != CUDA_SUCCESS) return forward(table.cuMemAlloc_v2, dptr, bytes);
    (void)forward(table.cuCtxGetCurrent, &context);
    // Charged before the driver is asked (a refusal never reaches it); the table is locked only to
    // enter the pointer, which no free can name before this call returns it.
    if (!charge_driver_memory(ctl::Holder::forwarded, device, bytes)) {
      *dptr = 0;
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    result = forward(table.cuMemAlloc_v2, dptr, bytes);
    if (result != CUDA_SUCCESS) {
      s.cap.uncharge(ctl::Holder::forwarded, device, bytes);
      return result;
    }
    try {
      std::lock_guard lock(s.forwarded_mutex);
      s.allocations[static_cast<std::uintptr_t>(*dptr)] = Forwarded{device, bytes, context};
    } catch (...) {
      s.cap.uncharge(ctl::Holder::forwarded, device, bytes);
      (void)forward(table.cuMemFree_v2, *dptr);
      *dptr = 0;
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return CUDA_SUCCESS;
  } catch (...) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
}

CUresult mem_alloc_pitch(CUdeviceptr* dptr, std::size_t* pitch, std::size_t width, std::size_t height,
                         unsigned element_bytes) noexcept {
  const driver::DriverTable& table = driver::real();
  if (!limit_set()) return forward(table.cuMemAllocPitch_v2, dptr, pitch, width, height, element_bytes);
  // The size is the driver's (the pitch it chose times the rows): known only after the real call,
  // which is undone if the cap cannot take it.
  CUresult result = forward(table.cuMemAllocPitch_v2, dptr, pitch, width, height, element_bytes);
  if (result != CUDA_SUCCESS || dptr == nullptr || pitch == nullptr || *dptr == 0) return result;
  try {
    CapState& s = caps();
    CUdevice device = 0;
    CUcontext context = nullptr;
    if (current_device(&device) != CUDA_SUCCESS) return CUDA_SUCCESS;
    (void)forward(table.cuCtxGetCurrent, &context);
    std::uint64_t bytes = 0;
    if (__builtin_mul_overflow(static_cast<std::uint64_t>(*pitch), static_cast<std::uint64_t>(height), &bytes)) {
      bytes = UINT64_MAX;
    }
    if (!charge_driver_memory(ctl::Holder::forwarded, device, bytes)) {
      (void)forward(table.cuMemFree_v2, *dptr);
      *dptr = 0;
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    std::lock_guard lock(s.forwarded_mutex);
    s.allocations[static_cast<std::uintptr_t>(*dptr)] = Forwarded{device, bytes, context};
    return CUDA_SUCCESS;
  } catch (...) {
    (void)forward(table.cuMemFree_v2, *dptr);
    *dptr = 0;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
}

CUresult mem_free_forwarded(CUdeviceptr dptr) noexcept {
  const driver::DriverTable& table = driver::real();
  ProcessState* current = existing_state();
  if (current == nullptr || dptr == 0) return forward(table.cuMemFree_v2, dptr);
  CapState& s = current->caps;
  try {
    std::lock_guard lock(s.forwarded_mutex);
    if (s.allocations.empty()) return forward(table.cuMemFree_v2, dptr);
    const auto found = s.allocations.find(static_cast<std::uintptr_t>(dptr));
    const CUresult result = forward(table.cuMemFree_v2, dptr);
    if (found != s.allocations.end() && (result == CUDA_SUCCESS || result == CUDA_ERROR_DEINITIALIZED)) {
      s.cap.uncharge(ctl::Holder::forwarded, found->second.device, found->second.bytes);
      s.allocations.erase(found);
    }
    return result;
  } catch (...) {
    return CUDA_ERROR_UNKNOWN;
  }
}

CUresult mem_create(CUmemGenericAllocationHandle* handle, std::size_t bytes, const CUmemAllocationProp* prop,
                    unsigned long long flags) noexcept {
  const driver::DriverTable& table = driver::real();
  if (handle == nullptr || prop == nullptr || prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE || bytes == 0 ||
      !limit_set()) {
    return forward(table.cuMemCreate, handle, bytes, prop, flags);
  }
  try {
    CapState& s = caps();
    const int device = prop->location.id;
    if (!charge_driver_memory(ctl::Holder::forwarded, device, bytes)) return CUDA_ERROR_OUT_OF_MEMORY;
    const CUresult result = forward(table.cuMemCreate, handle, bytes, prop, flags);
    if (result != CUDA_SUCCESS) {
      s.cap.uncharge(ctl::Holder::forwarded, device, bytes);
      return result;
    }
    std::lock_guard lock(s.forwarded_mutex);
    s.handles[static_cast<std::uint64_t>(*handle)] = Forwarded{device, bytes, nullptr};
    return CUDA_SUCCESS;
  } catch (...) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
}

CUresult mem_release(CUmemGenericAllocationHandle handle) noexcept {
  const driver::DriverTable& table = driver::real();
  ProcessState* current = existing_state();
  if (current == nullptr) return forward(table.cuMemRelease, handle);
  CapState& s = current->caps;
  try {
    std::lock_guard lock(s.forwarded_mutex);
    if (s.handles.empty()) return forward(table.cuMemRelease, handle);
    const CUresult result = forward(table.cuMemRelease, handle);
    const auto found = s.handles.find(static_cast<std::uint64_t>(handle));
    if (found != s.handles.end() && result == CUDA_SUCCESS) {
      // The memory may stay mapped until its last cuMemUnmap; the charge ends with the handle.
      s.cap.uncharge(ctl::Holder::forwarded, found->second.device, found->second.bytes);
      s.handles.erase(found);
    }
    return result;
  } catch (...) {
    return CUDA_ERROR_UNKNOWN;
  }
}

namespace {
// Gives back and forgets what `held` charged to `holder` in `context` (under s.forwarded_mutex).
void uncharge_context_locked(CapState& s, std::unordered_map<std::uintptr_t, Forwarded>& held, ctl::Holder holder,
                             CUcontext context) noexcept {
  for (auto it = held.begin(); it != held.end();) {
    if (it->second.context == context) {
      s.cap.uncharge(holder, it->second.device, it->second.bytes);
      it = held.erase(it);
    } else {
      ++it;
    }
  }
}
}  // namespace

void context_ended(CUcontext context) noexcept {
  ProcessState* current = existing_state();
  if (current == nullptr || context == nullptr) return;
  CapState& s = current->caps;
  try {
    std::lock_guard lock(s.forwarded_mutex);
    uncharge_context_locked(s, s.allocations, ctl::Holder::forwarded, context);
    uncharge_context_locked(s, s.arrays, ctl::Holder::arrays, context);  // the driver destroyed its arrays too
    uncharge_context_locked(s, s.mipmaps, ctl::Holder::arrays, context);  // and its mipmapped arrays
  } catch (...) {
  }
  graph_memory_context_ended(context);  // and the memory its graphs held
}

CUresult mem_get_info(std::size_t* free_bytes, std::size_t* total_bytes) noexcept {
  const driver::DriverTable& table = driver::real();
  const CUresult result = forward(table.cuMemGetInfo_v2, free_bytes, total_bytes);
  if (result != CUDA_SUCCESS || free_bytes == nullptr || total_bytes == nullptr) return result;
  try {
    CapState& s = resolved_caps();
    CUdevice device = 0;
    if (current_device(&device) != CUDA_SUCCESS || device < 0 || device >= ctl::kMaxDevices) return result;
    const std::uint64_t counted = s.cap.charged(device);
    std::uint64_t expected = 0;
    if (s.free_at_start[device].compare_exchange_strong(expected, *free_bytes, std::memory_order_acq_rel)) {
      s.counted_at_start[device].store(counted, std::memory_order_release);
    }
    s.counted_last[device].store(counted, std::memory_order_release);
    s.free_last[device].store(*free_bytes, std::memory_order_release);
    const std::uint64_t limit = s.cap.effective_limit(device);
    if (limit == ctl::kNoLimit) return result;
    const std::uint64_t room = s.cap.effective_headroom(device);
    *total_bytes = static_cast<std::size_t>(limit);
    if (room < *free_bytes) *free_bytes = static_cast<std::size_t>(room);
  } catch (...) {
  }
  return result;
}

int reported_devices() noexcept {
  ProcessState* current = existing_state();
  if (current == nullptr) return 0;
  const CapState& s = current->caps;
  int count = s.device_count.load(std::memory_order_acquire);
  for (int device = ctl::kMaxDevices - 1; device >= count; --device) {
    if (s.cap.peak(device) != 0) return device + 1;
  }
  return count;
}

bool device_figures(int device, DeviceFigures* figures) noexcept {
  if (figures == nullptr || device < 0) return false;
  try {
    // A program may ask before its first allocation, which is what resolves the cap otherwise.
    CapState& s = resolved_caps();
    if (device >= reported_devices()) return false;
    DeviceFigures out;
    out.limit = s.cap.limit(device);
    out.pools_bytes = s.cap.held(ctl::Holder::pools, device);
    out.forwarded_bytes = s.cap.held(ctl::Holder::forwarded, device);
    out.arrays_bytes = s.cap.held(ctl::Holder::arrays, device);
    out.graph_bytes = s.cap.held(ctl::Holder::graph, device);
    out.peak_bytes = s.cap.peak(device);
    std::uint64_t used = 0;
    engine().for_each_pool([&](core::Pool* pool) {
      if (charged_device(engine().props(pool)) == device) used += engine().stats(pool).used_current;
    });
    out.in_use_bytes = used < out.pools_bytes ? used : out.pools_bytes;
    out.cached_bytes = out.pools_bytes - out.in_use_bytes;
    out.served_malloc_bytes = serve_hooks::served_bytes(device);
    const std::uint64_t start = s.free_at_start[device].load(std::memory_order_acquire);
    const std::uint64_t last = s.free_last[device].load(std::memory_order_acquire);
    if (start != 0 && last != 0 && start > last) {
      // What the cap counted between the two measurements; a drop in the count frees memory.
      const std::uint64_t counted_then = s.counted_at_start[device].load(std::memory_order_acquire);
      const std::uint64_t counted_now = s.counted_last[device].load(std::memory_order_acquire);
      const std::uint64_t counted_since = counted_now > counted_then ? counted_now - counted_then : 0;
      const std::uint64_t dropped = start - last;
      out.estimated_other_bytes = dropped > counted_since ? dropped - counted_since : 0;
    }
    *figures = out;
    return true;
  } catch (...) {
    return false;
  }
}

}  // namespace streampool::interpose::control_hooks
