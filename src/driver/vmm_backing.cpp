#include "vmm_backing.hpp"

#include <unistd.h>

#include <algorithm>

#include "device_context.hpp"
#include "driver_table.hpp"
#include "event_ordering.hpp"

namespace streampool::driver {

namespace {

constexpr std::size_t kGiB = std::size_t{1} << 30;
constexpr std::size_t kGrowthChunk = std::size_t{32} << 20;  // the driver's pool chunk (measured)
constexpr std::size_t kMinReservation = kGiB;
constexpr std::size_t kMaxReservation = std::size_t{1} << 40;

std::size_t round_up(std::size_t value, std::size_t unit) { return (value + unit - 1) / unit * unit; }

// Address space worth reserving at once: about the memory of the pool's location, so that a pool
// normally lives in one contiguous range, or less where the pool's cap is smaller. A cap larger
// than the location's memory can never be reached, and one of 2^47 bytes or more cannot even be
// reserved: the pool reserves what its location holds, and allocations up to that succeed.
std::size_t reservation_for(const core::PoolProps& props, std::size_t granule) noexcept {
  std::size_t location_bytes = 0;
  if (props.location_type == CU_MEM_LOCATION_TYPE_DEVICE) {
    const DriverTable& table = real();
    size_t total = 0;
    if (table.cuDeviceTotalMem_v2 != nullptr &&
        table.cuDeviceTotalMem_v2(&total, props.location_id) == CUDA_SUCCESS) {
      location_bytes = total;
    }
  } else {
    long pages = sysconf(_SC_PHYS_PAGES);
    long page_bytes = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page_bytes > 0) {
      location_bytes = static_cast<std::size_t>(pages) * static_cast<std::size_t>(page_bytes);
    }
  }
  std::size_t wanted = std::clamp(round_up(std::min(location_bytes, kMaxReservation), kGiB), kMinReservation,
                                  kMaxReservation);
  if (props.max_size != 0 && props.max_size < wanted) wanted = round_up(props.max_size, kGrowthChunk);
  return round_up(wanted, granule);
}

// The device whose context the driver calls of a pool run in.
CUdevice context_device_for(const core::PoolProps& props) noexcept {
  return props.location_type == CU_MEM_LOCATION_TYPE_DEVICE ? props.location_id : 0;
}

CUmemLocationType location_type_of(int value) noexcept { return static_cast<CUmemLocationType>(value); }

template <class Fn, class... Args>
CUresult forward_or_missing(Fn fn, Args... args) noexcept {
  return fn == nullptr ? missing_entry_result() : fn(args...);
}

}  // namespace

// --- VmmBacking ------------------------------------------------------------------------------

VmmBacking::VmmBacking(const CUmemAllocationProp& prop, CUdevice context_device,
                       std::size_t granule_bytes, std::size_t reservation_bytes)
    : prop_(prop),
      context_device_(context_device),
      granule_bytes_(granule_bytes),
      reservation_bytes_(reservation_bytes) {}

CUresult VmmBacking::create(const core::PoolProps& props, std::unique_ptr<core::Backing>* out) noexcept {
  return create(props, nullptr, out);
}

