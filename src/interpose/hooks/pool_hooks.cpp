// Pools: create and destroy, access, trim, and the default and current pools of each location (the
// IPC calls are in ipc_hooks.cpp).
//
// cuMemPoolCreate validates as the driver does (driver-behaviour.md): zeroed props, NULL arguments,
// a device that does not exist, a non-zero reserved byte -> CUDA_ERROR_INVALID_VALUE; plus the spec's
// rules for host, host-NUMA (a node the machine has) and managed pools. Handle types other than none
// and POSIX_FILE_DESCRIPTOR -> CUDA_ERROR_NOT_SUPPORTED (consistent with
// CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES), and so is the hardware-decompress usage bit.
// A pool with POSIX_FILE_DESCRIPTOR is backed by shareable physical memory (ipc.hpp).
#include <algorithm>
#include <cstdint>

#include "call_counters.hpp"
#include "core/sizes.hpp"
#include "driver/device_context.hpp"
#include "driver/locality_domains.hpp"
#include "driver/numa_nodes.hpp"
#include "ipc/ipc.hpp"
#include "pool_backing.hpp"
#include "process_state.hpp"
#include "driver/vmm_backing.hpp"
#include "raw_enum.hpp"
#include "report/trace_points.hpp"

namespace streampool::interpose {

namespace {

core::Pool* pool_of(CUmemoryPool handle) noexcept { return reinterpret_cast<core::Pool*>(handle); }
CUmemoryPool handle_of(core::Pool* pool) noexcept { return reinterpret_cast<CUmemoryPool>(pool); }

bool all_zero(const unsigned char* bytes, std::size_t count) noexcept {
  for (std::size_t i = 0; i < count; ++i) {
    if (bytes[i] != 0) return false;
  }
  return true;
}

bool all_devices_have_concurrent_managed_access() noexcept {
  const driver::DriverTable& table = driver::real();
  int devices = 0;
  if (driver::device_count(&devices) != CUDA_SUCCESS || table.cuDeviceGetAttribute == nullptr) return true;
  for (int device = 0; device < devices; ++device) {
    int concurrent = 1;
    if (table.cuDeviceGetAttribute(&concurrent, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, device) ==
            CUDA_SUCCESS &&
        concurrent == 0) {
      return false;
    }
  }
  return true;
}

// The largest cap a pool keeps: caps are whole growth chunks (MAX_POOL_SIZE may read back higher
// than asked, as the spec allows), and a maxSize within one chunk of 2^64 cannot round up.
constexpr std::size_t kLargestMaxSize = core::round_down(SIZE_MAX, core::kGrowthChunkBytes);

// CUmemPoolProps -> the engine's PoolProps, or the driver's error for props it would refuse.
// Enum fields are read as the ints the program stored (raw_enum.hpp): any value is answered.
CUresult props_from(const CUmemPoolProps& in, core::PoolProps* out) noexcept {
  if (!all_zero(in.reserved, sizeof in.reserved)) return CUDA_ERROR_INVALID_VALUE;
  if (in.win32SecurityAttributes != nullptr) return CUDA_ERROR_INVALID_VALUE;
  const auto handle_types = static_cast<unsigned>(raw_enum(in.handleTypes));
  constexpr unsigned kKnownHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR | CU_MEM_HANDLE_TYPE_WIN32 |
                                         CU_MEM_HANDLE_TYPE_WIN32_KMT | CU_MEM_HANDLE_TYPE_FABRIC;
  if ((handle_types & ~kKnownHandleTypes) != 0) return CUDA_ERROR_INVALID_VALUE;
  const int allocation_type = raw_enum(in.allocType);
  const int location_type = raw_enum(in.location.type);
  out->allocation_type = allocation_type;
  out->location_type = location_type;
  out->location_id = in.location.id;
  out->handle_types = handle_types;
  out->exclusive_granules = handle_types != 0;  // an importer must see nothing of its neighbours
  // A cap beyond any address space is kept (the backing reserves what the location can hold,
  // so allocations up to the device's memory succeed); only the last chunk below 2^64 is clamped.
  out->max_size = std::min<std::size_t>(in.maxSize, kLargestMaxSize);
  out->hw_decompress = (in.usage & driver::kMemPoolUsageHwDecompress) != 0;
  out->locality_domain_id = -1;
  if (allocation_type == CU_MEM_ALLOCATION_TYPE_PINNED) {
    switch (location_type) {
      case CU_MEM_LOCATION_TYPE_DEVICE:
        if (!driver::valid_device(in.location.id)) return CUDA_ERROR_INVALID_VALUE;
        out->kind = core::PoolKind::device;
        break;
      case CU_MEM_LOCATION_TYPE_HOST:
        if (handle_types != 0) return CUDA_ERROR_INVALID_VALUE;  // host pools are not IPC capable
        out->kind = core::PoolKind::pinned_host;
        out->location_id = 0;  // ignored for Host
        break;
      case CU_MEM_LOCATION_TYPE_HOST_NUMA:
        if (!driver::host_numa_node_exists(in.location.id)) return CUDA_ERROR_INVALID_VALUE;
        out->kind = core::PoolKind::pinned_host;
        break;
      case driver::kMemLocationTypeDeviceLocalityDomain: {
        // Domain 0 of a single-domain device: a full-device pool, answered as one (the spec's
        // note on LOCALITY_DOMAIN_ID: -1 for such pools).
        CUdevice device = 0;
        const CUresult placed = driver::device_of_locality_domain(in.location.id, &device);
        if (placed != CUDA_SUCCESS) return placed;
        out->location_type = CU_MEM_LOCATION_TYPE_DEVICE;
        out->location_id = device;
        out->kind = core::PoolKind::device;
        break;
      }
      default:  // None, HostNumaCurrent, anything else
        return CUDA_ERROR_INVALID_VALUE;
    }
  } else if (allocation_type == CU_MEM_ALLOCATION_TYPE_MANAGED) {
    if (handle_types != 0 || in.maxSize != 0 || in.usage != 0) return CUDA_ERROR_INVALID_VALUE;
    switch (location_type) {
      case CU_MEM_LOCATION_TYPE_NONE:
      case CU_MEM_LOCATION_TYPE_HOST:
        out->location_id = 0;  // no id for these locations
        break;
      case CU_MEM_LOCATION_TYPE_DEVICE:
        if (!driver::valid_device(in.location.id)) return CUDA_ERROR_INVALID_VALUE;
        break;
      case CU_MEM_LOCATION_TYPE_HOST_NUMA:
        if (!driver::host_numa_node_exists(in.location.id)) return CUDA_ERROR_INVALID_VALUE;
        break;
      default:
        return CUDA_ERROR_INVALID_VALUE;
    }
    out->kind = core::PoolKind::managed;
    if (!all_devices_have_concurrent_managed_access()) return CUDA_ERROR_NOT_SUPPORTED;
  } else {
    return CUDA_ERROR_INVALID_VALUE;  // zeroed props land here
  }
  if ((handle_types & ~driver::kSupportedPoolHandleTypes) != 0) return CUDA_ERROR_NOT_SUPPORTED;
  if (out->hw_decompress) return CUDA_ERROR_NOT_SUPPORTED;
  return CUDA_SUCCESS;
}

CUresult pool_create(CUmemoryPool* pool_out, const CUmemPoolProps* pool_props) noexcept {
  count_call(Hook::cuMemPoolCreate);
  HookScope scope;
  if (bypass(scope)) return forward(driver::real().cuMemPoolCreate, pool_out, pool_props);
  if (pool_out == nullptr || pool_props == nullptr) return CUDA_ERROR_INVALID_VALUE;
  try {
    core::PoolProps props;
    CUresult result = props_from(*pool_props, &props);
    if (result != CUDA_SUCCESS) return result;
    std::unique_ptr<core::Backing> backing;
    std::shared_ptr<driver::GranuleTable> granules;  // exportable pools only
    core::Status status = props.handle_types != 0 ? driver::make_exportable_backing(props, &granules, &backing)
                                                  : driver::make_backing(props, &backing, insight_hooks::nvtx_enabled());
    if (!core::ok(status)) return to_cuda(status);
    core::Pool* pool = nullptr;
    status = engine().create_pool(props, hooked_backing(props, std::move(backing)), &pool);
    if (!core::ok(status)) return to_cuda(status);
    if (granules != nullptr) {
      result = ipc::register_exportable(pool, props, std::move(granules));
      if (result != CUDA_SUCCESS) {
        (void)engine().destroy_pool(pool);
        return result;
      }
    }
    *pool_out = handle_of(pool);
    return CUDA_SUCCESS;
  } catch (...) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
}

CUresult pool_destroy(CUmemoryPool handle) noexcept {
  count_call(Hook::cuMemPoolDestroy);
  HookScope scope;
  if (bypass(scope)) return forward(driver::real().cuMemPoolDestroy, handle);
  try {
    core::Pool* pool = pool_of(handle);
    if (!engine().is_pool(pool) || pools().is_default(pool) || location_pools().is_default(pool)) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    pools().forget(pool);  // destroying a current pool makes the default current again
    location_pools().forget(pool);
    ipc::pool_destroyed(pool);  // an exported pool stops answering importers; an imported one closes
    return to_cuda(engine().destroy_pool(pool));
  } catch (...) {
    return CUDA_ERROR_UNKNOWN;
  }
}

bool valid_access_location(int location_type, int location_id) noexcept {
  switch (location_type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
      return driver::valid_device(location_id);
    case CU_MEM_LOCATION_TYPE_HOST:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
      return true;
    default:
      return false;
  }
}

bool valid_access_flags(int flags) noexcept {
  return flags == CU_MEM_ACCESS_FLAGS_PROT_NONE || flags == CU_MEM_ACCESS_FLAGS_PROT_READ ||
         flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
}

CUresult pool_set_access(CUmemoryPool handle, const CUmemAccessDesc* map, size_t count) noexcept {
  count_call(Hook::cuMemPoolSetAccess);
  HookScope scope;
  if (bypass(scope)) return forward(driver::real().cuMemPoolSetAccess, handle, map, count);
  try {
    core::Pool* pool = pool_of(handle);
    if (!engine().is_pool(pool) || (count > 0 && map == nullptr)) return CUDA_ERROR_INVALID_VALUE;
    std::vector<core::AccessDescriptor> access;
    access.reserve(count);
    const core::PoolProps& props = engine().props(pool);
    for (size_t i = 0; i < count; ++i) {
      const int flags = raw_enum(map[i].flags);
      const int location_type = raw_enum(map[i].location.type);
      const int location_id = map[i].location.id;
      if (!valid_access_flags(flags)) return CUDA_ERROR_INVALID_VALUE;
      // What driver 580 answers (measured, tools/gpu/probe_pool_access.py): a device that does
      // not exist is INVALID_DEVICE; the owning device keeps read-write, so read-only is
      // NOT_SUPPORTED and revoking it INVALID_DEVICE.
      if (location_type == CU_MEM_LOCATION_TYPE_DEVICE && !driver::valid_device(location_id)) {
        return CUDA_ERROR_INVALID_DEVICE;
      }
      if (!valid_access_location(location_type, location_id)) return CUDA_ERROR_INVALID_VALUE;
      const bool owner = location_type == props.location_type && location_id == props.location_id;
      if (owner && flags == CU_MEM_ACCESS_FLAGS_PROT_READ) return CUDA_ERROR_NOT_SUPPORTED;
      if (owner && flags == CU_MEM_ACCESS_FLAGS_PROT_NONE) return CUDA_ERROR_INVALID_DEVICE;
      access.push_back(core::AccessDescriptor{location_type, location_id, flags});
    }
    return to_cuda(engine().set_access(pool, access));
  } catch (...) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
}

CUresult pool_get_access(CUmemAccess_flags* flags, CUmemoryPool handle, CUmemLocation* location) noexcept {
  count_call(Hook::cuMemPoolGetAccess);
  HookScope scope;
  if (bypass(scope)) return forward(driver::real().cuMemPoolGetAccess, flags, handle, location);
  try {
    core::Pool* pool = pool_of(handle);
    if (flags == nullptr || location == nullptr || !engine().is_pool(pool)) return CUDA_ERROR_INVALID_VALUE;
    const int location_type = raw_enum(location->type);
    if (!valid_access_location(location_type, location->id)) return CUDA_ERROR_INVALID_VALUE;
    int granted = 0;
    core::Status status = engine().get_access(pool, location_type, location->id, &granted);
    if (core::ok(status)) *flags = static_cast<CUmemAccess_flags>(granted);
    return to_cuda(status);
  } catch (...) {
    return CUDA_ERROR_UNKNOWN;
  }
}

CUresult pool_trim_to(CUmemoryPool handle, size_t min_bytes_to_keep) noexcept {
  count_call(Hook::cuMemPoolTrimTo);
  HookScope scope;
  if (bypass(scope)) return forward(driver::real().cuMemPoolTrimTo, handle, min_bytes_to_keep);
  try {
    core::Pool* pool = pool_of(handle);
    if (!engine().is_pool(pool)) return CUDA_ERROR_INVALID_VALUE;
    return to_cuda(engine().trim_to(pool, min_bytes_to_keep));
  } catch (...) {
    return CUDA_ERROR_UNKNOWN;
  }
}

// --- default and current pools -----------------------------------------------------------------

// Which default/current slot a (location, allocation type) pair names, per the spec of
// cuMemGetMemPool: a device's pinned pools (PoolDirectory), or a host or managed location
// (LocationPools). Both are the ints the program passed; a value the spec does not list, a device
// that does not exist or a NUMA node the machine lacks names no slot.
struct Slot {
  bool valid = false;
  CUresult error = CUDA_ERROR_INVALID_VALUE;  // why not, when not valid
  bool device = false;  // a device's pinned pools: location_id is the device
  LocationPools::Place place;
};

Slot slot_of(int location_type, int location_id, int allocation_type) noexcept {
  Slot slot;
  const bool pinned = allocation_type == CU_MEM_ALLOCATION_TYPE_PINNED;
  const bool managed = allocation_type == CU_MEM_ALLOCATION_TYPE_MANAGED;
  if (!pinned && !managed) return slot;
  switch (location_type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
      if (!driver::valid_device(location_id)) return slot;
      slot.device = pinned;
      break;
    case CU_MEM_LOCATION_TYPE_HOST:
      location_id = 0;  // ignored for Host
      break;
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
      if (!driver::host_numa_node_exists(location_id)) return slot;
      break;
    case CU_MEM_LOCATION_TYPE_NONE:
      if (!managed) return slot;
      location_id = 0;
      break;
    case driver::kMemLocationTypeDeviceLocalityDomain: {
      // Pinned only (the spec); domain 0 of a single-domain device is the device's slot.
      if (!pinned) return slot;
      CUdevice device = 0;
      slot.error = driver::device_of_locality_domain(location_id, &device);
      if (slot.error != CUDA_SUCCESS) return slot;
      location_type = CU_MEM_LOCATION_TYPE_DEVICE;
      location_id = device;
      slot.device = true;
      break;
    }
    default:  // HostNumaCurrent, anything else
      return slot;
  }
  slot.valid = true;
  slot.place = LocationPools::Place{allocation_type, location_type, location_id};
  return slot;
}

// Whether `props` describe a pool that may be current for `slot`: the same allocation type and
// location (the id too, where the location has one).
bool pool_fits(const core::PoolProps& props, const Slot& slot) noexcept {
  if (props.allocation_type != slot.place.allocation_type || props.location_type != slot.place.location_type) {
    return false;
  }
  const bool has_id = slot.place.location_type == CU_MEM_LOCATION_TYPE_DEVICE ||
                      slot.place.location_type == CU_MEM_LOCATION_TYPE_HOST_NUMA;
  return !has_id || props.location_id == slot.place.location_id;
}

CUresult lookup_pool(CUmemoryPool* pool_out, const CUmemLocation* location, int allocation_type, bool current) {
  if (pool_out == nullptr || location == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const Slot slot = slot_of(raw_enum(location->type), location->id, allocation_type);
  if (!slot.valid) return slot.error;
  core::Pool* pool = nullptr;
  CUresult result = CUDA_ERROR_INVALID_VALUE;
  if (slot.device) {
    const CUdevice device = slot.place.location_id;
    result = current ? pools().device_current(device, &pool) : pools().device_default(device, &pool);
  } else {
    result = current ? location_pools().current_pool(slot.place, &pool)
                     : location_pools().default_pool(slot.place, &pool);
  }
  if (result == CUDA_SUCCESS) *pool_out = handle_of(pool);
  return result;
}

// Which real entry point mem_get_pool forwards to: a member of the driver table, reached only when
// the call is forwarded.
using MemGetPoolEntry = decltype(&::cuMemGetMemPool) driver::DriverTable::*;

// cuMemGetDefaultMemPool (current = false) and cuMemGetMemPool (current = true). The allocation
// type arrives as the int the program passed (raw_enum.hpp).
CUresult mem_get_pool(Hook hook, MemGetPoolEntry real_entry, CUmemoryPool* pool_out, CUmemLocation* location,
                      int allocation_type, bool current) noexcept {
  count_call(hook);
  HookScope scope;
  if (bypass(scope)) return forward(as_int_abi(driver::real().*real_entry), pool_out, location, allocation_type);
  try {
    return lookup_pool(pool_out, location, allocation_type, current);
  } catch (...) {
    return CUDA_ERROR_UNKNOWN;
  }
}

CUresult mem_set_pool(CUmemLocation* location, int allocation_type, CUmemoryPool handle) noexcept {
  count_call(Hook::cuMemSetMemPool);
  HookScope scope;
  if (bypass(scope)) return forward(as_int_abi(driver::real().cuMemSetMemPool), location, allocation_type, handle);
  try {
    core::Pool* pool = pool_of(handle);
    if (location == nullptr || !engine().is_pool(pool)) return CUDA_ERROR_INVALID_VALUE;
    if (ipc::is_imported_pool(pool)) return CUDA_ERROR_INVALID_VALUE;  // it cannot allocate
    const Slot slot = slot_of(raw_enum(location->type), location->id, allocation_type);
    if (!slot.valid) return slot.error;
    // The pool must match the location and allocation type it is made current for.
    if (!pool_fits(engine().props(pool), slot)) return CUDA_ERROR_INVALID_VALUE;
    if (slot.device) return pools().set_device_current(slot.place.location_id, pool);
    return location_pools().set_current(slot.place, pool);
  } catch (...) {
    return CUDA_ERROR_UNKNOWN;
  }
}

CUresult device_get_default_pool(CUmemoryPool* pool_out, CUdevice device) noexcept {
  count_call(Hook::cuDeviceGetDefaultMemPool);
  HookScope scope;
  if (bypass(scope)) return forward(driver::real().cuDeviceGetDefaultMemPool, pool_out, device);
  if (pool_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  core::Pool* pool = nullptr;
  CUresult result = pools().device_default(device, &pool);
  if (result == CUDA_SUCCESS) *pool_out = handle_of(pool);
  return result;
}

CUresult device_get_pool(CUmemoryPool* pool_out, CUdevice device) noexcept {
  count_call(Hook::cuDeviceGetMemPool);
  HookScope scope;
  if (bypass(scope)) return forward(driver::real().cuDeviceGetMemPool, pool_out, device);
  if (pool_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!driver::valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
  core::Pool* pool = nullptr;
  CUresult result = pools().device_current(device, &pool);
  if (result == CUDA_SUCCESS) *pool_out = handle_of(pool);
  return result;
}

CUresult device_set_pool(CUdevice device, CUmemoryPool handle) noexcept {
  count_call(Hook::cuDeviceSetMemPool);
  HookScope scope;
  if (bypass(scope)) return forward(driver::real().cuDeviceSetMemPool, device, handle);
  try {
    if (!driver::valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
    core::Pool* pool = pool_of(handle);
    if (!engine().is_pool(pool) || ipc::is_imported_pool(pool)) return CUDA_ERROR_INVALID_VALUE;
    const core::PoolProps& props = engine().props(pool);
    if (props.kind != core::PoolKind::device || props.location_id != device) return CUDA_ERROR_INVALID_VALUE;
    return pools().set_device_current(device, pool);
  } catch (...) {
    return CUDA_ERROR_UNKNOWN;
  }
}

}  // namespace

}  // namespace streampool::interpose

using streampool::interpose::Hook;
namespace sp = streampool::interpose;

STREAMPOOL_HOOK CUresult cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* poolProps) {
  // Traced: the allocation type, the maximum size and the location (type << 32 | id).
  // (The enum fields as the ints the program stored: raw_enum.hpp.)
  const auto type = poolProps != nullptr ? static_cast<std::uint16_t>(sp::raw_enum(poolProps->allocType)) : std::uint16_t{0};
  const std::uint64_t max_size = poolProps != nullptr ? poolProps->maxSize : 0;
  const std::uint64_t location =
      poolProps != nullptr
          ? (static_cast<std::uint64_t>(static_cast<std::uint32_t>(sp::raw_enum(poolProps->location.type))) << 32) |
                static_cast<std::uint32_t>(poolProps->location.id)
          : 0;
  return sp::traced_create(streampool::trace::Op::pool_create, type, true, pool, max_size, location,
                           [&] { return sp::pool_create(pool, poolProps); });
}

STREAMPOOL_HOOK CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  return sp::traced(streampool::trace::Op::pool_destroy, 0, nullptr, reinterpret_cast<std::uintptr_t>(pool), 0, 0,
                    [&] { return sp::pool_destroy(pool); });
}

STREAMPOOL_HOOK CUresult cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc* map, size_t count) {
  return sp::pool_set_access(pool, map, count);
}

STREAMPOOL_HOOK CUresult cuMemPoolGetAccess(CUmemAccess_flags* flags, CUmemoryPool memPool, CUmemLocation* location) {
  return sp::pool_get_access(flags, memPool, location);
}

STREAMPOOL_HOOK CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep) {
  return sp::traced(streampool::trace::Op::pool_trim, 0, nullptr, reinterpret_cast<std::uintptr_t>(pool), minBytesToKeep, 0, [&] {
    return sp::pool_trim_to(pool, minBytesToKeep);
  });
}

