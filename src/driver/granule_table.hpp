// GranuleTable: the physical allocations mapped behind an exportable pool, kept so that another
// process can map the same memory (pools shared between processes, cuMemPoolExportPointer).
//
// An exportable pool's VmmBacking creates every physical allocation with requestedHandleTypes set
// and keeps its handle here while it is mapped (instead of releasing it right after cuMemMap);
// the unmap takes it out and releases it. The IPC service thread reads the table concurrently with
// the pool's growth and trimming, hence its own lock. Shared (shared_ptr) between the backing and
// the exporter's state, which may outlive each other.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <vector>

#include "cuda_compat.hpp"

namespace streampool::driver {

class GranuleTable {
 public:
  // The physical allocations under a range of addresses.
  struct RangeShape {
    std::size_t mappings = 0;
    std::size_t bytes = 0;           // their sizes added up
    std::uintptr_t first_base = 0;   // where the first one is mapped
  };
  using ShapeVisitor = std::function<bool(const RangeShape&)>;
  using MappingVisitor = std::function<bool(std::size_t bytes, int fd)>;  // takes the descriptor

  explicit GranuleTable(int handle_type) noexcept : handle_type_(handle_type) {}
  int handle_type() const noexcept { return handle_type_; }

  void add(std::uintptr_t address, std::size_t bytes, CUmemGenericAllocationHandle handle);
  // The handle mapped at exactly `address`, taken out of the table; false if none.
  bool take(std::uintptr_t address, CUmemGenericAllocationHandle* handle);

  // The shape of the physical allocations mapped over [begin, end) (they must cover the range
  // without a gap), then one shareable handle for each, in address order, each exported only when
  // it is handed to `each` (so that no more than one is open at a time here). Stops at the first
  // visitor that returns false (CUDA_ERROR_INVALID_VALUE). CUDA_ERROR_INVALID_VALUE when the range
  // is not wholly mapped. Holds the table's lock throughout: nothing is unmapped meanwhile.
  CUresult export_range(std::uintptr_t begin, std::uintptr_t end, const ShapeVisitor& shape,
                        const MappingVisitor& each) const;

 private:
  struct Entry {
    std::size_t bytes = 0;
    CUmemGenericAllocationHandle handle = 0;
  };
  int handle_type_;
  mutable std::mutex mutex_;
  std::map<std::uintptr_t, Entry> entries_;  // mapping base -> physical allocation
};

}  // namespace streampool::driver
