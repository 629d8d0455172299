// InMemoryBacking: a core::Backing that hands out address space from an invented range and
// "maps" it by bookkeeping alone, with a configurable amount of physical memory. Tests and
// benchmarks of the engine use it in place of VMM; it checks the engine's calls (unmap of
// something unmapped, map outside a reservation) and counts them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <vector>

#include "core/backing.hpp"

namespace streampool::testing {

class InMemoryBacking final : public core::Backing {
 public:
  struct Config {
    std::size_t granule_bytes = 2u << 20;
    std::size_t reservation_bytes = std::size_t{1} << 36;  // 64 GiB of address space per region
    std::size_t physical_bytes = std::size_t{1} << 40;     // the "device" memory
  };
  InMemoryBacking() : InMemoryBacking(Config{}) {}
  explicit InMemoryBacking(Config config) : config_(config) {}

  std::size_t granule_bytes() const override { return config_.granule_bytes; }
  std::size_t reservation_bytes() const override { return config_.reservation_bytes; }
  core::Status reserve(std::size_t bytes, std::uintptr_t* base) override;
  core::Status unreserve(std::uintptr_t base, std::size_t bytes) override;
  core::Status map(std::uintptr_t address, std::size_t bytes,
                   std::span<const core::AccessDescriptor> access) override;
  core::Status unmap(std::uintptr_t address, std::size_t bytes) override;
  core::Status set_access(std::uintptr_t address, std::size_t bytes,
                          std::span<const core::AccessDescriptor> access) override;

  std::size_t mapped_bytes() const;
  std::size_t reserved_bytes() const;  // address space reserved and not given back
  bool holds(std::uintptr_t address) const;  // inside one of its reservations
  std::size_t map_calls() const;
  std::size_t unmap_calls() const;
  std::size_t largest_mapping() const;
  std::size_t errors() const;  // engine calls that broke the contract
  std::size_t set_access_calls() const;
  bool is_mapped(std::uintptr_t address) const;
  void set_physical_bytes(std::size_t bytes);

 private:
  Config config_;
  mutable std::mutex mutex_;
  std::map<std::uintptr_t, std::size_t> reservations_;
  std::set<std::uintptr_t> mapped_granules_;
  std::map<std::uintptr_t, std::size_t> mappings_;  // what each map call mapped: unmapped whole
  std::size_t map_calls_ = 0;
  std::size_t unmap_calls_ = 0;
  std::size_t set_access_calls_ = 0;
  std::size_t errors_ = 0;
};

}  // namespace streampool::testing
