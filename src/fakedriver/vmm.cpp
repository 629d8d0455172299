#include "vmm.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <string>
#include <map>
#include <memory>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

#include "driver.hpp"

namespace fake {
namespace {

std::atomic<unsigned long long> live_physical{0};  // PhysicalMemory objects alive (tests)

struct PhysicalMemory {
  int fd = -1;
  std::size_t size = 0;
  CUmemAllocationProp prop{};
  CUdevice charged_device = -1;  // -1: not charged (host location, or imported)
  CUmemGenericAllocationHandle handle = 0;
  ino_t inode = 0;
  dev_t file_system = 0;

  PhysicalMemory() { live_physical.fetch_add(1, std::memory_order_relaxed); }
  PhysicalMemory(const PhysicalMemory&) = delete;
  PhysicalMemory& operator=(const PhysicalMemory&) = delete;
  ~PhysicalMemory() {
    live_physical.fetch_sub(1, std::memory_order_relaxed);
    if (fd >= 0) close(fd);
    if (charged_device >= 0) Driver::instance().uncharge(charged_device, size);
  }
};

struct Grant {
  CUmemLocation location{};
  unsigned long long flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;
};

struct Mapping {
  std::uintptr_t base = 0;
  std::size_t size = 0;
  std::shared_ptr<PhysicalMemory> memory;
  std::vector<Grant> grants;
  int host_protection = PROT_NONE;
  std::uintptr_t end() const { return base + size; }
};

struct HandleEntry {
  std::shared_ptr<PhysicalMemory> memory;
  unsigned references = 0;
};

struct VmmState {
  std::shared_mutex mutex;
  std::map<std::uintptr_t, std::size_t> reservations;  // base -> size
  std::map<std::uintptr_t, Mapping> mappings;          // base -> mapping
  std::unordered_map<CUmemGenericAllocationHandle, HandleEntry> handles;
  CUmemGenericAllocationHandle next_handle = 0x5f000001;
};

VmmState& state() {
  static auto* instance = new VmmState();  // never destroyed
  return *instance;
}

bool is_host_location(CUmemLocationType type) {
  return type == CU_MEM_LOCATION_TYPE_HOST || type == CU_MEM_LOCATION_TYPE_HOST_NUMA ||
         type == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT;
}

// The host is one location, except that host NUMA nodes are told apart: a grant to node 1 is not
// one to node 0 (cuMemGetAccess answers for the node it is asked about).
bool same_location(const CUmemLocation& a, const CUmemLocation& b) {
  if (a.type == CU_MEM_LOCATION_TYPE_HOST_NUMA && b.type == CU_MEM_LOCATION_TYPE_HOST_NUMA) return a.id == b.id;
  if (is_host_location(a.type) && is_host_location(b.type)) return true;
  return a.type == b.type && a.id == b.id;
}

CUresult check_location(const CUmemLocation& location) {
  if (location.type == CU_MEM_LOCATION_TYPE_DEVICE) {
    return Driver::instance().valid_device(location.id) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
  }
  return is_host_location(location.type) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

bool aligned(std::uintptr_t value, std::size_t alignment) { return value % alignment == 0; }

std::size_t page_size() { return static_cast<std::size_t>(sysconf(_SC_PAGESIZE)); }

// Puts an inaccessible, unbacked reservation back over [base, base + size).
void restore_reservation(std::uintptr_t base, std::size_t size) {
  mmap(reinterpret_cast<void*>(base), size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED,
       -1, 0);
}

// Mappings covering [begin, end) without a gap, in address order; empty when there is a gap.
std::vector<Mapping*> covering_mappings(VmmState& vmm, std::uintptr_t begin, std::uintptr_t end) {
  std::vector<Mapping*> covering;
  auto entry = vmm.mappings.upper_bound(begin);
  if (entry == vmm.mappings.begin()) return {};
  --entry;
  std::uintptr_t covered_to = begin;
  for (; entry != vmm.mappings.end() && covered_to < end; ++entry) {
    Mapping& mapping = entry->second;
    if (mapping.base > covered_to || mapping.end() <= covered_to) return {};
    covering.push_back(&mapping);
    covered_to = mapping.end();
  }
  if (covered_to < end) return {};
  return covering;
}

const Mapping* mapping_containing(VmmState& vmm, std::uintptr_t address) {
  auto after = vmm.mappings.upper_bound(address);
  if (after == vmm.mappings.begin()) return nullptr;
  const Mapping& candidate = std::prev(after)->second;
  return address < candidate.end() ? &candidate : nullptr;
}

bool inside_one_reservation(VmmState& vmm, std::uintptr_t begin, std::size_t size) {
  auto after = vmm.reservations.upper_bound(begin);
  if (after == vmm.reservations.begin()) return false;
  auto reservation = std::prev(after);
  return begin + size <= reservation->first + reservation->second;
}

int protection_for(unsigned long long flags) {
  if (flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE) return PROT_READ | PROT_WRITE;
  if (flags == CU_MEM_ACCESS_FLAGS_PROT_READ) return PROT_READ;
  return PROT_NONE;
}

// A physical allocation's location travels with its memfd, in the name the kernel keeps for it
// ("/memfd:<name> (deleted)" in /proc/self/fd), so that another process that imports it knows
// where the memory lives, as a real import does.
constexpr char kMemfdPrefix[] = "streampool-fake-vmm:";

std::string memfd_name_for(const CUmemLocation& location) {
  return kMemfdPrefix + std::to_string(static_cast<int>(location.type)) + ":" + std::to_string(location.id);
}

CUmemLocation location_from_memfd(int fd) {
  CUmemLocation location{};
  location.type = CU_MEM_LOCATION_TYPE_DEVICE;  // what a memfd of another origin is taken for
  location.id = 0;
  char link[256] = {};
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  const ssize_t length = readlink(path.c_str(), link, sizeof link - 1);
  if (length <= 0) return location;
  const std::string target(link, static_cast<std::size_t>(length));
  const std::size_t at = target.find(kMemfdPrefix);
  if (at == std::string::npos) return location;
  int type = 0;
  int id = 0;
  if (std::sscanf(target.c_str() + at + sizeof kMemfdPrefix - 1, "%d:%d", &type, &id) == 2) {
    location.type = static_cast<CUmemLocationType>(type);
    location.id = id;
  }
  return location;
}

CUmemGenericAllocationHandle add_handle(VmmState& vmm, std::shared_ptr<PhysicalMemory> memory) {
  const CUmemGenericAllocationHandle handle = vmm.next_handle++;
  memory->handle = handle;
  vmm.handles[handle] = HandleEntry{std::move(memory), 1};
  return handle;
}

}  // namespace

CUresult vmm_address_reserve(CUdeviceptr* ptr, std::size_t size, std::size_t alignment, CUdeviceptr hint,
                             unsigned long long flags) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (ptr == nullptr || size == 0 || flags != 0 || !aligned(size, page_size())) return CUDA_ERROR_INVALID_VALUE;
  if (alignment == 0) alignment = kVmmGranularity;
  if ((alignment & (alignment - 1)) != 0) return CUDA_ERROR_INVALID_VALUE;
  alignment = std::max(alignment, page_size());
  constexpr int kReserveFlags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;

