#include "pool.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>

#include "sizes.hpp"

namespace streampool::core {

namespace {

constexpr int kAccessReadWrite = 3;  // CU_MEM_ACCESS_FLAGS_PROT_READWRITE

template <typename T>
T read_value(const void* value) {
  T out;
  std::memcpy(&out, value, sizeof out);
  return out;
}

template <typename T>
void write_value(void* value, T in) {
  std::memcpy(value, &in, sizeof in);
}

std::uint64_t at(const Clock& clock, std::uint32_t slot) { return slot < clock.size() ? clock[slot] : 0; }

}  // namespace

Pool::Pool(const PoolProps& props, std::unique_ptr<Backing> backing, HappensBefore& order,
           AddressSpace::RegionListener on_region)
    : props_(props),
      backing_(std::move(backing)),
      order_(order),
      space_(*backing_, props.max_size != 0 ? round_up(props.max_size, kGrowthChunkBytes) : 0,
             std::move(on_region), props.exclusive_granules),
      host_shard_(usage_.new_shard(host_shard_lock_)) {}

Pool::~Pool() = default;

PoolStream* Pool::stream_share(StreamState* stream) {
  std::lock_guard guard(mutex_);
  if (auto it = shares_.find(stream); it != shares_.end()) return it->second;
  all_shares_.push_back(std::make_unique<PoolStream>(stream));
  PoolStream* share = all_shares_.back().get();
  share->usage = usage_.new_shard(share->lock);
  shares_.emplace(stream, share);
  return share;
}

void Pool::note_reserved_locked() {
  reserved_high_ = std::max<std::uint64_t>(reserved_high_, space_.reserved_bytes());
  reserved_now_.store(space_.reserved_bytes(), std::memory_order_release);
}

Requirements Pool::requirements_of(const PoolStream& owner, const CachedFree& freed) {
  return freed.fresh ? Requirements{} : Requirements::of(owner.stream->slot, freed.tick);
}

void Pool::flush_caches_locked() {
  for (auto& share : all_shares_) {
    if (share->occupied.load(std::memory_order_relaxed) == 0) continue;  // a free racing this one stays cached
    std::lock_guard share_guard(share->lock);
    for (std::size_t i = 0; i < share->cache_count; ++i) {
      const CachedFree& freed = share->cache[i];
      space_.give(freed.address, freed.bytes, requirements_of(*share, freed));
    }
    share->clear();
  }
}

void Pool::settle_locked() {
  settled_version_ = order_.completion_version();  // before reading: a later change settles again
  const Clock completed = order_.completed(allow_opportunistic_.load(std::memory_order_relaxed) != 0);
  space_.free_index().settle([&](const Requirements& requirements) {
    return requirements.met_by([&](std::uint32_t slot) { return at(completed, slot); });
  });
}

std::vector<Requirement> Pool::blocking_requirements_locked(std::size_t placed) const {
  std::vector<Requirement> blocking;
  space_.free_index().for_each([&](const FreeRange& range) {
    if (range.bytes < placed) return;
    for (const Requirement& requirement : range.requirements) {
      auto it = std::find_if(blocking.begin(), blocking.end(),
                             [&](const Requirement& known) { return known.slot == requirement.slot; });
      if (it == blocking.end()) {
        blocking.push_back(requirement);
      } else if (requirement.tick > it->tick) {
        it->tick = requirement.tick;
      }
    }
  });
  return blocking;
}

// A stream that keeps asking the slow path for one small size gets a few more blocks of it in
// its cache, carved from memory anyone may use (the pattern of memory freed on another stream:
// each allocation would otherwise take the pool's lock). Only after a streak, so occasional
// requests keep the driver's placement; bounded, so little memory is held back; every slow
// path flushes the blocks back. Pushed highest first: the cache pops the lowest first.
void Pool::refill_cache_locked(PoolStream& requester, std::size_t placed) {
  // Blocks of whole granules would sit in the cache for sizes the fast path never asks for.
  if (props_.exclusive_granules) return;
  requester.slow_streak = requester.last_slow_bytes == placed ? requester.slow_streak + 1 : 1;
  requester.last_slow_bytes = placed;
  if (requester.slow_streak < kRefillStreak || placed > kRefillMaxBlockBytes) return;
  FreeIndex& index = space_.free_index();
  std::array<std::uintptr_t, PoolStream::kCacheEntries> carved{};
  std::size_t count = 0;
  for (std::size_t budget = kRefillBudgetBytes; budget >= placed && count < carved.size(); budget -= placed) {
    const auto fresh = index.best_fit(placed, [](const Requirements& requirements) { return requirements.empty(); });
    if (!fresh) break;
    index.take(fresh->address, placed);
    carved[count++] = fresh->address;
  }
  std::lock_guard own(requester.lock);
  while (count > 0) {
    const std::uintptr_t address = carved[--count];
    if (requester.cache_count == PoolStream::kCacheEntries) {
      space_.give(address, placed);  // the cache filled up meanwhile
    } else {
      requester.append(CachedFree{address, placed, 0, /*fresh=*/true});
    }
  }
}

// Best fit between the requester's own cache and the index ranges it may use; takes it.
Status Pool::reuse_or_grow_locked(PoolStream& requester, std::size_t placed, std::uintptr_t* address,
                                  bool follow, std::uint64_t own_bound) {
  const bool opportunistic = allow_opportunistic_.load(std::memory_order_relaxed) != 0;
  const std::uint32_t own_slot = requester.stream->slot;
  // What the requester knows of other streams is asked for only when a range needs it: a
  // stream that reuses its own frees never takes the tracker's lock.
  std::optional<ReuseBounds> bounds;
  const auto known = [&](std::uint32_t slot, bool with_implied) -> std::uint64_t {
    if (slot == own_slot) return own_bound;
    if (!bounds) bounds = order_.reuse_bounds(requester.stream, follow, opportunistic);
    const std::uint64_t proven = at(bounds->proven, slot);
    return with_implied ? std::max(proven, at(bounds->implied, slot)) : proven;
  };
  const auto proven = [&](const Requirements& requirements) {
    return requirements.met_by([&](std::uint32_t slot) { return known(slot, false); });
  };
  // Set when a range was accepted only through the implied order: only then can the chosen fit
  // need waits made real (order_implied_locked), and a stream reusing its own or proven frees
  // skips that walk.
  bool relied_on_implied = false;
  const auto reachable = [&](const Requirements& requirements) {
    if (proven(requirements)) return true;
    const bool implied = requirements.met_by([&](std::uint32_t slot) { return known(slot, true); });
    relied_on_implied |= implied;
    return implied;
  };
  FreeIndex& index = space_.free_index();

  // Every cache into the index first: best fit then sees all free memory, and a stream's
  // recent frees coalesce with their neighbours (the fast path only ever wanted exact sizes).
  // Frees that became known complete since the last look lose their requirements and coalesce.
  flush_caches_locked();
  if (order_.completion_version() != settled_version_) settle_locked();
  std::optional<FreeRange> fit = index.best_run(placed, reachable);
  if (fit && relied_on_implied && !order_implied_locked(requester, fit->address, placed, proven)) {
    fit = index.best_run(placed, proven);  // the implied order could not be made real
  }
  if (fit) {
    index.take_span(fit->address, placed);
    *address = fit->address;
    // Not for a requester whose own frees wait for a marker (the legacy stream's batches): fresh
    // blocks in its cache would serve it instead, and the batch would never fill.
    if (own_bound == UINT64_MAX) refill_cache_locked(requester, placed);
    return Status::success;
  }

  const Status status = space_.grow_and_take(placed, access_, proven, address);
  if (ok(status)) {
    note_reserved_locked();
    if (opportunistic) {
      // Markers on the streams whose frees would have fitted: the answer serves later requests.
      for (const Requirement& requirement : blocking_requirements_locked(placed)) {
        if (requirement.slot == own_slot) continue;
        if (StreamState* stream = order_.by_slot(requirement.slot)) order_.refresh_marker(stream, requirement.tick);
      }
    }
  }
  return status;
}

// The ranges from `address` that cover `placed` bytes may be reused by the requester, some only
// through an order nothing in its stream enforces yet (the legacy stream's implicit
// synchronisation; with strict reuse, any order short of known completion). Each such free
// becomes a real wait of the requester on a marker of the freeing stream, so that the stream's
// own completion (a query, a synchronize, an event) proves the memory free. False if a wait
// could not be made (the freeing stream cannot take a marker): the range is not usable then.
bool Pool::order_implied_locked(PoolStream& requester, std::uintptr_t address, std::size_t placed,
                                const std::function<bool(const Requirements&)>& proven) {
  const FreeIndex& index = space_.free_index();
  for (std::uintptr_t cursor = address; cursor < address + placed;) {
    const std::optional<FreeRange> range = index.range_at(cursor);
    if (!range) return false;
    if (!proven(range->requirements)) {
      for (const Requirement& requirement : range->requirements) {
        if (requirement.slot == requester.stream->slot) continue;
        StreamState* freer = order_.by_slot(requirement.slot);
        if (freer == nullptr || !order_.insert_dependency(requester.stream, freer, requirement.tick)) return false;
      }
    }
    cursor = range->address + range->bytes;
  }
  return true;
}

std::size_t Pool::slow_placement(std::size_t placed) const noexcept {
  return props_.exclusive_granules ? round_up(placed, space_.granule_bytes()) : placed;
}

Status Pool::allocate_slow(PoolStream& requester, std::size_t placed, std::uintptr_t* address,
                           std::uint64_t own_bound) {
  std::lock_guard guard(mutex_);
  const bool follow = follow_event_dependencies_.load(std::memory_order_relaxed) != 0;
  const bool internal = allow_internal_dependencies_.load(std::memory_order_relaxed) != 0;

  Status status = reuse_or_grow_locked(requester, placed, address, follow, own_bound);
  if (status == Status::out_of_memory && internal) {
    bool inserted = false;
    for (const Requirement& requirement : blocking_requirements_locked(placed)) {
      if (requirement.slot == requester.stream->slot) continue;
      if (StreamState* freer = order_.by_slot(requirement.slot)) {
        inserted |= order_.insert_dependency(requester.stream, freer, requirement.tick);
      }
    }
    // The waits are streampool's own: the order they create counts whatever FOLLOW says.
    if (inserted) status = reuse_or_grow_locked(requester, placed, address, /*follow=*/true, own_bound);
  }
  // Free granules may be what stands between the device and a contiguous mapping: give them
  // back and try once more; if that fails too, map them again, so the pool stays as it was.
  std::vector<AddressSpace::Run> released;
  if (status == Status::out_of_memory && !space_.chunked_backing() && space_.release_to(0, &released) != 0) {
    status = reuse_or_grow_locked(requester, placed, address, follow, own_bound);
    if (!ok(status)) space_.restore(released, access_);
    note_reserved_locked();
  }
  return status;
}

void Pool::apply_release_threshold() {
  const std::uint64_t threshold = destroyed() ? 0 : release_threshold_.load(std::memory_order_relaxed);
  if (reserved_now_.load(std::memory_order_acquire) <= threshold) return;
  std::lock_guard guard(mutex_);
  flush_caches_locked();
  settle_locked();
  space_.release_to(threshold);
  note_reserved_locked();
}

void Pool::at_synchronisation(const ReleasePolicy& policy, const ReleaseClock& clock, std::uint32_t epoch,
                              std::uint64_t now_ms) {
  const bool automatic = policy.mode == ReleasePolicy::Mode::automatic &&
                         !threshold_set_.load(std::memory_order_relaxed) && !space_.chunked_backing();
  if (!automatic) {
    apply_release_threshold();  // its flush stamps the caches' frees with the epoch that just ended
    space_.set_epoch(epoch);
    return;
  }
  if (reserved_now_.load(std::memory_order_acquire) == 0) {
    space_.set_epoch(epoch);
    return;
  }
  std::lock_guard guard(mutex_);
  std::vector<AddressSpace::UnusedUnit> units = unused_units_locked();  // stamps before the epoch moves on
  space_.set_epoch(epoch);
  std::erase_if(units, [&](const AddressSpace::UnusedUnit& unit) {
    const bool missed = unit.last_used_epoch < epoch && epoch - unit.last_used_epoch > policy.idle_synchronisations;
    return !missed || now_ms - std::min(now_ms, clock.ended_at(unit.last_used_epoch, now_ms)) < policy.idle_ms;
  });
  if (!units.empty()) {
    space_.release_units(std::move(units));
    note_reserved_locked();
  }
}

std::vector<AddressSpace::UnusedUnit> Pool::unused_units_locked() {
  flush_caches_locked();
  settle_locked();
  return space_.unused_units();
}

std::vector<Pool::UnusedMemory> Pool::unused_memory(const ReleaseClock& clock, std::uint64_t now_ms) {
  std::lock_guard guard(mutex_);
  std::vector<UnusedMemory> unused;
  for (const AddressSpace::UnusedUnit& unit : unused_units_locked()) {
    unused.push_back(UnusedMemory{clock.ended_at(unit.last_used_epoch, now_ms), unit.bytes});
  }
  return unused;
}

std::size_t Pool::release_unused(const ReleaseClock& clock, std::uint64_t now_ms, std::uint64_t idle_since_ms,
                                 std::size_t bytes) {
  std::lock_guard guard(mutex_);
  struct Candidate {
    std::uint64_t idle_since_ms;
    AddressSpace::UnusedUnit unit;
  };
  std::vector<Candidate> candidates;
  for (const AddressSpace::UnusedUnit& unit : unused_units_locked()) {
    const std::uint64_t since = clock.ended_at(unit.last_used_epoch, now_ms);
    if (since <= idle_since_ms) candidates.push_back(Candidate{since, unit});
  }
  // Most idle first; among equals the highest address (the low addresses keep the live blocks).
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    return a.idle_since_ms != b.idle_since_ms ? a.idle_since_ms < b.idle_since_ms : a.unit.address > b.unit.address;
  });
  std::vector<AddressSpace::UnusedUnit> chosen;
  std::size_t chosen_bytes = 0;
  for (const Candidate& candidate : candidates) {
    if (chosen_bytes >= bytes) break;
    chosen.push_back(candidate.unit);
    chosen_bytes += candidate.unit.bytes;
  }
  if (chosen.empty()) return 0;
  const std::size_t released = space_.release_units(std::move(chosen));
  note_reserved_locked();
  return released;
}

