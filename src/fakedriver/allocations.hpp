// Memory handed out by cuMemAlloc, cuMemAllocHost/cuMemHostAlloc, cuMemAllocManaged, the native
// cuMemAllocAsync and cuMemHostRegister: all plain host memory here, kept in an address-ordered table
// so that pointer queries (cuPointerGetAttribute, cuMemGetAddressRange) and the device-pointer
// checks of copies can find the allocation that holds an address. Device allocations are charged to
// their device's configured memory.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <optional>

namespace fake {

class Context;

enum class MemoryKind { device, host, managed, registered_host };

struct Allocation {
  std::uintptr_t base = 0;
  std::size_t size = 0;
  MemoryKind kind = MemoryKind::device;
  Context* context = nullptr;
  int device = 0;
  std::uint64_t buffer_id = 0;
  bool free_pending = false;  // cuMemFreeAsync issued, not yet run
};

// Allocates `size` bytes (size > 0) of `kind` (not registered_host) owned by `context`.
CUresult allocate_memory(MemoryKind kind, std::size_t size, Context* context, std::uintptr_t& out);
// Frees an allocation by its base address if its kind is one of those allowed.
CUresult free_memory(std::uintptr_t base, bool allow_device_kinds, bool allow_host_kind);
// For cuMemFreeAsync: checks `base` is a live device allocation and marks it so a second free fails.
CUresult mark_free_pending(std::uintptr_t base);
CUresult register_host_memory(void* pointer, std::size_t size, Context* context);
CUresult unregister_host_memory(void* pointer);
std::optional<Allocation> find_allocation(std::uintptr_t address);
// Frees every device/managed/host allocation of a context (context destroy, primary reset).
void free_allocations_of(const Context* context);

}  // namespace fake
