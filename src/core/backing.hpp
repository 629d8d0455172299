// Backing: where a pool's memory comes from.
//
// The engine keeps the reservation of address space apart from the mapping of physical memory,
// so that it can grow a pool contiguously and give back any fully free granule. A backing
// provides exactly that, in units of granule_bytes():
//   reserve / unreserve  address space, no physical memory (VMM: cuMemAddressReserve);
//   map / unmap          physical memory behind part of a reservation (cuMemCreate + cuMemMap +
//                        cuMemSetAccess), all addresses and sizes multiples of granule_bytes();
//                        each map is one physical allocation, and unmap is only ever called for
//                        exactly a range one map call mapped (CUDA unmaps whole mappings only);
//                        a failed map leaves nothing mapped, a failed unmap leaves the range
//                        mapped (the engine keeps counting it and tries again later), and a
//                        failed unreserve leaves the reservation in place;
//   set_access           change who may touch mapped memory (peer devices).
// A backing that cannot split reservation from mapping (whole cuMemAlloc chunks) returns
// reservation_bytes() == 0: the engine then reserves one region per growth and releases a
// region only as a whole. Calls come from the engine's slow paths, never concurrently for one
// pool (the engine holds the pool's growth lock).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "status.hpp"

namespace streampool::core {

// Who may access a pool's memory, in CUDA's terms (CUmemLocationType, CUmemAccess_flags values).
struct AccessDescriptor {
  int location_type = 0;
  int location_id = 0;
  int flags = 0;
};

class Backing {
 public:
  virtual ~Backing() = default;

  // The mapping unit: every map/unmap address and size is a multiple of it (2 MiB on H200).
  virtual std::size_t granule_bytes() const = 0;
  // Address space worth reserving at once; 0 means "reservation and mapping are one act".
  virtual std::size_t reservation_bytes() const = 0;

  virtual Status reserve(std::size_t bytes, std::uintptr_t* base) = 0;
  virtual Status unreserve(std::uintptr_t base, std::size_t bytes) = 0;
  // out_of_memory when the location has no physical memory left for it.
  virtual Status map(std::uintptr_t address, std::size_t bytes,
                     std::span<const AccessDescriptor> access) = 0;
  virtual Status unmap(std::uintptr_t address, std::size_t bytes) = 0;
  virtual Status set_access(std::uintptr_t address, std::size_t bytes,
                            std::span<const AccessDescriptor> access) = 0;
};

}  // namespace streampool::core
