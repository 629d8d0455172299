#include "in_memory_backing.hpp"

#include <algorithm>
#include <atomic>

namespace streampool::testing {

namespace {
// One invented address space for every backing of the process, as a real device has.
std::atomic<std::uintptr_t> g_next_base{std::uintptr_t{1} << 40};
}  // namespace

core::Status InMemoryBacking::reserve(std::size_t bytes, std::uintptr_t* base) {
  std::lock_guard guard(mutex_);
  if (bytes == 0 || bytes % config_.granule_bytes != 0) {
    ++errors_;
    return core::Status::invalid_value;
  }
  // A gap between reservations, so that adjacency is never an accident the tests rely on.
  *base = g_next_base.fetch_add(bytes + config_.granule_bytes * 16);
  reservations_.emplace(*base, bytes);
  return core::Status::success;
}

core::Status InMemoryBacking::unreserve(std::uintptr_t base, std::size_t bytes) {
  std::lock_guard guard(mutex_);
  auto it = reservations_.find(base);
  if (it == reservations_.end() || it->second != bytes) {
    ++errors_;
    return core::Status::success;  // an engine bug, counted in errors_
  }
  for (std::uintptr_t g = base; g < base + bytes; g += config_.granule_bytes) {
    if (mapped_granules_.count(g) != 0) ++errors_;  // unreserving mapped memory
  }
  reservations_.erase(it);
  return core::Status::success;
}

core::Status InMemoryBacking::map(std::uintptr_t address, std::size_t bytes,
                                  std::span<const core::AccessDescriptor> /*access*/) {
  std::lock_guard guard(mutex_);
  ++map_calls_;
  if (bytes == 0 || address % config_.granule_bytes != 0 || bytes % config_.granule_bytes != 0) {
    ++errors_;
    return core::Status::invalid_value;
  }
  auto it = reservations_.upper_bound(address);
  if (it == reservations_.begin() || address + bytes > std::prev(it)->first + std::prev(it)->second) {
    ++errors_;
    return core::Status::invalid_value;
  }
  if (mapped_granules_.size() * config_.granule_bytes + bytes > config_.physical_bytes) {
    return core::Status::out_of_memory;
  }
  for (std::uintptr_t g = address; g < address + bytes; g += config_.granule_bytes) {
    if (!mapped_granules_.insert(g).second) ++errors_;  // mapped twice
  }
  mappings_[address] = bytes;
  return core::Status::success;
}

core::Status InMemoryBacking::unmap(std::uintptr_t address, std::size_t bytes) {
  std::lock_guard guard(mutex_);
  ++unmap_calls_;
  // CUDA unmaps only a whole mapping: anything else is an engine bug.
  auto mapping = mappings_.find(address);
  if (mapping == mappings_.end() || mapping->second != bytes) {
    ++errors_;
  } else {
    mappings_.erase(mapping);
  }
  for (std::uintptr_t g = address; g < address + bytes; g += config_.granule_bytes) {
    if (mapped_granules_.erase(g) == 0) ++errors_;
  }
  return core::Status::success;  // misuse is counted in errors_, not answered
}

core::Status InMemoryBacking::set_access(std::uintptr_t address, std::size_t bytes,
                                         std::span<const core::AccessDescriptor> /*access*/) {
  std::lock_guard guard(mutex_);
  ++set_access_calls_;
  for (std::uintptr_t g = address; g < address + bytes; g += config_.granule_bytes) {
    if (mapped_granules_.count(g) == 0) ++errors_;
  }
  return core::Status::success;
}

std::size_t InMemoryBacking::mapped_bytes() const {
  std::lock_guard guard(mutex_);
  return mapped_granules_.size() * config_.granule_bytes;
}
std::size_t InMemoryBacking::reserved_bytes() const {
  std::lock_guard guard(mutex_);
  std::size_t bytes = 0;
  for (const auto& [base, size] : reservations_) bytes += size;
  return bytes;
}
bool InMemoryBacking::holds(std::uintptr_t address) const {
  std::lock_guard guard(mutex_);
  auto it = reservations_.upper_bound(address);
  return it != reservations_.begin() && address < std::prev(it)->first + std::prev(it)->second;
}
std::size_t InMemoryBacking::map_calls() const {
  std::lock_guard guard(mutex_);
  return map_calls_;
}
std::size_t InMemoryBacking::unmap_calls() const {
  std::lock_guard guard(mutex_);
  return unmap_calls_;
}
std::size_t InMemoryBacking::set_access_calls() const {
  std::lock_guard guard(mutex_);
  return set_access_calls_;
}
std::size_t InMemoryBacking::errors() const {
  std::lock_guard guard(mutex_);
  return errors_;
}
std::size_t InMemoryBacking::largest_mapping() const {
  std::lock_guard guard(mutex_);
  std::size_t largest = 0;
  for (const auto& [address, bytes] : mappings_) largest = std::max(largest, bytes);
  return largest;
}
bool InMemoryBacking::is_mapped(std::uintptr_t address) const {
  std::lock_guard guard(mutex_);
  return mapped_granules_.count(address - address % config_.granule_bytes) != 0;
}
void InMemoryBacking::set_physical_bytes(std::size_t bytes) {
  std::lock_guard guard(mutex_);
  config_.physical_bytes = bytes;
}

}  // namespace streampool::testing