STREAMPOOL_HOOK CUresult cuDeviceGetDefaultMemPool(CUmemoryPool* pool_out, CUdevice dev) {
  return sp::device_get_default_pool(pool_out, dev);
}

STREAMPOOL_HOOK CUresult cuDeviceGetMemPool(CUmemoryPool* pool, CUdevice dev) { return sp::device_get_pool(pool, dev); }

STREAMPOOL_HOOK CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool) { return sp::device_set_pool(dev, pool); }

STREAMPOOL_HOOK CUresult cuMemGetDefaultMemPool(CUmemoryPool* pool_out, CUmemLocation* location,
                                                CUmemAllocationType type) {
  return sp::mem_get_pool(Hook::cuMemGetDefaultMemPool, &streampool::driver::DriverTable::cuMemGetDefaultMemPool,
                          pool_out, location, sp::raw_enum(type), false);
}

STREAMPOOL_HOOK CUresult cuMemGetMemPool(CUmemoryPool* pool, CUmemLocation* location, CUmemAllocationType type) {
  return sp::mem_get_pool(Hook::cuMemGetMemPool, &streampool::driver::DriverTable::cuMemGetMemPool, pool, location,
                          sp::raw_enum(type), true);
}

STREAMPOOL_HOOK CUresult cuMemSetMemPool(CUmemLocation* location, CUmemAllocationType type, CUmemoryPool pool) {
  return sp::mem_set_pool(location, sp::raw_enum(type), pool);
}
