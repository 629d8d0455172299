// What the fake knows about an address: the allocation or VMM mapping that holds it. Shared by the
// pointer queries and the checks that copies and memsets only touch memory the driver handed out.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <optional>

namespace fake {

class Context;

struct PointerInfo {
  std::uintptr_t base = 0;
  std::size_t size = 0;
  bool device_memory = false;  // CU_MEMORYTYPE_DEVICE (else host)
  bool managed = false;
  bool vmm = false;
  bool legacy_ipc_capable = false;
  Context* context = nullptr;  // nullptr for VMM mappings
  int device = 0;
  std::uint64_t buffer_id = 0;
};

std::optional<PointerInfo> lookup_pointer(std::uintptr_t address);
// [address, address + bytes) lies in memory the fake handed out and a "device" may touch.
bool device_range_usable(std::uintptr_t address, std::size_t bytes);

}  // namespace fake