CUresult VmmBacking::create(const core::PoolProps& props, std::shared_ptr<GranuleTable> granules,
                            std::unique_ptr<core::Backing>* out) noexcept {
  if (props.kind == core::PoolKind::managed) return CUDA_ERROR_NOT_SUPPORTED;
  const DriverTable& table = real();
  if (table.cuMemGetAllocationGranularity == nullptr || table.cuMemAddressReserve == nullptr ||
      table.cuMemCreate == nullptr || table.cuMemMap == nullptr || table.cuMemSetAccess == nullptr ||
      table.cuMemUnmap == nullptr || table.cuMemRelease == nullptr || table.cuMemAddressFree == nullptr) {
    return missing_entry_result();
  }
  if (props.location_type == CU_MEM_LOCATION_TYPE_DEVICE) {
    int supported = 0;
    if (table.cuDeviceGetAttribute == nullptr) return missing_entry_result();
    CUresult result = table.cuDeviceGetAttribute(
        &supported, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, props.location_id);
    if (result != CUDA_SUCCESS) return result;
    if (supported == 0) return CUDA_ERROR_NOT_SUPPORTED;
  }
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = location_type_of(props.location_type);
  prop.location.id = props.location_type == CU_MEM_LOCATION_TYPE_HOST ? 0 : props.location_id;
  if (granules != nullptr) {
    if (table.cuMemExportToShareableHandle == nullptr) return missing_entry_result();
    prop.requestedHandleTypes = static_cast<CUmemAllocationHandleType>(granules->handle_type());
  }
  CUdevice context_device = context_device_for(props);
  size_t granule = 0;
  {
    ScopedDeviceContext scope(context_device);
    if (scope.result() != CUDA_SUCCESS) return scope.result();
    CUresult result = table.cuMemGetAllocationGranularity(&granule, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
    if (result != CUDA_SUCCESS) return result;
  }
  if (granule == 0) return CUDA_ERROR_NOT_SUPPORTED;
  try {
    auto* backing = new VmmBacking(prop, context_device, granule, reservation_for(props, granule));
    backing->granules_ = std::move(granules);
    out->reset(backing);
  } catch (...) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  return CUDA_SUCCESS;
}

core::Status VmmBacking::reserve(std::size_t bytes, std::uintptr_t* base) {
  ScopedDeviceContext scope(context_device_);
  if (scope.result() != CUDA_SUCCESS) return status_from(scope.result());
  CUdeviceptr address = 0;
  CUresult result = real().cuMemAddressReserve(&address, bytes, granule_bytes_, 0, 0);
  if (result != CUDA_SUCCESS) {
    return result == CUDA_ERROR_INVALID_VALUE ? core::Status::out_of_memory : status_from(result);
  }
  *base = static_cast<std::uintptr_t>(address);
  return core::Status::success;
}

core::Status VmmBacking::unreserve(std::uintptr_t base, std::size_t bytes) {
  ScopedDeviceContext scope(context_device_);
  if (scope.result() != CUDA_SUCCESS) return status_from(scope.result());
  return status_from(real().cuMemAddressFree(static_cast<CUdeviceptr>(base), bytes));
}

std::vector<CUmemAccessDesc> VmmBacking::access_list(std::span<const core::AccessDescriptor> access) const {
  std::vector<CUmemAccessDesc> list;
  auto grant = [&list](int type, int id, int flags) {
    for (CUmemAccessDesc& existing : list) {
      if (existing.location.type == type && existing.location.id == id) {
        existing.flags = static_cast<CUmemAccess_flags>(flags);
        return;
      }
    }
    CUmemAccessDesc desc{};
    desc.location.type = static_cast<CUmemLocationType>(type);
    desc.location.id = id;
    desc.flags = static_cast<CUmemAccess_flags>(flags);
    list.push_back(desc);
  };
  if (prop_.location.type == CU_MEM_LOCATION_TYPE_DEVICE) {
    grant(CU_MEM_LOCATION_TYPE_DEVICE, prop_.location.id, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  } else {
    // Pinned host memory: the CPU, and every device (as cuMemHostAlloc'd memory would be).
    if (!host_access_rejected_) grant(CU_MEM_LOCATION_TYPE_HOST_NUMA, 0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    int devices = 0;
    if (device_count(&devices) == CUDA_SUCCESS) {
      for (int device = 0; device < devices; ++device) {
        grant(CU_MEM_LOCATION_TYPE_DEVICE, device, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
      }
    }
  }
  for (const core::AccessDescriptor& desc : access) {
    bool owner = desc.location_type == prop_.location.type && desc.location_id == prop_.location.id;
    if (owner) continue;  // the owner keeps read-write access
    if (desc.location_type == CU_MEM_LOCATION_TYPE_HOST_NUMA && host_access_rejected_) continue;
    grant(desc.location_type, desc.location_id, desc.flags);
  }
  return list;
}

CUresult VmmBacking::apply_access(std::uintptr_t address, std::size_t bytes,
                                  std::span<const core::AccessDescriptor> access) {
  std::vector<CUmemAccessDesc> list = access_list(access);
  CUresult result = real().cuMemSetAccess(static_cast<CUdeviceptr>(address), bytes, list.data(), list.size());
  if (result == CUDA_ERROR_INVALID_VALUE && prop_.location.type != CU_MEM_LOCATION_TYPE_DEVICE &&
      !host_access_rejected_) {
    // Drivers that do not take a host descriptor map host memory CPU-accessible already.
    host_access_rejected_ = true;
    list = access_list(access);
    result = real().cuMemSetAccess(static_cast<CUdeviceptr>(address), bytes, list.data(), list.size());
  }
  return result;
}

// One physical allocation per call: the engine maps in units (one granule, or a larger unit for
// large growth) and unmaps exactly those units, since CUDA unmaps only whole mappings.
// Every failure leaves nothing mapped and nothing allocated, as the engine expects of a failed
// map, except where the driver refuses to undo as well (see the two cases below).
core::Status VmmBacking::map(std::uintptr_t address, std::size_t bytes,
                             std::span<const core::AccessDescriptor> access) {
  const DriverTable& table = real();
  ScopedDeviceContext scope(context_device_);
  if (scope.result() != CUDA_SUCCESS) return status_from(scope.result());
  CUmemGenericAllocationHandle handle = 0;
  CUresult result = table.cuMemCreate(&handle, bytes, &prop_, 0);
  if (result != CUDA_SUCCESS) return status_from(result);
  const auto device_address = static_cast<CUdeviceptr>(address);
  if (granules_ != nullptr) return map_exportable(address, bytes, handle, access);
  result = table.cuMemMap(device_address, bytes, 0, handle, 0);
  // The mapping holds the physical memory from here on: unmapping it releases the memory.
  const CUresult released = table.cuMemRelease(handle);
  if (result != CUDA_SUCCESS) {
    if (released != CUDA_SUCCESS) table.cuMemRelease(handle);  // nothing else would ever free it
    return status_from(result);
  }
  if (released != CUDA_SUCCESS) {
    // The mapping is good; its memory would outlive the unmap through the handle.
    try {
      unreleased_.push_back(UnreleasedHandle{address, handle});
    } catch (...) {
      table.cuMemUnmap(device_address, bytes);
      table.cuMemRelease(handle);
      return core::Status::out_of_memory;
    }
  }
  try {
    result = apply_access(address, bytes, access);
  } catch (...) {
    result = CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (result == CUDA_SUCCESS) return core::Status::success;
  if (table.cuMemUnmap(device_address, bytes) == CUDA_SUCCESS) {
    release_after_unmap(address);
    return status_from(result);
  }
  // Neither usable nor unmappable: one more try at access makes it usable, else it stays a
  // mapping the engine does not know of (what the driver refuses twice, nothing can undo).
  try {
    if (apply_access(address, bytes, access) == CUDA_SUCCESS) return core::Status::success;
  } catch (...) {
  }
  return status_from(result);
}

// An exportable pool's mapping: its handle stays open (in the granule table) while it is mapped,
// so that it can be exported to other processes; unmap releases it.
core::Status VmmBacking::map_exportable(std::uintptr_t address, std::size_t bytes, CUmemGenericAllocationHandle handle,
                                        std::span<const core::AccessDescriptor> access) {
  const DriverTable& table = real();
  const auto device_address = static_cast<CUdeviceptr>(address);
  CUresult result = table.cuMemMap(device_address, bytes, 0, handle, 0);
  if (result != CUDA_SUCCESS) {
    table.cuMemRelease(handle);
    return status_from(result);
  }
  try {
    result = apply_access(address, bytes, access);
    if (result == CUDA_SUCCESS) granules_->add(address, bytes, handle);
  } catch (...) {
    result = CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (result == CUDA_SUCCESS) return core::Status::success;
  table.cuMemUnmap(device_address, bytes);
  table.cuMemRelease(handle);
  return status_from(result);
}

core::Status VmmBacking::unmap(std::uintptr_t address, std::size_t bytes) {
  ScopedDeviceContext scope(context_device_);
  if (scope.result() != CUDA_SUCCESS) return status_from(scope.result());
  const CUresult result = real().cuMemUnmap(static_cast<CUdeviceptr>(address), bytes);
  if (result != CUDA_SUCCESS) return status_from(result);
  CUmemGenericAllocationHandle handle = 0;
  if (granules_ != nullptr && granules_->take(address, &handle)) real().cuMemRelease(handle);
  release_after_unmap(address);
  return core::Status::success;
}

void VmmBacking::release_after_unmap(std::uintptr_t address) noexcept {
  for (auto entry = unreleased_.begin(); entry != unreleased_.end(); ++entry) {
    if (entry->address != address) continue;
    real().cuMemRelease(entry->handle);  // the last chance: a refusal now is the driver's leak
    unreleased_.erase(entry);
    return;
  }
}

core::Status VmmBacking::set_access(std::uintptr_t address, std::size_t bytes,
                                    std::span<const core::AccessDescriptor> access) {
  ScopedDeviceContext scope(context_device_);
  if (scope.result() != CUDA_SUCCESS) return status_from(scope.result());
  try {
    return status_from(apply_access(address, bytes, access));
  } catch (...) {
    return core::Status::out_of_memory;
  }
}

// --- ChunkBacking ----------------------------------------------------------------------------

ChunkBacking::ChunkBacking(const core::PoolProps& props) noexcept
    : props_(props), context_device_(context_device_for(props)) {}

core::Status ChunkBacking::reserve(std::size_t bytes, std::uintptr_t* base) {
  const DriverTable& table = real();
  ScopedDeviceContext scope(context_device_);
  if (scope.result() != CUDA_SUCCESS) return status_from(scope.result());
  CUresult result = CUDA_ERROR_NOT_SUPPORTED;
  if (props_.kind == core::PoolKind::managed) {
    CUdeviceptr address = 0;
    if (table.cuMemAllocManaged == nullptr) return status_from(missing_entry_result());
    result = table.cuMemAllocManaged(&address, bytes, CU_MEM_ATTACH_GLOBAL);
    *base = static_cast<std::uintptr_t>(address);
  } else if (props_.kind == core::PoolKind::pinned_host) {
    void* address = nullptr;
    if (table.cuMemHostAlloc == nullptr) return status_from(missing_entry_result());
    result = table.cuMemHostAlloc(&address, bytes, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP);
    *base = reinterpret_cast<std::uintptr_t>(address);
  } else {
    CUdeviceptr address = 0;
    if (table.cuMemAlloc_v2 == nullptr) return status_from(missing_entry_result());
    result = table.cuMemAlloc_v2(&address, bytes);
    *base = static_cast<std::uintptr_t>(address);
  }
  return status_from(result);
}

core::Status ChunkBacking::unreserve(std::uintptr_t base, std::size_t /*bytes*/) {
  const DriverTable& table = real();
  ScopedDeviceContext scope(context_device_);
  if (scope.result() != CUDA_SUCCESS) return status_from(scope.result());
  if (props_.kind == core::PoolKind::pinned_host) {
    return status_from(forward_or_missing(table.cuMemFreeHost, reinterpret_cast<void*>(base)));
  }
  return status_from(forward_or_missing(table.cuMemFree_v2, static_cast<CUdeviceptr>(base)));
}

core::Status ChunkBacking::map(std::uintptr_t, std::size_t, std::span<const core::AccessDescriptor>) {
  return core::Status::success;  // a chunk is usable as soon as it is allocated
}

core::Status ChunkBacking::unmap(std::uintptr_t, std::size_t) { return core::Status::success; }

core::Status ChunkBacking::set_access(std::uintptr_t, std::size_t,
                                      std::span<const core::AccessDescriptor> access) {
  if (props_.kind != core::PoolKind::device) return core::Status::success;  // visible everywhere
  for (const core::AccessDescriptor& desc : access) {
    bool owner = desc.location_type == CU_MEM_LOCATION_TYPE_DEVICE && desc.location_id == props_.location_id;
    if (!owner && desc.flags != CU_MEM_ACCESS_FLAGS_PROT_NONE) return core::Status::not_supported;
  }
  return core::Status::success;
}

// --- choice ----------------------------------------------------------------------------------

core::Status make_exportable_backing(const core::PoolProps& props, std::shared_ptr<GranuleTable>* granules,
                                     std::unique_ptr<core::Backing>* out) noexcept {
  if (props.location_type == CU_MEM_LOCATION_TYPE_DEVICE && !valid_device(props.location_id)) {
    return core::Status::invalid_value;
  }
  try {
    *granules = std::make_shared<GranuleTable>(static_cast<int>(props.handle_types));
  } catch (...) {
    return core::Status::out_of_memory;
  }
  CUresult result = VmmBacking::create(props, *granules, out);
  if (result == CUDA_SUCCESS) return core::Status::success;
  granules->reset();
  return result == CUDA_ERROR_OUT_OF_MEMORY ? core::Status::out_of_memory : core::Status::not_supported;
}

core::Status make_backing(const core::PoolProps& props, std::unique_ptr<core::Backing>* out,
                          bool chunks_only) noexcept {
  if (props.location_type == CU_MEM_LOCATION_TYPE_DEVICE && !valid_device(props.location_id)) {
    return core::Status::invalid_value;
  }
  if (!chunks_only && props.kind != core::PoolKind::managed && VmmBacking::create(props, out) == CUDA_SUCCESS) {
    return core::Status::success;
  }
  try {
    out->reset(new ChunkBacking(props));
  } catch (...) {
    return core::Status::out_of_memory;
  }
  return core::Status::success;
}

}  // namespace streampool::driver