  std::uintptr_t base = 0;
  if (hint != 0 && aligned(hint, alignment)) {
    void* at = mmap(reinterpret_cast<void*>(hint), size, PROT_NONE, kReserveFlags | MAP_FIXED_NOREPLACE, -1, 0);
    if (at != MAP_FAILED && reinterpret_cast<std::uintptr_t>(at) == hint) {
      base = hint;
    } else if (at != MAP_FAILED) {
      munmap(at, size);  // old kernels treat the flag as a hint: the address is taken, place it elsewhere
    }
  }
  if (base == 0) {
    if (size > ~std::size_t{0} - alignment) return CUDA_ERROR_OUT_OF_MEMORY;
    void* raw = mmap(nullptr, size + alignment, PROT_NONE, kReserveFlags, -1, 0);
    if (raw == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
    const auto raw_begin = reinterpret_cast<std::uintptr_t>(raw);
    base = (raw_begin + alignment - 1) / alignment * alignment;
    if (base > raw_begin) munmap(raw, base - raw_begin);
    const std::uintptr_t raw_end = raw_begin + size + alignment;
    if (raw_end > base + size) munmap(reinterpret_cast<void*>(base + size), raw_end - (base + size));
  }
  auto& vmm = state();
  std::unique_lock lock(vmm.mutex);
  vmm.reservations[base] = size;
  *ptr = base;
  return CUDA_SUCCESS;
}

CUresult vmm_address_free(CUdeviceptr ptr, std::size_t size) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  auto& vmm = state();
  std::vector<std::shared_ptr<PhysicalMemory>> dropped;  // released after the lock
  std::unique_lock lock(vmm.mutex);
  auto reservation = vmm.reservations.find(ptr);
  if (reservation == vmm.reservations.end() || reservation->second != size) return CUDA_ERROR_INVALID_VALUE;
  for (auto entry = vmm.mappings.lower_bound(ptr); entry != vmm.mappings.end() && entry->first < ptr + size;) {
    dropped.push_back(std::move(entry->second.memory));
    entry = vmm.mappings.erase(entry);
  }
  munmap(reinterpret_cast<void*>(ptr), size);
  vmm.reservations.erase(reservation);
  return CUDA_SUCCESS;
}

CUresult vmm_create(CUmemGenericAllocationHandle* handle, std::size_t size, const CUmemAllocationProp* prop,
                    unsigned long long flags) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (handle == nullptr || prop == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (prop->type != CU_MEM_ALLOCATION_TYPE_PINNED) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult status = check_location(prop->location); status != CUDA_SUCCESS) return status;
  const auto handle_types = static_cast<unsigned>(prop->requestedHandleTypes);
  if ((handle_types & ~static_cast<unsigned>(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)) != 0) {
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  if (size == 0 || !aligned(size, kVmmGranularity)) return CUDA_ERROR_INVALID_VALUE;

  auto memory = std::make_shared<PhysicalMemory>();
  memory->size = size;
  memory->prop = *prop;
  if (prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE) {
    if (!Driver::instance().try_charge(prop->location.id, size)) return CUDA_ERROR_OUT_OF_MEMORY;
    memory->charged_device = prop->location.id;
  }
  memory->fd = memfd_create(memfd_name_for(prop->location).c_str(), MFD_CLOEXEC);
  if (memory->fd < 0 || ftruncate(memory->fd, static_cast<off_t>(size)) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
  struct stat file {};
  if (fstat(memory->fd, &file) == 0) {
    memory->inode = file.st_ino;
    memory->file_system = file.st_dev;
  }
  auto& vmm = state();
  std::unique_lock lock(vmm.mutex);
  *handle = add_handle(vmm, std::move(memory));
  return CUDA_SUCCESS;
}

CUresult vmm_release(CUmemGenericAllocationHandle handle) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  auto& vmm = state();
  std::shared_ptr<PhysicalMemory> dropped;
  std::unique_lock lock(vmm.mutex);
  auto entry = vmm.handles.find(handle);
  if (entry == vmm.handles.end()) return CUDA_ERROR_INVALID_VALUE;
  if (--entry->second.references == 0) {
    dropped = std::move(entry->second.memory);
    vmm.handles.erase(entry);
  }
  return CUDA_SUCCESS;
}

CUresult vmm_map(CUdeviceptr ptr, std::size_t size, std::size_t offset, CUmemGenericAllocationHandle handle,
                 unsigned long long flags) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (flags != 0 || size == 0 || !aligned(ptr, kVmmGranularity) || !aligned(size, kVmmGranularity) ||
      !aligned(offset, kVmmGranularity)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  auto& vmm = state();
  std::unique_lock lock(vmm.mutex);
  auto entry = vmm.handles.find(handle);
  if (entry == vmm.handles.end()) return CUDA_ERROR_INVALID_VALUE;
  const std::shared_ptr<PhysicalMemory>& memory = entry->second.memory;
  if (offset > memory->size || size > memory->size - offset) return CUDA_ERROR_INVALID_VALUE;
  if (!inside_one_reservation(vmm, ptr, size)) return CUDA_ERROR_INVALID_VALUE;
  auto next = vmm.mappings.lower_bound(ptr);
  if (next != vmm.mappings.end() && next->first < ptr + size) return CUDA_ERROR_INVALID_VALUE;
  if (next != vmm.mappings.begin() && std::prev(next)->second.end() > ptr) return CUDA_ERROR_INVALID_VALUE;

  void* at = mmap(reinterpret_cast<void*>(ptr), size, PROT_NONE, MAP_SHARED | MAP_FIXED, memory->fd,
                  static_cast<off_t>(offset));
  if (at == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  Mapping mapping;
  mapping.base = ptr;
  mapping.size = size;
  mapping.memory = memory;
  vmm.mappings[ptr] = std::move(mapping);
  return CUDA_SUCCESS;
}

CUresult vmm_unmap(CUdeviceptr ptr, std::size_t size) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (size == 0) return CUDA_ERROR_INVALID_VALUE;
  auto& vmm = state();
  std::vector<std::shared_ptr<PhysicalMemory>> dropped;
  std::unique_lock lock(vmm.mutex);
  auto covering = covering_mappings(vmm, ptr, ptr + size);
  if (covering.empty() || covering.front()->base != ptr || covering.back()->end() != ptr + size) {
    return CUDA_ERROR_INVALID_VALUE;  // only whole mappings can be unmapped
  }
  std::vector<std::uintptr_t> bases;
  for (Mapping* mapping : covering) bases.push_back(mapping->base);
  for (std::uintptr_t base : bases) {
    auto entry = vmm.mappings.find(base);
    restore_reservation(base, entry->second.size);
    dropped.push_back(std::move(entry->second.memory));
    vmm.mappings.erase(entry);
  }
  return CUDA_SUCCESS;
}

CUresult vmm_set_access(CUdeviceptr ptr, std::size_t size, const CUmemAccessDesc* desc, std::size_t count) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (desc == nullptr || count == 0 || size == 0) return CUDA_ERROR_INVALID_VALUE;
  for (std::size_t index = 0; index < count; ++index) {
    if (CUresult status = check_location(desc[index].location); status != CUDA_SUCCESS) return status;
    const auto flags = desc[index].flags;
    if (flags != CU_MEM_ACCESS_FLAGS_PROT_NONE && flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
        flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE) {
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  auto& vmm = state();
  std::unique_lock lock(vmm.mutex);
  auto covering = covering_mappings(vmm, ptr, ptr + size);
  if (covering.empty()) return CUDA_ERROR_INVALID_VALUE;
  for (Mapping* mapping : covering) {
    const CUmemLocation owner = mapping->memory->prop.location;
    for (std::size_t index = 0; index < count; ++index) {
      const CUmemAccessDesc& grant = desc[index];
      auto recorded = std::find_if(mapping->grants.begin(), mapping->grants.end(),
                                   [&](const Grant& existing) { return same_location(existing.location, grant.location); });
      if (recorded == mapping->grants.end()) {
        mapping->grants.push_back(Grant{grant.location, grant.flags});
      } else {
        recorded->flags = grant.flags;
      }
      // The host (which runs the fake's "device" work) follows the owner's grant; for host memory any
      // grant means the host may touch it.
      const bool owner_grant = is_host_location(owner.type) || same_location(owner, grant.location);
      if (!owner_grant) continue;
      const std::uintptr_t begin = std::max<std::uintptr_t>(mapping->base, ptr);
      const std::uintptr_t end = std::min<std::uintptr_t>(mapping->end(), ptr + size);
      const int protection = protection_for(grant.flags);
      if (mprotect(reinterpret_cast<void*>(begin), end - begin, protection) != 0) return CUDA_ERROR_UNKNOWN;
      mapping->host_protection = protection;
    }
  }
  return CUDA_SUCCESS;
}

CUresult vmm_get_access(unsigned long long* flags, const CUmemLocation* location, CUdeviceptr ptr) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (flags == nullptr || location == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult status = check_location(*location); status != CUDA_SUCCESS) return status;
  auto& vmm = state();
  std::shared_lock lock(vmm.mutex);
  const Mapping* mapping = mapping_containing(vmm, ptr);
  if (mapping == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;
  for (const Grant& grant : mapping->grants) {
    if (same_location(grant.location, *location)) *flags = grant.flags;
  }
  return CUDA_SUCCESS;
}

CUresult vmm_export(void* shareable_handle, CUmemGenericAllocationHandle handle, CUmemAllocationHandleType type,
                    unsigned long long flags) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (shareable_handle == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) return CUDA_ERROR_NOT_SUPPORTED;
  auto& vmm = state();
  std::shared_lock lock(vmm.mutex);
  auto entry = vmm.handles.find(handle);
  if (entry == vmm.handles.end()) return CUDA_ERROR_INVALID_VALUE;
  const PhysicalMemory& memory = *entry->second.memory;
  if ((static_cast<unsigned>(memory.prop.requestedHandleTypes) & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) == 0) {
    return CUDA_ERROR_INVALID_VALUE;  // not created as exportable
  }
  const int exported = fcntl(memory.fd, F_DUPFD_CLOEXEC, 0);
  if (exported < 0) return CUDA_ERROR_OUT_OF_MEMORY;
  *static_cast<int*>(shareable_handle) = exported;
  return CUDA_SUCCESS;
}

CUresult vmm_import(CUmemGenericAllocationHandle* handle, void* os_handle, CUmemAllocationHandleType type) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (handle == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) return CUDA_ERROR_NOT_SUPPORTED;
  const int fd = static_cast<int>(reinterpret_cast<std::intptr_t>(os_handle));
  struct stat file {};
  if (fd < 0 || fstat(fd, &file) != 0 || file.st_size <= 0) return CUDA_ERROR_INVALID_VALUE;

