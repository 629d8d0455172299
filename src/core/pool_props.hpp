// What a pool is, in CUDA's terms, and the attributes it answers. Numbers match
// CUmemPool_attribute (1..15) and CUmemAllocationType / CUmemLocationType so that adapters can
// pass them through unchanged.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace streampool::core {

enum class PoolKind : int { device = 1, pinned_host = 2, managed = 3 };  // the allocation's nature

enum class PoolAttribute : int {
  reuse_follow_event_dependencies = 1,
  reuse_allow_opportunistic = 2,
  reuse_allow_internal_dependencies = 3,
  release_threshold = 4,
  reserved_mem_current = 5,
  reserved_mem_high = 6,
  used_mem_current = 7,
  used_mem_high = 8,
  allocation_type = 9,
  export_handle_types = 10,
  location_id = 11,
  location_type = 12,
  max_pool_size = 13,
  hw_decompress_enabled = 14,
  locality_domain_id = 15,
};

struct PoolProps {
  PoolKind kind = PoolKind::device;
  int allocation_type = 1;      // CUmemAllocationType as the program gave it (1 pinned, 2 managed)
  int location_type = 1;        // CUmemLocationType (1 device, 2 host, ...), 0 for managed/None
  int location_id = 0;
  std::uint32_t handle_types = 0;  // CUmemAllocationHandleType bits the pool may export
  std::size_t max_size = 0;        // 0: no limit; else rounded up to the growth chunk
  bool hw_decompress = false;
  int locality_domain_id = -1;
  // One allocation per granule run: every allocation starts on a granule, takes whole granules,
  // and every granule is its own physical allocation, so no two allocations share physical
  // memory. Set for pools shared between processes: an importer maps whole physical allocations,
  // so it must find nothing in them but the allocation it imports (docs/DESIGN.md).
  bool exclusive_granules = false;
};

// The four statistics of CUDA's pools, exact at every quiescent point.
// Frees of one stream a pool holds that other streams may not reuse yet (for reports).
struct PendingFrees {
  std::uint64_t stream = 0;          // the freeing stream's key
  std::uint64_t bytes = 0;
  std::uint64_t largest_range = 0;
  std::uint64_t waits_for_tick = 0;  // the latest tick of those frees
  std::uint64_t completed_tick = 0;  // known complete through (host, and markers where opportunistic)
  bool stream_ended = false;
};

// A pool's free memory as a failed request meets it (Engine::free_figures): slow, for reports.
struct FreeFigures {
  std::uint64_t free_bytes = 0;    // mapped and free: the index and the streams' caches
  std::uint64_t largest_free = 0;  // the largest free range, whatever it waits for
  std::vector<PendingFrees> pending;  // most bytes first
};

struct PoolStats {
  std::uint64_t reserved_current = 0;
  std::uint64_t reserved_high = 0;
  std::uint64_t used_current = 0;
  std::uint64_t used_high = 0;
};

}  // namespace streampool::core
