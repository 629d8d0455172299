#include "model/watched_backing.hpp"

#include <algorithm>

namespace streampool::testing::model {

core::Status WatchedBacking::map(std::uintptr_t address, std::size_t bytes,
                                 std::span<const core::AccessDescriptor> access) {
  // The peak is taken under our mutex around the map, so that concurrent maps of one pool
  // (which the engine never makes) could not hide a peak either.
  std::lock_guard guard(mutex_);
  const core::Status status = inner_.map(address, bytes, access);
  if (core::ok(status)) peak_ = std::max(peak_, inner_.mapped_bytes());
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
  const std::size_t granule = inner_.granule_bytes();
  for (std::uintptr_t g = address / granule * granule; g < address + bytes; g += granule) {
    if (!inner_.is_mapped(g)) return false;
  }
  return true;
}

}  // namespace streampool::testing::model
