// WatchedBacking: an InMemoryBacking that keeps its own account of what is mapped, at every
// map and unmap, so that the engine's statistics and its live blocks are checked against what
// really was mapped, not against the engine's own bookkeeping:
//   mapped_bytes / peak_mapped_bytes   RESERVED_MEM_CURRENT / _HIGH (reset_peak() mirrors a
//                                      program's reset of RESERVED_MEM_HIGH);
//   range_mapped                       every byte of a live block lies in a mapping;
//   unit counts                        which mapping-unit regimes the engine reached (granules,
//                                      32 MiB units of growths from 64 MiB, 256 MiB units of
//                                      growths from 1 GiB), mapped and unmapped.
// Thread-safe where InMemoryBacking is; the account is updated under its own mutex.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

#include "core/backing.hpp"
#include "doubles/in_memory_backing.hpp"

namespace streampool::testing::model {

struct UnitCounts {
  std::size_t medium_maps = 0;    // 32 MiB .. 256 MiB mappings
  std::size_t large_maps = 0;     // 256 MiB and larger
  std::size_t medium_unmaps = 0;
  std::size_t large_unmaps = 0;
};

class WatchedBacking final : public core::Backing {
 public:
  static constexpr std::size_t kMediumUnit = std::size_t{32} << 20;
  static constexpr std::size_t kLargeUnit = std::size_t{256} << 20;

  explicit WatchedBacking(InMemoryBacking::Config config = {}) : inner_(config) {}

  std::size_t granule_bytes() const override { return inner_.granule_bytes(); }
  std::size_t reservation_bytes() const override { return inner_.reservation_bytes(); }
  core::Status reserve(std::size_t bytes, std::uintptr_t* base) override { return inner_.reserve(bytes, base); }
  core::Status unreserve(std::uintptr_t base, std::size_t bytes) override { return inner_.unreserve(base, bytes); }
  core::Status map(std::uintptr_t address, std::size_t bytes,
                   std::span<const core::AccessDescriptor> access) override;
  core::Status unmap(std::uintptr_t address, std::size_t bytes) override;
  core::Status set_access(std::uintptr_t address, std::size_t bytes,
                          std::span<const core::AccessDescriptor> access) override {
    return inner_.set_access(address, bytes, access);
  }

  std::size_t mapped_bytes() const { return inner_.mapped_bytes(); }
  std::size_t peak_mapped_bytes() const;
  void reset_peak();
  std::size_t errors() const { return inner_.errors(); }
  // Every byte of [address, address + bytes) lies in a mapping made and not unmapped since.
  bool range_mapped(std::uintptr_t address, std::size_t bytes) const;
  UnitCounts unit_counts() const;

 private:
  InMemoryBacking inner_;
  mutable std::mutex mutex_;
  std::size_t peak_ = 0;
  std::map<std::uintptr_t, std::size_t> mappings_;  // start -> bytes, as map() was called
  UnitCounts units_;
};

}  // namespace streampool::testing::model