  auto& vmm = state();
  std::unique_lock lock(vmm.mutex);
  // Imported in the process that made it: share the same physical memory (and its accounting).
  auto same_file = [&](const std::shared_ptr<PhysicalMemory>& memory) {
    return memory && memory->inode == file.st_ino && memory->file_system == file.st_dev;
  };
  std::shared_ptr<PhysicalMemory> memory;
  for (auto& [existing_handle, entry] : vmm.handles) {
    if (same_file(entry.memory)) memory = entry.memory;
  }
  for (auto& [base, mapping] : vmm.mappings) {
    if (!memory && same_file(mapping.memory)) memory = mapping.memory;
  }
  if (memory) {
    // A new handle to the same memory, as a real import gives.
    auto alias = memory;
    const CUmemGenericAllocationHandle imported = vmm.next_handle++;
    vmm.handles[imported] = HandleEntry{std::move(alias), 1};
    *handle = imported;
    return CUDA_SUCCESS;
  }
  auto foreign = std::make_shared<PhysicalMemory>();
  foreign->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (foreign->fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
  foreign->size = static_cast<std::size_t>(file.st_size);
  foreign->prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  foreign->prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  foreign->prop.location = location_from_memfd(fd);
  foreign->inode = file.st_ino;
  foreign->file_system = file.st_dev;
  *handle = add_handle(vmm, std::move(foreign));
  return CUDA_SUCCESS;
}

CUresult vmm_retain_handle(CUmemGenericAllocationHandle* handle, void* address) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (handle == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto& vmm = state();
  std::unique_lock lock(vmm.mutex);
  const Mapping* mapping = mapping_containing(vmm, reinterpret_cast<std::uintptr_t>(address));
  if (mapping == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const CUmemGenericAllocationHandle retained = mapping->memory->handle;
  auto entry = vmm.handles.find(retained);
  if (entry == vmm.handles.end()) {
    vmm.handles[retained] = HandleEntry{mapping->memory, 1};
  } else {
    ++entry->second.references;
  }
  *handle = retained;
  return CUDA_SUCCESS;
}

CUresult vmm_properties(CUmemAllocationProp* prop, CUmemGenericAllocationHandle handle) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (prop == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto& vmm = state();
  std::shared_lock lock(vmm.mutex);
  auto entry = vmm.handles.find(handle);
  if (entry == vmm.handles.end()) return CUDA_ERROR_INVALID_VALUE;
  *prop = entry->second.memory->prop;
  return CUDA_SUCCESS;
}

std::optional<VmmPointer> vmm_lookup(std::uintptr_t address) {
  auto& vmm = state();
  std::shared_lock lock(vmm.mutex);
  const Mapping* mapping = mapping_containing(vmm, address);
  if (mapping == nullptr) return std::nullopt;
  return VmmPointer{mapping->base, mapping->size, mapping->memory->prop.location, mapping->memory->handle};
}

bool vmm_range_usable(std::uintptr_t address, std::size_t bytes) {
  auto& vmm = state();
  std::shared_lock lock(vmm.mutex);
  auto covering = covering_mappings(vmm, address, address + bytes);
  if (covering.empty()) return false;
  for (const Mapping* mapping : covering) {
    if (mapping->host_protection != (PROT_READ | PROT_WRITE)) return false;
  }
  return true;
}

}  // namespace fake

// For tests that must show nothing leaked: the physical allocations alive (created or imported,
// not yet freed by their last release and unmap), the bytes mapped, and the reservations held
// (count and bytes). Any pointer may be null.
extern "C" __attribute__((visibility("default"))) void streampool_fake_vmm_live(
    unsigned long long* physical_allocations, unsigned long long* mapped_bytes, unsigned long long* reservations,
    unsigned long long* reserved_bytes) {
  auto& vmm = fake::state();
  std::shared_lock lock(vmm.mutex);
  if (physical_allocations != nullptr) *physical_allocations = fake::live_physical.load(std::memory_order_relaxed);
  if (mapped_bytes != nullptr) {
    *mapped_bytes = 0;
    for (const auto& [base, mapping] : vmm.mappings) *mapped_bytes += mapping.size;
  }
  if (reservations != nullptr) *reservations = vmm.reservations.size();
  if (reserved_bytes != nullptr) {
    *reserved_bytes = 0;
    for (const auto& [base, size] : vmm.reservations) *reserved_bytes += size;
  }
}