bool Pool::maps_device_memory(int device) const noexcept {
  return props_.kind == PoolKind::device && props_.location_type == 1 && props_.location_id == device &&
         !space_.chunked_backing();
}

Status Pool::trim_to(std::size_t min_bytes_to_keep) {
  std::lock_guard guard(mutex_);
  flush_caches_locked();
  settle_locked();
  space_.release_to(min_bytes_to_keep, nullptr, AddressSpace::Below::kept);
  note_reserved_locked();
  return Status::success;
}

PoolStats Pool::stats() const {
  PoolStats stats;
  {
    std::lock_guard guard(mutex_);
    stats.reserved_current = space_.reserved_bytes();
    stats.reserved_high = reserved_high_;
  }
  stats.used_current = usage_.used();
  stats.used_high = usage_.high();
  return stats;
}

// For the out-of-memory report: under the pool's mutex (and each cache's lock, as a flush takes
// them), after the request failed; nothing here is on an allocation's path.
FreeFigures Pool::free_figures() const {
  FreeFigures figures;
  const Clock completed = order_.completed(allow_opportunistic_.load(std::memory_order_relaxed) != 0);
  std::vector<PendingFrees> by_slot;  // indexed by slot while gathering
  const auto add = [&](std::size_t bytes, const Requirements& requirements) {
    figures.free_bytes += bytes;
    figures.largest_free = std::max<std::uint64_t>(figures.largest_free, bytes);
    for (const Requirement& requirement : requirements) {
      const std::uint64_t done = at(completed, requirement.slot);
      if (done >= requirement.tick) continue;
      if (by_slot.size() <= requirement.slot) by_slot.resize(requirement.slot + 1);
      PendingFrees& pending = by_slot[requirement.slot];
      pending.bytes += bytes;
      pending.largest_range = std::max<std::uint64_t>(pending.largest_range, bytes);
      pending.waits_for_tick = std::max(pending.waits_for_tick, requirement.tick);
      pending.completed_tick = done;
    }
  };
  {
    std::lock_guard guard(mutex_);
    space_.free_index().for_each([&](const FreeRange& range) { add(range.bytes, range.requirements); });
    for (const auto& share : all_shares_) {
      std::lock_guard share_guard(share->lock);
      for (std::size_t i = 0; i < share->cache_count; ++i) {
        add(share->cache[i].bytes, requirements_of(*share, share->cache[i]));
      }
    }
  }
  for (std::uint32_t slot = 0; slot < by_slot.size(); ++slot) {
    PendingFrees& pending = by_slot[slot];
    if (pending.bytes == 0) continue;
    StreamKey key = 0;
    bool dead = false;
    if (order_.slot_owner(slot, &key, &dead)) {
      pending.stream = key;
      pending.stream_ended = dead;
    }
    figures.pending.push_back(pending);
  }
  std::sort(figures.pending.begin(), figures.pending.end(),
            [](const PendingFrees& a, const PendingFrees& b) { return a.bytes > b.bytes; });
  return figures;
}

