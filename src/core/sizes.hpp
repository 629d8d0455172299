// The sizes the driver's observable policy is made of (measured on an H200, see
// docs/driver-behaviour.md): 512-byte placement, 32 MiB growth chunks.
#pragma once

#include <cstddef>

namespace streampool::core {

inline constexpr std::size_t kPlacementBytes = 512;              // consecutive small blocks are 512 B apart
inline constexpr std::size_t kGrowthChunkBytes = 32u << 20;      // first growth; max_size is rounded up to it

constexpr std::size_t round_up(std::size_t bytes, std::size_t unit) noexcept {
  return (bytes + unit - 1) / unit * unit;
}

constexpr std::size_t round_down(std::size_t bytes, std::size_t unit) noexcept {
  return bytes / unit * unit;
}

}  // namespace streampool::core
