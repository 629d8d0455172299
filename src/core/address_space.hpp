// AddressSpace: a pool's reserved address ranges, which granules of them are backed by
// physical memory, and the pool-wide index of free memory that every stream may use.
//
// Reservation and mapping are separate so that a pool grows contiguously (new granules are
// mapped right after a free tail, as the driver grows its chunks) and so that trimming can
// return any granule no live or pending block touches, not only whole chunks. Every free
// range in the index is mapped; unmapped space is known only to the granule map. Each region
// keeps one granule (or, for chunk backings, one placement unit) at its end out of use, so
// free ranges of two regions that happen to be adjacent never merge.
// Not thread-safe: the pool's mutex guards it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "backing.hpp"
#include "free_index.hpp"
#include "status.hpp"

namespace streampool::core {

class AddressSpace {
 public:
  // cap_bytes: the most physical memory the pool may hold (0: only the backing limits it).
  // on_region is told of every reservation made (added) and given back (!added).
  using RegionListener = std::function<void(std::uintptr_t base, std::size_t bytes, bool added)>;
  // exclusive_granules: every granule is mapped as a unit of its own (PoolProps::exclusive_granules).
  AddressSpace(Backing& backing, std::size_t cap_bytes, RegionListener on_region, bool exclusive_granules = false);
  ~AddressSpace();
  AddressSpace(const AddressSpace&) = delete;
  AddressSpace& operator=(const AddressSpace&) = delete;

  // Freed memory into the index, with what must be known before another stream reuses it. The
  // granules it touches are stamped with the current release epoch (set_epoch): their last use.
  void give(std::uintptr_t address, std::size_t bytes, const Requirements& requirements = {});
  // Maps what a `bytes` allocation needs (the lowest place where a free tail that `usable`
  // accepts plus unmapped granules fit it, else a new reservation) and takes the allocation.
  using Usable = std::function<bool(const Requirements&)>;
  Status grow_and_take(std::size_t bytes, std::span<const AccessDescriptor> access, const Usable& usable,
                       std::uintptr_t* address);
  // Unmaps free granules of ranges with no requirements left (FreeIndex::settle first),
  // highest address first, until reserved <= target. A mapping unit larger than a granule may
  // take reserved below the target (a release threshold: the driver's chunks do the same) unless
  // `below` is Below::kept (cuMemPoolTrimTo's minBytesToKeep: at least that much stays). Each run
  // given back is appended to `released` when asked, so that restore() can undo it.
  struct Run {
    std::uintptr_t address;
    std::size_t bytes;
  };
  enum class Below { allowed, kept };
  std::size_t release_to(std::size_t target_reserved_bytes, std::vector<Run>* released = nullptr,
                         Below below = Below::allowed);
  // Release epochs: the engine counts the program's host synchronisations; every granule
  // remembers the epoch in which it was last freed or mapped (a block can only be reused after a
  // free, so a granule wholly free and stamped long ago has not been used since). Atomic: set at
  // every synchronisation without the pool's lock.
  void set_epoch(std::uint32_t epoch) noexcept { epoch_.store(epoch, std::memory_order_relaxed); }
  // A whole mapping unit that no live block, cached block or pending free touches: what may go
  // back. Only for mapped backings (chunk backings give back whole chunks through release_to).
  struct UnusedUnit {
    std::uintptr_t range_start;     // the free range holding it (for the index's take_inside)
    std::uintptr_t address;
    std::size_t bytes;
    std::uint32_t last_used_epoch;  // the latest stamp of its granules
  };
  // After FreeIndex::settle. Units of one free range come highest first.
  std::vector<UnusedUnit> unused_units() const;
  // Gives back units unused_units() returned, with no change to the index in between; returns
  // the bytes given back (a unit the backing will not unmap stays mapped, free and counted).
  std::size_t release_units(std::vector<UnusedUnit> units);
  // Maps released runs again (a failed out-of-memory retry leaves the pool as it was).
  void restore(const std::vector<Run>& released, std::span<const AccessDescriptor> access);
  Status set_access(std::span<const AccessDescriptor> access);