Status Pool::get_attribute(PoolAttribute attribute, void* value) const {
  switch (attribute) {
    case PoolAttribute::reuse_follow_event_dependencies:
      write_value<int>(value, follow_event_dependencies_.load());
      return Status::success;
    case PoolAttribute::reuse_allow_opportunistic:
      write_value<int>(value, allow_opportunistic_.load());
      return Status::success;
    case PoolAttribute::reuse_allow_internal_dependencies:
      write_value<int>(value, allow_internal_dependencies_.load());
      return Status::success;
    case PoolAttribute::release_threshold:
      write_value<std::uint64_t>(value, release_threshold_.load());
      return Status::success;
    case PoolAttribute::reserved_mem_current:
      write_value<std::uint64_t>(value, stats().reserved_current);
      return Status::success;
    case PoolAttribute::reserved_mem_high:
      write_value<std::uint64_t>(value, stats().reserved_high);
      return Status::success;
    case PoolAttribute::used_mem_current:
      write_value<std::uint64_t>(value, usage_.used());
      return Status::success;
    case PoolAttribute::used_mem_high:
      write_value<std::uint64_t>(value, usage_.high());
      return Status::success;
    case PoolAttribute::allocation_type:
      write_value<int>(value, props_.allocation_type);
      return Status::success;
    case PoolAttribute::export_handle_types:
      write_value<int>(value, static_cast<int>(props_.handle_types));
      return Status::success;
    case PoolAttribute::location_id:
      write_value<int>(value, props_.location_id);
      return Status::success;
    case PoolAttribute::location_type:
      write_value<int>(value, props_.location_type);
      return Status::success;
    case PoolAttribute::max_pool_size:
      write_value<std::uint64_t>(value, space_.cap_bytes());
      return Status::success;
    case PoolAttribute::hw_decompress_enabled:
      write_value<int>(value, props_.hw_decompress ? 1 : 0);
      return Status::success;
    case PoolAttribute::locality_domain_id:
      write_value<int>(value, props_.locality_domain_id);
      return Status::success;
  }
  return Status::invalid_value;
}

