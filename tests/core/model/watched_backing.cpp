#include "model/watched_backing.hpp"

#include <algorithm>
#include <iterator>

namespace streampool::testing::model {

core::Status WatchedBacking::map(std::uintptr_t address, std::size_t bytes,
                                 std::span<const core::AccessDescriptor> access) {
  // The peak is taken under our mutex around the map, so that concurrent maps of one pool
  // (which the engine never makes) could not hide a peak either.
  std::lock_guard guard(mutex_);
  const core::Status status = inner_.map(address, bytes, access);
  if (core::ok(status)) {
    peak_ = std::max(peak_, inner_.mapped_bytes());
    mappings_[address] = bytes;
    if (bytes >= kLargeUnit) {
      ++units_.large_maps;
    } else if (bytes >= kMediumUnit) {
      ++units_.medium_maps;
    }
  }
  return status;
}

core::Status WatchedBacking::unmap(std::uintptr_t address, std::size_t bytes) {
  std::lock_guard guard(mutex_);
  const core::Status status = inner_.unmap(address, bytes);
  auto it = mappings_.find(address);
  if (core::ok(status) && it != mappings_.end() && it->second == bytes) {
    mappings_.erase(it);
    if (bytes >= kLargeUnit) {
      ++units_.large_unmaps;
    } else if (bytes >= kMediumUnit) {
      ++units_.medium_unmaps;
    }
  }
  return status;
}

std::size_t WatchedBacking::peak_mapped_bytes() const {
  std::lock_guard guard(mutex_);
  return peak_;
}

void WatchedBacking::reset_peak() {
  std::lock_guard guard(mutex_);
  peak_ = inner_.mapped_bytes();
}

bool WatchedBacking::range_mapped(std::uintptr_t address, std::size_t bytes) const {
  if (bytes == 0) return true;
  std::lock_guard guard(mutex_);
  // Walk the mappings that cover the range in address order: each must start where the
  // previous one ended, until the range's end.
  auto it = mappings_.upper_bound(address);
  if (it == mappings_.begin()) return false;
  it = std::prev(it);
  std::uintptr_t covered = address;
  const std::uintptr_t end = address + bytes;
  while (it != mappings_.end() && it->first <= covered) {
    covered = std::max<std::uintptr_t>(covered, it->first + it->second);
    if (covered >= end) return true;
    ++it;
  }
  return false;
}

UnitCounts WatchedBacking::unit_counts() const {
  std::lock_guard guard(mutex_);
  return units_;
}

}  // namespace streampool::testing::model
