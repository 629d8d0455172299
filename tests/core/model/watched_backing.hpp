// WatchedBacking: an InMemoryBacking that keeps the high watermark of its mapped bytes itself,
// at every map, so that RESERVED_MEM_HIGH can be checked against what really was mapped, not
// against the engine's own bookkeeping. reset_peak() mirrors a program's reset of
// RESERVED_MEM_HIGH.
// Thread-safe where InMemoryBacking is; the peak is updated under its own mutex.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>

#include "core/backing.hpp"
#include "doubles/in_memory_backing.hpp"

namespace streampool::testing::model {

class WatchedBacking final : public core::Backing {
 public:
  explicit WatchedBacking(InMemoryBacking::Config config = {}) : inner_(config) {}

  std::size_t granule_bytes() const override { return inner_.granule_bytes(); }
  std::size_t reservation_bytes() const override { return inner_.reservation_bytes(); }
  core::Status reserve(std::size_t bytes, std::uintptr_t* base) override { return inner_.reserve(bytes, base); }
  core::Status unreserve(std::uintptr_t base, std::size_t bytes) override { return inner_.unreserve(base, bytes); }
  core::Status map(std::uintptr_t address, std::size_t bytes,
                   std::span<const core::AccessDescriptor> access) override;
  core::Status unmap(std::uintptr_t address, std::size_t bytes) override { return inner_.unmap(address, bytes); }
  core::Status set_access(std::uintptr_t address, std::size_t bytes,
                          std::span<const core::AccessDescriptor> access) override {
    return inner_.set_access(address, bytes, access);
  }

  std::size_t mapped_bytes() const { return inner_.mapped_bytes(); }
  std::size_t peak_mapped_bytes() const;
  void reset_peak();
  std::size_t errors() const { return inner_.errors(); }
  // Every granule of [address, address + bytes) is mapped.
  bool range_mapped(std::uintptr_t address, std::size_t bytes) const;

 private:
  InMemoryBacking inner_;
  mutable std::mutex mutex_;
  std::size_t peak_ = 0;
};

}  // namespace streampool::testing::model