Status Pool::set_attribute(PoolAttribute attribute, const void* value) {
  switch (attribute) {
    case PoolAttribute::reuse_follow_event_dependencies:
      follow_event_dependencies_.store(read_value<int>(value) != 0 ? 1 : 0);
      return Status::success;
    case PoolAttribute::reuse_allow_opportunistic:
      allow_opportunistic_.store(read_value<int>(value) != 0 ? 1 : 0);
      return Status::success;
    case PoolAttribute::reuse_allow_internal_dependencies:
      allow_internal_dependencies_.store(read_value<int>(value) != 0 ? 1 : 0);
      return Status::success;
    case PoolAttribute::release_threshold:
      release_threshold_.store(read_value<std::uint64_t>(value));
      threshold_set_.store(true, std::memory_order_relaxed);
      return Status::success;
    case PoolAttribute::reserved_mem_high: {
      if (read_value<std::uint64_t>(value) != 0) return Status::invalid_value;
      std::lock_guard guard(mutex_);
      reserved_high_ = space_.reserved_bytes();
      return Status::success;
    }
    case PoolAttribute::used_mem_high:
      if (read_value<std::uint64_t>(value) != 0) return Status::invalid_value;
      usage_.reset_high();
      return Status::success;
    default:
      return Status::invalid_value;  // the current values and the pool's identity are read-only
  }
}

Status Pool::set_access(std::span<const AccessDescriptor> access) {
  std::lock_guard guard(mutex_);
  std::vector<AccessDescriptor> updated = access_;
  for (const AccessDescriptor& descriptor : access) {
    const bool owner = descriptor.location_type == props_.location_type &&
                       descriptor.location_id == props_.location_id;
    if (owner) continue;  // the owner always keeps read-write access
    auto it = std::find_if(updated.begin(), updated.end(), [&](const AccessDescriptor& existing) {
      return existing.location_type == descriptor.location_type && existing.location_id == descriptor.location_id;
    });
    if (it != updated.end()) {
      it->flags = descriptor.flags;
    } else {
      updated.push_back(descriptor);
    }
  }
  if (Status status = space_.set_access(updated); !ok(status)) return status;
  access_ = std::move(updated);
  return Status::success;
}

int Pool::access_flags(int location_type, int location_id) const {
  if (location_type == props_.location_type && location_id == props_.location_id) return kAccessReadWrite;
  std::lock_guard guard(mutex_);
  for (const AccessDescriptor& descriptor : access_) {
    if (descriptor.location_type == location_type && descriptor.location_id == location_id) return descriptor.flags;
  }
  return 0;
}

}  // namespace streampool::core
