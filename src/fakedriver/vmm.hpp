// Virtual memory management over host memory.
//  - A reservation is an mmap(PROT_NONE, MAP_NORESERVE) range, aligned as asked.
//  - A physical allocation (cuMemCreate) is a memfd of that size, charged to its device when its
//    location is a device; it is freed when its last handle is released and its last mapping is gone.
//  - Mapping is mmap(MAP_FIXED | MAP_SHARED) of the memfd over the reservation, with no access until
//    cuMemSetAccess mprotects it for the owning location; grants for other devices are only recorded.
//  - Export/import of POSIX file descriptors is dup() of the memfd; the memfd's name carries the
//    location, so that an importing process maps host memory as host memory.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <optional>

namespace fake {

CUresult vmm_address_reserve(CUdeviceptr* ptr, std::size_t size, std::size_t alignment, CUdeviceptr hint,
                             unsigned long long flags);
CUresult vmm_address_free(CUdeviceptr ptr, std::size_t size);
CUresult vmm_create(CUmemGenericAllocationHandle* handle, std::size_t size, const CUmemAllocationProp* prop,
                    unsigned long long flags);
CUresult vmm_release(CUmemGenericAllocationHandle handle);
CUresult vmm_map(CUdeviceptr ptr, std::size_t size, std::size_t offset, CUmemGenericAllocationHandle handle,
                 unsigned long long flags);
CUresult vmm_unmap(CUdeviceptr ptr, std::size_t size);
CUresult vmm_set_access(CUdeviceptr ptr, std::size_t size, const CUmemAccessDesc* desc, std::size_t count);
CUresult vmm_get_access(unsigned long long* flags, const CUmemLocation* location, CUdeviceptr ptr);
CUresult vmm_export(void* shareable_handle, CUmemGenericAllocationHandle handle,
                    CUmemAllocationHandleType type, unsigned long long flags);
CUresult vmm_import(CUmemGenericAllocationHandle* handle, void* os_handle, CUmemAllocationHandleType type);
CUresult vmm_retain_handle(CUmemGenericAllocationHandle* handle, void* address);
CUresult vmm_properties(CUmemAllocationProp* prop, CUmemGenericAllocationHandle handle);

struct VmmPointer {
  std::uintptr_t mapping_base = 0;
  std::size_t mapping_size = 0;
  CUmemLocation location{};  // where the physical memory lives
  std::uint64_t buffer_id = 0;
};
std::optional<VmmPointer> vmm_lookup(std::uintptr_t address);
// True when [address, address + bytes) is mapped (possibly over several mappings) and readable and
// writable from the host, i.e. usable by copies.
bool vmm_range_usable(std::uintptr_t address, std::size_t bytes);

}  // namespace fake