  std::size_t reserved_bytes() const noexcept { return reserved_bytes_; }
  std::size_t cap_bytes() const noexcept { return cap_bytes_; }
  std::size_t granule_bytes() const noexcept { return granule_bytes_; }
  FreeIndex& free_index() noexcept { return free_; }
  const FreeIndex& free_index() const noexcept { return free_; }
  bool chunked_backing() const noexcept { return chunked(); }

  struct Region {
    std::uintptr_t base = 0;
    std::size_t bytes = 0;        // reserved
    std::size_t usable_bytes = 0; // bytes minus the guard at its end
    std::vector<bool> mapped;     // per granule
    // Per granule, the first granule of the mapping unit holding it; unit_granules is set at
    // that first granule. A unit is mapped and unmapped as one (see map_range).
    std::vector<std::uint32_t> unit_first;
    std::vector<std::uint32_t> unit_granules;
    std::vector<std::uint32_t> last_used_epoch;  // per granule: see set_epoch
  };

 private:
  struct GrowthPlan {
    std::size_t region = 0;
    std::uintptr_t start = 0;       // where the allocation will begin
    std::uintptr_t map_from = 0;    // first granule to map
    std::size_t map_bytes = 0;      // what must be mapped at least
    std::size_t room_bytes = 0;     // unmapped granules available from map_from
  };
  std::optional<GrowthPlan> plan_growth(std::size_t bytes, const Usable& usable) const;
  Status new_region(std::size_t bytes, std::size_t* index);
  // Maps [from, from + bytes) unit by unit. On failure what it mapped is unmapped again; a unit
  // the backing would not unmap stays mapped, counted, and free in the index.
  // unit_granules 0: the mapping units unit_granules_for(bytes) gives.
  Status map_range(Region& region, std::uintptr_t from, std::size_t bytes,
                   std::span<const AccessDescriptor> access, std::size_t unit_granules = 0);
  // False when the backing refused: the unit then stays mapped and counted.
  bool unmap_unit(Region& region, std::size_t first_granule);
  bool any_mapped(const Region& region, std::uintptr_t from, std::size_t bytes) const;
  // Mapping units: CUDA unmaps only whole mappings, and each map costs tens of microseconds.
  // Growth below kUnitsFrom maps granule by granule (so any free granule can be given back);
  // larger growth, driven by large blocks, maps in bigger units (a 100 GiB request: hundreds of
  // maps, not fifty thousand).
  static constexpr std::size_t kUnitsFrom = 64u << 20;
  static constexpr std::size_t kMediumUnit = 32u << 20;
  static constexpr std::size_t kLargeUnitsFrom = 1u << 30;
  static constexpr std::size_t kLargeUnit = 256u << 20;
  // What a growth of a pool that is filling up (its free memory short of the request) maps at
  // least: the first 32 MiB, then kMediumUnit as one mapping unit (one map call), as NVIDIA's
  // pool grows by 32 MiB chunks: a pool filled 2 MiB at a time, as a model's first prefill fills
  // it, maps 1 GiB in 32 calls rather than 512. What a growth maps beyond its request is free
  // memory the next requests take first. A growth for fragmentation maps what it needs.
  std::size_t growth_bytes() const noexcept;
  bool chunked() const noexcept { return reservation_bytes_ == 0; }
  // Granules per mapping unit for a growth of `bytes` (chunk backings map whole regions instead).
  std::size_t unit_granules_for(std::size_t bytes) const noexcept;

  Region* region_of(std::uintptr_t address);
  void stamp(Region& region, std::uintptr_t from, std::uintptr_t to) noexcept;

  Backing& backing_;
  RegionListener on_region_;
  std::size_t granule_bytes_;
  std::size_t reservation_bytes_;
  std::size_t cap_bytes_;
  bool exclusive_granules_;
  bool given_back_ = false;  // release_to gave memory back once: see grow_and_take
  std::size_t reserved_bytes_ = 0;
  std::vector<Region> regions_;
  FreeIndex free_;
  std::atomic<std::uint32_t> epoch_{0};
};

}  // namespace streampool::core
