#include "address_space.hpp"

#include <algorithm>
#include <cassert>

#include "sizes.hpp"

namespace streampool::core {

AddressSpace::AddressSpace(Backing& backing, std::size_t cap_bytes, RegionListener on_region,
                           bool exclusive_granules)
    : backing_(backing),
      on_region_(std::move(on_region)),
      granule_bytes_(backing.granule_bytes()),
      reservation_bytes_(backing.reservation_bytes()),
      cap_bytes_(cap_bytes),
      exclusive_granules_(exclusive_granules) {}

AddressSpace::~AddressSpace() {
  // Nothing more can be done about a backing that refuses now: what it kept, it keeps.
  for (Region& region : regions_) {
    if (!chunked()) {
      for (std::size_t g = 0; g < region.mapped.size(); ++g) {
        if (region.mapped[g] && region.unit_first[g] == g) unmap_unit(region, g);
      }
    } else {
      (void)backing_.unmap(region.base, region.bytes);
    }
    (void)backing_.unreserve(region.base, region.bytes);
    if (on_region_) on_region_(region.base, region.bytes, false);
  }
}

AddressSpace::Region* AddressSpace::region_of(std::uintptr_t address) {
  for (Region& region : regions_) {
    if (address >= region.base && address < region.base + region.bytes) return &region;
  }
  return nullptr;
}

std::optional<AddressSpace::GrowthPlan> AddressSpace::plan_growth(std::size_t bytes, const Usable& usable) const {
  if (chunked()) return std::nullopt;  // chunk backings grow by whole new regions only
  for (std::size_t r = 0; r < regions_.size(); ++r) {
    const Region& region = regions_[r];
    const std::size_t usable_granules = region.usable_bytes / granule_bytes_;
    for (std::size_t g = 0; g < usable_granules;) {
      if (region.mapped[g]) {
        ++g;
        continue;
      }
      // The run's length matters only up to what the request and one growth chunk need.
      const std::size_t enough = g + (bytes + kGrowthChunkBytes) / granule_bytes_ + 1;
      std::size_t end = g;
      while (end < usable_granules && end < enough && !region.mapped[end]) ++end;
      const std::uintptr_t run_start = region.base + g * granule_bytes_;
      const std::uintptr_t tail_start = free_.run_start_before(run_start, usable);
      const std::size_t have = run_start - tail_start;
      const std::size_t need = bytes > have ? round_up(bytes - have, granule_bytes_) : 0;
      const std::size_t room = (end - g) * granule_bytes_;
      if (need <= room) {
        return GrowthPlan{r, tail_start, run_start, need, room};
      }
      g = end;
    }
  }
  return std::nullopt;
}

Status AddressSpace::new_region(std::size_t bytes, std::size_t* index) {
  std::size_t usable = round_up(bytes, granule_bytes_);
  std::size_t reserve_bytes = usable;
  if (chunked()) {
    usable -= kPlacementBytes;  // the guard: a free range never touches the next region
  } else {
    // A cap larger than the backing's reservation (maxSize beyond the device's memory, or beyond
    // any address space: 2^47 and more cannot be reserved) reserves what the backing offers.
    const std::size_t wanted = cap_bytes_ != 0 ? std::min(cap_bytes_, reservation_bytes_) : reservation_bytes_;
    usable = std::max(usable, round_up(wanted, granule_bytes_));
    reserve_bytes = usable + granule_bytes_;  // one never-mapped granule as the guard
  }
  std::uintptr_t base = 0;
  if (Status status = backing_.reserve(reserve_bytes, &base); !ok(status)) return status;
  Region region;
  region.base = base;
  region.bytes = reserve_bytes;
  region.usable_bytes = usable;
  region.mapped.assign(reserve_bytes / granule_bytes_, false);
  region.unit_first.assign(region.mapped.size(), 0);
  region.unit_granules.assign(region.mapped.size(), 0);
  if (!chunked()) region.last_used_epoch.assign(region.mapped.size(), 0);
  auto at = std::lower_bound(regions_.begin(), regions_.end(), base,
                             [](const Region& existing, std::uintptr_t b) { return existing.base < b; });
  *index = static_cast<std::size_t>(at - regions_.begin());
  regions_.insert(at, std::move(region));
  if (on_region_) on_region_(base, reserve_bytes, true);
  return Status::success;
}

Status AddressSpace::map_range(Region& region, std::uintptr_t from, std::size_t bytes,
                               std::span<const AccessDescriptor> access, std::size_t unit_granules) {
  const std::size_t first = (from - region.base) / granule_bytes_;
  const std::size_t granules = bytes / granule_bytes_;
  const std::size_t unit = chunked()             ? granules  // a chunk backing's region is one allocation
                           : unit_granules != 0 ? unit_granules
                                                : unit_granules_for(bytes);
  for (std::size_t done = 0; done < granules;) {
    const std::size_t length = granules - done >= unit ? unit : 1;  // the tail granule by granule
    const std::size_t at = first + done;
    if (Status status = backing_.map(region.base + at * granule_bytes_, length * granule_bytes_, access); !ok(status)) {
      for (std::size_t g = first; g < at; g = g + region.unit_granules[g]) {
        // A unit the backing would not unmap is mapped memory nobody uses: free, and counted.
        if (!unmap_unit(region, g)) free_.insert(region.base + g * granule_bytes_, region.unit_granules[g] * granule_bytes_);
      }
      return status;
    }
    for (std::size_t g = at; g < at + length; ++g) {
      region.mapped[g] = true;
      region.unit_first[g] = static_cast<std::uint32_t>(at);
    }
    region.unit_granules[at] = static_cast<std::uint32_t>(length);
    if (!chunked()) stamp(region, region.base + at * granule_bytes_, region.base + (at + length) * granule_bytes_);
    reserved_bytes_ += length * granule_bytes_;
    done += length;
  }
  return Status::success;
}

std::size_t AddressSpace::unit_granules_for(std::size_t bytes) const noexcept {
  // A unit larger than a granule could later hold two allocations, and an importer of one would
  // map the other with it.
  if (exclusive_granules_) return 1;
  if (bytes >= kLargeUnitsFrom) return std::max<std::size_t>(1, kLargeUnit / granule_bytes_);
  if (bytes >= kUnitsFrom) return std::max<std::size_t>(1, kMediumUnit / granule_bytes_);
  return 1;
}

std::size_t AddressSpace::growth_bytes() const noexcept {
  if (reserved_bytes_ == 0) return kGrowthChunkBytes;
  if (exclusive_granules_) return granule_bytes_;
  return std::max(granule_bytes_, kMediumUnit);
}

bool AddressSpace::unmap_unit(Region& region, std::size_t first_granule) {
  const std::size_t length = region.unit_granules[first_granule];
  if (!ok(backing_.unmap(region.base + first_granule * granule_bytes_, length * granule_bytes_))) return false;
  for (std::size_t g = first_granule; g < first_granule + length; ++g) region.mapped[g] = false;
  reserved_bytes_ -= length * granule_bytes_;
  return true;
}

bool AddressSpace::any_mapped(const Region& region, std::uintptr_t from, std::size_t bytes) const {
  const std::size_t first = (from - region.base) / granule_bytes_;
  const std::size_t end = std::min(region.mapped.size(), first + bytes / granule_bytes_);
  for (std::size_t g = first; g < end; ++g) {
    if (region.mapped[g]) return true;
  }
  return false;
}

Status AddressSpace::grow_and_take(std::size_t bytes, std::span<const AccessDescriptor> access,
                                   const Usable& usable, std::uintptr_t* address) {
  const std::size_t cap_left =
      cap_bytes_ == 0 ? SIZE_MAX : (cap_bytes_ > reserved_bytes_ ? cap_bytes_ - reserved_bytes_ : 0);

  if (chunked()) {
    // A whole new chunk; at least the driver's 32 MiB where the cap allows.
    const std::size_t need = round_up(bytes + kPlacementBytes, granule_bytes_);
    if (need > cap_left) return Status::out_of_memory;
    std::size_t want = std::max(need, std::min(kGrowthChunkBytes, round_down(cap_left, granule_bytes_)));
    std::size_t index = 0;
    Status status = new_region(want, &index);
    if (status == Status::out_of_memory && want > need) status = new_region(want = need, &index);
    if (!ok(status)) return status;
    Region& region = regions_[index];
    if (Status mapped = map_range(region, region.base, region.bytes, access); !ok(mapped)) {
      (void)backing_.unreserve(region.base, region.bytes);  // a chunk backing's map never fails
      if (on_region_) on_region_(region.base, region.bytes, false);
      regions_.erase(regions_.begin() + static_cast<std::ptrdiff_t>(index));
      return mapped;
    }
    free_.insert(region.base, region.usable_bytes);
    free_.take(region.base, bytes);
    *address = region.base;
    return Status::success;
  }

  // A pool whose free ranges together are smaller than the request is filling up (a first
  // prefill, a pool warming): it maps growth_bytes() ahead. A growth that its free memory would
  // have covered is for fragmentation: it maps what it needs, so that fragmentation does not
  // map ahead.
  const bool filling = free_.free_bytes() < bytes;
  auto plan = plan_growth(bytes, usable);
  if (!plan) {
    if (round_up(bytes, granule_bytes_) > cap_left) return Status::out_of_memory;
    std::size_t index = 0;
    if (Status status = new_region(bytes, &index); !ok(status)) return status;
    plan = plan_growth(bytes, usable);
    if (!plan) return Status::out_of_memory;
  }
  if (plan->map_bytes > cap_left) return Status::out_of_memory;
  // Grow by growth_bytes() where there is room, so that small requests do not map granule by
  // granule (a map costs ~100 us); a larger request maps what it needs.
  const std::size_t ahead = filling ? growth_bytes() : granule_bytes_;
  std::size_t want = std::max(plan->map_bytes, std::min(ahead, plan->room_bytes));
  want = std::min(want, round_down(cap_left, granule_bytes_));
  Region& region = regions_[plan->region];
  // A growth of growth_bytes() is one unit; a request larger than it maps as before.
  // The first growth of a pool maps granule by granule (any granule can go back); once a release
  // gave memory back, a growth from nothing maps its chunk as one unit too: a program that
  // synchronises with threshold 0 (CUDA's default) unmaps and maps its working set every
  // iteration, and a mapping costs the same ~100 us for one granule as for 32 MiB
  // (tools/gpu/vmm_costs.cpp: 32 MiB as 16 granules 1,463 us, as one allocation 159 us).
  const bool first_growth = reserved_bytes_ == 0 && !given_back_;
  const std::size_t burst_unit =
      exclusive_granules_ || want != ahead || want >= kUnitsFrom || first_growth ? 0 : want / granule_bytes_;
  Status status = map_range(region, plan->map_from, want, access, burst_unit);
  // A smaller growth may fit where the larger one did not, unless undoing the larger one left a
  // unit mapped where the smaller one would go (it is free in the index now).
  if (status == Status::out_of_memory && want > plan->map_bytes && !any_mapped(region, plan->map_from, want)) {
    want = plan->map_bytes;
    status = map_range(region, plan->map_from, want, access);
  }
  if (!ok(status)) return status;
  // The allocation takes the free tail and the start of the new granules; the rest of them
  // enters the index on its own, so the tail's requirements do not spread over fresh memory.
  if (plan->start < plan->map_from) free_.take_span(plan->start, plan->map_from - plan->start);
  const std::uintptr_t allocation_end = plan->start + bytes;
  const std::uintptr_t mapped_end = plan->map_from + want;
  if (mapped_end > allocation_end) free_.insert(allocation_end, mapped_end - allocation_end);
  *address = plan->start;
  return Status::success;
}

std::size_t AddressSpace::release_to(std::size_t target_reserved_bytes, std::vector<Run>* released, Below below) {
  if (reserved_bytes_ <= target_reserved_bytes) return 0;
  const std::size_t before = reserved_bytes_;
  if (chunked()) {
    for (std::size_t r = regions_.size(); r-- > 0 && reserved_bytes_ > target_reserved_bytes;) {
      Region& region = regions_[r];
      auto range = free_.range_at(region.base);
      if (!range || !range->requirements.empty() || range->address != region.base ||
          range->bytes < region.usable_bytes ||
          (below == Below::kept && reserved_bytes_ - target_reserved_bytes < region.bytes)) {
        continue;
      }
      free_.take(region.base, region.usable_bytes);
      if (!ok(backing_.unmap(region.base, region.bytes)) || !ok(backing_.unreserve(region.base, region.bytes))) {
        free_.insert(region.base, region.usable_bytes);  // still allocated: kept, free, counted
        continue;
      }
      if (on_region_) on_region_(region.base, region.bytes, false);
      reserved_bytes_ -= region.bytes;
      regions_.erase(regions_.begin() + static_cast<std::ptrdiff_t>(r));
    }
    return before - reserved_bytes_;
  }
  // Runs of whole free granules, highest first: the low addresses stay mapped, where best
  // fit from the lowest address keeps the live blocks.
  struct GranuleRun {
    std::uintptr_t range_start, first, last;
  };
  std::vector<GranuleRun> runs;
  free_.for_each([&](const FreeRange& range) {
    if (!range.requirements.empty()) return;  // a free whose completion is not known yet
    const std::uintptr_t first = round_up(range.address, granule_bytes_);
    const std::uintptr_t last = round_down(range.address + range.bytes, granule_bytes_);
    if (last > first) runs.push_back(GranuleRun{range.address, first, last});
  });
  std::sort(runs.begin(), runs.end(), [](const GranuleRun& a, const GranuleRun& b) { return a.first > b.first; });
  // Whole mapping units only, highest first; a unit may take reserved below the target (the
  // driver's chunks do the same) where `below` allows it, granule units never do.
  for (auto run = runs.begin(); run != runs.end() && reserved_bytes_ > target_reserved_bytes; ++run) {
    Region* region = region_of(run->first);
    if (region == nullptr) continue;  // cannot happen: every free range lies in a region
    const std::size_t first = (run->first - region->base) / granule_bytes_;
    std::size_t end = (run->last - region->base) / granule_bytes_;
    const std::uintptr_t range_start = run->range_start;
    while (end > first && reserved_bytes_ > target_reserved_bytes) {
      const std::size_t unit = region->unit_first[end - 1];
      const std::size_t length = region->unit_granules[unit];
      const bool keeps_target = below == Below::allowed || reserved_bytes_ - target_reserved_bytes >= length * granule_bytes_;
      if (unit >= first && unit + length <= end && keeps_target) {
        const std::uintptr_t from = region->base + unit * granule_bytes_;
        free_.take_inside(range_start, from, length * granule_bytes_);
        if (unmap_unit(*region, unit)) {
          if (released != nullptr) released->push_back(Run{from, length * granule_bytes_});
        } else {
          free_.insert(from, length * granule_bytes_);  // still mapped: free again, counted, tried next time
        }
      }
      end = unit;
    }
  }
  if (reserved_bytes_ < before) given_back_ = true;
  return before - reserved_bytes_;
}

void AddressSpace::give(std::uintptr_t address, std::size_t bytes, const Requirements& requirements) {
  if (!chunked()) {
    if (Region* region = region_of(address)) stamp(*region, address, address + bytes);
  }
  free_.insert(address, bytes, requirements);
}

void AddressSpace::stamp(Region& region, std::uintptr_t from, std::uintptr_t to) noexcept {
  const std::uint32_t epoch = epoch_.load(std::memory_order_relaxed);
  const std::size_t first = (from - region.base) / granule_bytes_;
  const std::size_t end = std::min(region.last_used_epoch.size(), (to - region.base + granule_bytes_ - 1) / granule_bytes_);
  for (std::size_t g = first; g < end; ++g) region.last_used_epoch[g] = epoch;
}

std::vector<AddressSpace::UnusedUnit> AddressSpace::unused_units() const {
  std::vector<UnusedUnit> units;
  if (chunked()) return units;
  free_.for_each([&](const FreeRange& range) {
    if (!range.requirements.empty()) return;  // a free whose completion is not known yet
    const std::uintptr_t first_address = round_up(range.address, granule_bytes_);
    const std::uintptr_t last_address = round_down(range.address + range.bytes, granule_bytes_);
    if (last_address <= first_address) return;
    const Region* region = nullptr;
    for (const Region& candidate : regions_) {
      if (first_address >= candidate.base && first_address < candidate.base + candidate.bytes) region = &candidate;
    }
    if (region == nullptr) return;  // cannot happen: every free range lies in a region
    const std::size_t first = (first_address - region->base) / granule_bytes_;
    for (std::size_t end = (last_address - region->base) / granule_bytes_; end > first;) {
      const std::size_t unit = region->unit_first[end - 1];
      const std::size_t length = region->unit_granules[unit];
      if (unit >= first && unit + length <= end) {
        std::uint32_t last_used = 0;
        for (std::size_t g = unit; g < unit + length; ++g) last_used = std::max(last_used, region->last_used_epoch[g]);
        units.push_back(UnusedUnit{range.address, region->base + unit * granule_bytes_, length * granule_bytes_, last_used});
      }
      end = unit;
    }
  });
  return units;
}

std::size_t AddressSpace::release_units(std::vector<UnusedUnit> units) {
  // Highest first: what is left of each free range then still starts at its range_start.
  std::sort(units.begin(), units.end(), [](const UnusedUnit& a, const UnusedUnit& b) { return a.address > b.address; });
  const std::size_t before = reserved_bytes_;
  for (const UnusedUnit& unit : units) {
    Region* region = region_of(unit.address);
    if (region == nullptr) continue;
    free_.take_inside(unit.range_start, unit.address, unit.bytes);
    if (!unmap_unit(*region, (unit.address - region->base) / granule_bytes_)) {
      free_.insert(unit.address, unit.bytes);  // still mapped: free again, counted, tried next time
    }
  }
  return before - reserved_bytes_;
}

void AddressSpace::restore(const std::vector<Run>& released, std::span<const AccessDescriptor> access) {
  for (const Run& run : released) {
    Region* region = region_of(run.address);
    if (region == nullptr || !ok(map_range(*region, run.address, run.bytes, access))) continue;
    free_.insert(run.address, run.bytes);
  }
}

Status AddressSpace::set_access(std::span<const AccessDescriptor> access) {
  for (const Region& region : regions_) {
    for (std::size_t g = 0; g < region.mapped.size();) {
      if (!region.mapped[g]) {
        ++g;
        continue;
      }
      std::size_t end = g;
      while (end < region.mapped.size() && region.mapped[end]) ++end;
      const std::size_t bytes = chunked() ? region.bytes : (end - g) * granule_bytes_;
      if (Status status = backing_.set_access(region.base + g * granule_bytes_, bytes, access); !ok(status)) {
        return status;
      }
      g = end;
    }
  }
  return Status::success;
}

}  // namespace streampool::core
