#include "allocations.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <shared_mutex>
#include <vector>

#include "context.hpp"
#include "driver.hpp"

namespace fake {
namespace {

struct AllocationTable {
  std::shared_mutex mutex;
  std::map<std::uintptr_t, Allocation> by_base;
};

AllocationTable& table() {
  static auto* instance = new AllocationTable();  // never destroyed
  return *instance;
}

std::atomic<std::uint64_t> next_buffer_id{1};

std::size_t page_rounded(std::size_t size) {
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return (size + page - 1) / page * page;
}

bool charged(MemoryKind kind) { return kind == MemoryKind::device; }

void give_back(const Allocation& allocation) {
  if (allocation.kind != MemoryKind::registered_host) {
    munmap(reinterpret_cast<void*>(allocation.base), page_rounded(allocation.size));
  }
  if (charged(allocation.kind)) Driver::instance().uncharge(allocation.device, allocation.size);
}

}  // namespace

CUresult allocate_memory(MemoryKind kind, std::size_t size, Context* context, std::uintptr_t& out) {
  const int device = context->device();
  if (charged(kind) && !Driver::instance().try_charge(device, size)) return CUDA_ERROR_OUT_OF_MEMORY;
  void* memory = mmap(nullptr, page_rounded(size), PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (memory == MAP_FAILED) {
    if (charged(kind)) Driver::instance().uncharge(device, size);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  Allocation allocation;
  allocation.base = reinterpret_cast<std::uintptr_t>(memory);
  allocation.size = size;
  allocation.kind = kind;
  allocation.context = context;
  allocation.device = device;
  allocation.buffer_id = next_buffer_id++;
  auto& allocations = table();
  std::unique_lock lock(allocations.mutex);
  allocations.by_base[allocation.base] = allocation;
  out = allocation.base;
  return CUDA_SUCCESS;
}

CUresult free_memory(std::uintptr_t base, bool allow_device_kinds, bool allow_host_kind) {
  auto& allocations = table();
  Allocation freed;
  {
    std::unique_lock lock(allocations.mutex);
    auto found = allocations.by_base.find(base);
    if (found == allocations.by_base.end()) return CUDA_ERROR_INVALID_VALUE;
    const MemoryKind kind = found->second.kind;
    const bool allowed = kind == MemoryKind::host ? allow_host_kind
                         : kind == MemoryKind::registered_host ? false
                                                               : allow_device_kinds;
    if (!allowed) return CUDA_ERROR_INVALID_VALUE;
    freed = found->second;
    allocations.by_base.erase(found);
  }
  give_back(freed);
  return CUDA_SUCCESS;
}

CUresult mark_free_pending(std::uintptr_t base) {
  auto& allocations = table();
  std::unique_lock lock(allocations.mutex);
  auto found = allocations.by_base.find(base);
  if (found == allocations.by_base.end() || found->second.free_pending ||
      (found->second.kind != MemoryKind::device && found->second.kind != MemoryKind::managed)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  found->second.free_pending = true;
  return CUDA_SUCCESS;
}

CUresult register_host_memory(void* pointer, std::size_t size, Context* context) {
  if (pointer == nullptr || size == 0) return CUDA_ERROR_INVALID_VALUE;
  const auto base = reinterpret_cast<std::uintptr_t>(pointer);
  auto& allocations = table();
  std::unique_lock lock(allocations.mutex);
  auto next = allocations.by_base.lower_bound(base);
  if (next != allocations.by_base.end() && next->first < base + size) return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  if (next != allocations.by_base.begin()) {
    auto previous = std::prev(next);
    if (previous->first + previous->second.size > base) return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  }
  Allocation allocation;
  allocation.base = base;
  allocation.size = size;
  allocation.kind = MemoryKind::registered_host;
  allocation.context = context;
  allocation.device = context->device();
  allocation.buffer_id = next_buffer_id++;
  allocations.by_base[base] = allocation;
  return CUDA_SUCCESS;
}

CUresult unregister_host_memory(void* pointer) {
  auto& allocations = table();
  std::unique_lock lock(allocations.mutex);
  auto found = allocations.by_base.find(reinterpret_cast<std::uintptr_t>(pointer));
  if (found == allocations.by_base.end() || found->second.kind != MemoryKind::registered_host) {
    return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  }
  allocations.by_base.erase(found);
  return CUDA_SUCCESS;
}

std::optional<Allocation> find_allocation(std::uintptr_t address) {
  auto& allocations = table();
  std::shared_lock lock(allocations.mutex);
  auto after = allocations.by_base.upper_bound(address);
  if (after == allocations.by_base.begin()) return std::nullopt;
  const Allocation& candidate = std::prev(after)->second;
  if (address >= candidate.base + candidate.size) return std::nullopt;
  return candidate;
}

void free_allocations_of(const Context* context) {
  std::vector<Allocation> freed;
  auto& allocations = table();
  {
    std::unique_lock lock(allocations.mutex);
    for (auto entry = allocations.by_base.begin(); entry != allocations.by_base.end();) {
      if (entry->second.context == context && entry->second.kind != MemoryKind::registered_host) {
        freed.push_back(entry->second);
        entry = allocations.by_base.erase(entry);
      } else {
        ++entry;
      }
    }
  }
  for (const auto& allocation : freed) give_back(allocation);
}

}  // namespace fake
