#include "pool.hpp"

#include <algorithm>
#include <cstring>

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
             std::move(on_region)),
      host_shard_(usage_.new_shard()) {}

Pool::~Pool() = default;

PoolStream* Pool::stream_share(StreamState* stream) {
  std::lock_guard guard(mutex_);
  if (auto it = shares_.find(stream); it != shares_.end()) return it->second;
  all_shares_.push_back(std::make_unique<PoolStream>(stream, usage_.new_shard()));
  PoolStream* share = all_shares_.back().get();
  shares_.emplace(stream, share);
  return share;
}

void Pool::note_reserved_locked() {
  reserved_high_ = std::max<std::uint64_t>(reserved_high_, space_.reserved_bytes());
  reserved_now_.store(space_.reserved_bytes(), std::memory_order_release);
}

bool Pool::take_reusable(PoolStream& requester, std::size_t placed, const Clock& bounds, Candidate* taken) {
  std::vector<Candidate> candidates;
  if (auto fit = space_.free_index().best_fit(placed)) candidates.push_back({nullptr, *fit});
  for (auto& share : all_shares_) {
    if (share.get() == &requester) continue;
    const std::uint64_t bound = at(bounds, share->stream->slot);
    if (bound == 0) continue;
    std::lock_guard share_guard(share->lock);
    if (!share->has_free()) continue;
    share->flush_cache();
    if (auto fit = share->pending.best_fit(placed, bound)) candidates.push_back({share.get(), *fit});
  }
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    return a.range.bytes != b.range.bytes ? a.range.bytes < b.range.bytes : a.range.address < b.range.address;
  });
  // A stream's own fast path may have taken a candidate since: check again under its lock.
  for (const Candidate& candidate : candidates) {
    if (candidate.source == nullptr) {
      space_.take_at(candidate.range.address, placed);
      *taken = candidate;
      return true;
    }
    std::lock_guard share_guard(candidate.source->lock);
    candidate.source->flush_cache();
    auto still = candidate.source->pending.range_containing(candidate.range.address);
    if (still && still->tick <= at(bounds, candidate.source->stream->slot) &&
        still->address + still->bytes >= candidate.range.address + placed) {
      candidate.source->pending.take(candidate.range.address, placed);
      *taken = candidate;
      return true;
    }
  }
  return false;
}

void Pool::migrate_completed_locked(bool opportunistic) {
  StreamState* any = all_shares_.empty() ? nullptr : all_shares_.front()->stream;
  if (any == nullptr) return;
  const Clock completed = order_.reuse_bounds(any, /*follow_events=*/false, opportunistic);
  std::vector<FreeRange> done;
  for (auto& share : all_shares_) {
    const std::uint64_t bound = at(completed, share->stream->slot);
    if (bound == 0) continue;
    std::lock_guard share_guard(share->lock);
    share->flush_cache();
    done.clear();
    share->pending.for_each([&](const FreeRange& range) {
      if (range.tick <= bound) done.push_back(range);
    });
    for (const FreeRange& range : done) share->pending.take_range_at(range.address);
    for (const FreeRange& range : done) space_.give(range.address, range.bytes);
  }
}

void Pool::request_markers_locked(PoolStream& requester) {
  for (auto& share : all_shares_) {
    if (share.get() == &requester) continue;
    std::uint64_t needed = 0;
    {
      std::lock_guard share_guard(share->lock);
      if (!share->has_free()) continue;
      needed = share->max_free_tick;
    }
    order_.refresh_marker(share->stream, needed);
  }
}

bool Pool::insert_dependencies_locked(PoolStream& requester) {
  bool inserted = false;
  for (auto& share : all_shares_) {
    if (share.get() == &requester) continue;
    std::uint64_t needed = 0;
    {
      std::lock_guard share_guard(share->lock);
      if (!share->has_free()) continue;
      needed = share->max_free_tick;
    }
    inserted |= order_.insert_dependency(requester.stream, share->stream, needed);
  }
  return inserted;
}

Status Pool::allocate_slow(PoolStream& requester, std::size_t placed, std::uintptr_t* address) {
  std::lock_guard guard(mutex_);
  const bool follow = follow_event_dependencies_.load(std::memory_order_relaxed) != 0;
  const bool opportunistic = allow_opportunistic_.load(std::memory_order_relaxed) != 0;
  const bool internal = allow_internal_dependencies_.load(std::memory_order_relaxed) != 0;

  auto reuse_or_grow = [&]() -> Status {
    {
      std::lock_guard own(requester.lock);  // another thread on this stream may have freed
      if (auto own_fit = requester.take_best_fit(placed)) {
        *address = *own_fit;
        return Status::success;
      }
    }
    const Clock bounds = order_.reuse_bounds(requester.stream, follow, opportunistic);
    Candidate taken;
    if (take_reusable(requester, placed, bounds, &taken)) {
      *address = taken.range.address;
      return Status::success;
    }
    migrate_completed_locked(opportunistic);
    if (auto merged = space_.take(placed)) {
      *address = *merged;
      return Status::success;
    }
    Status status = space_.grow_and_take(placed, access_, address);
    if (ok(status)) {
      note_reserved_locked();
      if (opportunistic) request_markers_locked(requester);  // answers come on later requests
    }
    return status;
  };

  Status status = reuse_or_grow();
  if (status == Status::out_of_memory && internal && insert_dependencies_locked(requester)) {
    status = reuse_or_grow();
  }
  // Free granules may be what stands between the device and a contiguous mapping: give them
  // back and try once more; if that fails too, map them again, so the pool stays as it was.
  std::vector<AddressSpace::Run> released;
  if (status == Status::out_of_memory && !space_.chunked_backing() && space_.release_to(0, &released) != 0) {
    status = reuse_or_grow();
    if (!ok(status)) space_.restore(released, access_);
    note_reserved_locked();
  }
  return status;
}

void Pool::give_completed(std::uintptr_t address, std::size_t placed) {
  std::lock_guard guard(mutex_);
  space_.give(address, placed);
}

void Pool::apply_release_threshold() {
  const std::uint64_t threshold = destroyed() ? 0 : release_threshold_.load(std::memory_order_relaxed);
  if (reserved_now_.load(std::memory_order_acquire) <= threshold) return;
  std::lock_guard guard(mutex_);
  migrate_completed_locked(allow_opportunistic_.load(std::memory_order_relaxed) != 0);
  space_.release_to(threshold);
  note_reserved_locked();
}

Status Pool::trim_to(std::size_t min_bytes_to_keep) {
  std::lock_guard guard(mutex_);
  migrate_completed_locked(allow_opportunistic_.load(std::memory_order_relaxed) != 0);
  space_.release_to(min_bytes_to_keep);
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
