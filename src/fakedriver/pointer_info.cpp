#include "pointer_info.hpp"

#include "allocations.hpp"
#include "context.hpp"
#include "vmm.hpp"

namespace fake {

std::optional<PointerInfo> lookup_pointer(std::uintptr_t address) {
  if (auto allocation = find_allocation(address)) {
    PointerInfo info;
    info.base = allocation->base;
    info.size = allocation->size;
    info.device_memory = allocation->kind == MemoryKind::device || allocation->kind == MemoryKind::managed;
    info.managed = allocation->kind == MemoryKind::managed;
    info.legacy_ipc_capable = allocation->kind == MemoryKind::device;
    info.context = allocation->context;
    info.device = allocation->device;
    info.buffer_id = allocation->buffer_id;
    return info;
  }
  if (auto mapping = vmm_lookup(address)) {
    PointerInfo info;
    info.base = mapping->mapping_base;
    info.size = mapping->mapping_size;
    info.device_memory = mapping->location.type == CU_MEM_LOCATION_TYPE_DEVICE;
    info.vmm = true;
    info.device = info.device_memory ? mapping->location.id : 0;
    info.buffer_id = mapping->buffer_id;
    return info;
  }
  return std::nullopt;
}

bool device_range_usable(std::uintptr_t address, std::size_t bytes) {
  if (bytes == 0) return true;
  if (address == 0 || address + bytes < address) return false;
  if (auto allocation = find_allocation(address)) return address + bytes <= allocation->base + allocation->size;
  return vmm_range_usable(address, bytes);
}

}  // namespace fake
