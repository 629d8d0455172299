#include "happens_before.hpp"

#include <algorithm>

namespace streampool::core {

void merge_into(Clock& into, const Clock& from) {
  if (into.size() < from.size()) into.resize(from.size(), 0);
  for (std::size_t i = 0; i < from.size(); ++i) into[i] = std::max(into[i], from[i]);
}

void HappensBefore::raise(Clock& clock, std::uint32_t slot, std::uint64_t tick) {
  if (clock.size() <= slot) clock.resize(slot + 1, 0);
  clock[slot] = std::max(clock[slot], tick);
}

std::uint64_t HappensBefore::at(const Clock& clock, std::uint32_t slot) {
  return slot < clock.size() ? clock[slot] : 0;
}

HappensBefore::HappensBefore(Ordering& ordering) : ordering_(ordering), partners_(ordering.implicit_partners()) {}

HappensBefore::~HappensBefore() {
  for (auto& stream : all_) {
    if (stream->marker) ordering_.recycle(stream->marker->marker);
  }
  advance_stream_generation();
}

StreamState* HappensBefore::stream(StreamKey key) {
  std::lock_guard guard(mutex_);
  return stream_locked(key);
}

StreamState* HappensBefore::stream_locked(StreamKey key) {
  if (auto it = live_.find(key); it != live_.end()) return it->second;
  StreamState* raw = reclaim_slot_locked();
  if (raw == nullptr) {
    auto state = std::make_unique<StreamState>();
    state->slot = static_cast<std::uint32_t>(all_.size());
    raw = state.get();
    all_.push_back(std::move(state));
  }
  raw->key = key;
  raw->kind = ordering_.stream_kind(key);
  raw->group = ordering_.stream_group(key);
  live_.emplace(key, raw);
  if (raw->kind == StreamKind::legacy_default) legacy_by_group_[raw->group] = raw;
  return raw;
}

// A slot whose stream is gone and whose every free is known complete serves the next stream, so
// that clocks and the per-slot state stay as large as the streams alive at once, however many
// come and go. The slot's ticks go on from where they were: the old stream's frees (tick <=
// final_tick) stay met by host_completed_, the new stream's start above every tick handed out.
// Clock entries for the slot elsewhere name old ticks only, all complete. The slot's shares of
// pools (their caches hold only completed frees) pass to the new stream with it.
StreamState* HappensBefore::reclaim_slot_locked() {
  for (auto it = ended_.begin(); it != ended_.end(); ++it) {
    StreamState* stream = *it;
    poll_marker_locked(stream);
    if (stream->marker || at(host_completed_, stream->slot) < stream->final_tick) continue;
    ended_.erase(it);
    stream->dead = false;
    stream->clock.clear();
    return stream;
  }
  return nullptr;
}

std::uint64_t HappensBefore::cut(StreamState* stream) {
  return stream->tick.fetch_add(1);  // seq_cst: see free_tick
}

// What work queued on `stream` so far is ordered after: its own frees up to a fresh cut and
// its explicit clock. Not the legacy stream's implicit order: that binds only work queued
// from now on, and a synchronisation or an event covers work already queued, whose
// submission time streampool does not see.
Clock HappensBefore::position_locked(StreamState* stream) {
  const std::uint64_t own = cut(stream);
  Clock clock = stream->clock;
  raise(clock, stream->slot, own);
  return clock;
}

// What work `stream` queues from now on is ordered after through the implicit synchronisation
// of the legacy default stream with the blocking streams of its group alone (one level:
// transitive order through the legacy stream is only known where its own clock records it).
// Nothing in the stream waits for it yet: Pool turns what it relies on into a real wait.
Clock HappensBefore::implied_clock_locked(StreamState* stream) {
  Clock clock;
  if (stream->kind == StreamKind::blocking) {
    auto it = legacy_by_group_.find(stream->group);
    if (it != legacy_by_group_.end() && !it->second->dead) {
      StreamState* legacy = it->second;
      raise(clock, legacy->slot, cut(legacy));
      merge_into(clock, legacy->clock);
    }
  } else if (stream->kind == StreamKind::legacy_default) {
    for (auto& [key, other] : live_) {
      if (other->kind == StreamKind::blocking && other->group == stream->group) {
        raise(clock, other->slot, cut(other));
        merge_into(clock, other->clock);
      }
    }
  }
  return clock;
}

// The free publishes its tick in freed_at before it commits to it: a cut (ticket_for_stream) that
// hands the free's tick out reads freed_at after the cut, so it sees the free (all seq_cst). A
// cut in between sends the free round again with the next tick.
std::uint64_t HappensBefore::free_tick(StreamState* stream) noexcept {
  for (;;) {
    const std::uint64_t tick = stream->tick.load();
    std::uint64_t noted = stream->freed_at.load();
    if (noted < tick && !stream->freed_at.compare_exchange_weak(noted, tick)) continue;
    if (stream->tick.load() == tick) return tick;
  }
}

// Whether a free on `stream` may be ordered after other streams' work by the legacy stream's
// implicit synchronisation: the legacy stream and every blocking stream have partners that may run
// work streampool never sees (a kernel on the legacy stream, a blocking stream created and used
// with no allocation on it).
bool HappensBefore::implicitly_ordered(const StreamState* stream) {
  return stream->kind != StreamKind::non_blocking;
}

std::unique_lock<std::mutex> HappensBefore::lock_event(EventKey event) {
  // Event handles are pointers: drop the low bits, which are the same for every handle.
  return std::unique_lock<std::mutex>(event_locks_[(event >> 4) % kEventLocks]);
}

Clock HappensBefore::record_position(StreamKey key) {
  std::lock_guard guard(mutex_);
  return position_locked(stream_locked(key));
}

void HappensBefore::event_recorded(EventKey event, Clock position) {
  std::lock_guard guard(mutex_);
  EventState& state = events_[event];
  ++state.sequence;
  if (!state.untracked) state.clock = std::move(position);
}

void HappensBefore::stream_waited(StreamKey waiter, EventKey event) {
  std::lock_guard guard(mutex_);
  auto it = events_.find(event);
  if (it == events_.end() || it->second.untracked) return;  // never recorded: CUDA makes the wait a no-op
  merge_into(stream_locked(waiter)->clock, it->second.clock);
}

void HappensBefore::event_untracked(EventKey event) {
  std::lock_guard guard(mutex_);
  EventState& state = events_[event];
  ++state.sequence;
  state.untracked = true;
  state.clock.clear();
}

void HappensBefore::event_forgotten(EventKey event) {
  std::lock_guard guard(mutex_);
  events_.erase(event);
}

EventSnapshot HappensBefore::snapshot_event(EventKey event) {
  std::lock_guard guard(mutex_);
  auto it = events_.find(event);
  if (it == events_.end()) return {};
  return EventSnapshot{it->second.clock, it->second.sequence};
}

bool HappensBefore::same_record(EventKey event, std::uint64_t sequence) {
  std::lock_guard guard(mutex_);
  auto it = events_.find(event);
  return it != events_.end() && !it->second.untracked && it->second.sequence == sequence;
}

void HappensBefore::stream_destroyed(StreamKey key) {
  std::lock_guard guard(mutex_);
  auto it = live_.find(key);
  if (it == live_.end()) return;
  end_stream_locked(it->second, /*record_marker=*/true);
}

void HappensBefore::stream_ended(StreamKey key) {
  std::lock_guard guard(mutex_);
  auto it = live_.find(key);
  if (it == live_.end()) return;
  end_stream_locked(it->second, /*record_marker=*/false);  // the old stream is gone already
}

void HappensBefore::end_stream_locked(StreamState* stream, bool record_marker) {
  // The stream's pending frees can only become known-complete through a marker recorded now.
  poll_marker_locked(stream);
  drop_marker_locked(stream);
  // Its last free's tick, not the tick frees would carry now: a ticket cut just before the end
  // (a context's end takes one, then ends the context's streams) covers every free made, but has
  // already moved the tick past them; waiting for that tick would keep the slot forever.
  stream->final_tick = stream->freed_at.load();
  if (record_marker) record_marker_locked(stream);
  stream->dead = true;
  ended_.push_back(stream);
  live_.erase(stream->key);
  if (auto legacy = legacy_by_group_.find(stream->group);
      legacy != legacy_by_group_.end() && legacy->second == stream) {
    legacy_by_group_.erase(legacy);
  }
  advance_stream_generation();
}

Clock HappensBefore::ticket_for_stream(StreamKey key, bool synchronize) {
  std::lock_guard guard(mutex_);
  StreamState* stream = stream_locked(key);
  Clock clock = position_locked(stream);
  if (stream->freed_at.load() <= stream->anchored.load() || !implicitly_ordered(stream)) return clock;
  // A query of a blocking stream records one too, and is answered not ready while it is
  // (marker_pending): the driver would answer CUDA_SUCCESS while a legacy kernel that the stream's
  // frees follow still runs, and the program would take the allocations it made from those frees
  // as complete (NVIDIA's frees and allocations are stream operations the implicit order binds).
  // The driver's query of the legacy stream covers the blocking streams' work already (measured
  // on driver 580: bench/results/2026-12-03-growth-unit/).
  if (synchronize || stream->kind == StreamKind::blocking) {
    poll_marker_locked(stream);
    if (record_marker_locked(stream)) return clock;  // the marker follows every free the clock covers
  }
  clock[stream->slot] = stream->anchored.load();
  return clock;
}

bool HappensBefore::marker_pending(StreamKey key) {
  std::lock_guard guard(mutex_);
  auto it = live_.find(key);
  if (it == live_.end() || it->second->kind != StreamKind::blocking) return false;
  poll_marker_locked(it->second);
  return it->second->marker.has_value();
}

Clock HappensBefore::ticket_for_group(std::optional<std::uintptr_t> group) {
  std::lock_guard guard(mutex_);
  Clock clock;
  for (auto& stream : all_) {
    if (group && stream->group != *group) continue;
    raise(clock, stream->slot, cut(stream.get()));
    merge_into(clock, stream->clock);
  }
  return clock;
}

void HappensBefore::commit_host_completion(const Clock& completed) {
  std::lock_guard guard(mutex_);
  merge_into(host_completed_, completed);
  completion_version_.fetch_add(1, std::memory_order_acq_rel);
}

std::size_t HappensBefore::slot_count() const {
  std::lock_guard guard(mutex_);
  return all_.size();
}

std::size_t HappensBefore::tracked_events() const {
  std::lock_guard guard(mutex_);
  return events_.size();
}

StreamState* HappensBefore::by_slot(std::uint32_t slot) const {
  std::lock_guard guard(mutex_);
  return slot < all_.size() ? all_[slot].get() : nullptr;
}

bool HappensBefore::slot_owner(std::uint32_t slot, StreamKey* key, bool* dead) const {
  std::lock_guard guard(mutex_);
  if (slot >= all_.size() || all_[slot] == nullptr) return false;
  *key = all_[slot]->key;
  *dead = all_[slot]->dead;
  return true;
}

Clock HappensBefore::completed(bool opportunistic) const {
  std::lock_guard guard(mutex_);
  Clock clock = host_completed_;
  if (opportunistic) merge_into(clock, gpu_completed_);
  return clock;
}

ReuseBounds HappensBefore::reuse_bounds(StreamState* stream, bool follow_events, bool opportunistic) {
  std::lock_guard guard(mutex_);
  // Outstanding markers answer now; a destroyed stream's always counts (see poll_marker_locked).
  for (auto& other : all_) {
    if (other->marker && (opportunistic || other->dead)) poll_marker_locked(other.get());
  }
  ReuseBounds bounds;
  bounds.proven = host_completed_;
  if (opportunistic) merge_into(bounds.proven, gpu_completed_);
  if (follow_events) {
    bounds.implied = implied_clock_locked(stream);
    // Strict reuse: an order the program's own waits made still gets a wait of streampool's.
    merge_into(strict_reuse_.load(std::memory_order_relaxed) ? bounds.implied : bounds.proven, stream->clock);
  }
  return bounds;
}

void HappensBefore::poll_marker_locked(StreamState* stream) {
  if (!stream->marker) return;
  if (ordering_.query(stream->marker->marker) != Status::success) return;
  const Clock& covers = stream->marker->covers;
  merge_into(gpu_completed_, covers);
  // A destroyed stream can gain no other ordering: its own frees count as host-known.
  if (stream->dead) raise(host_completed_, stream->slot, at(covers, stream->slot));
  completion_version_.fetch_add(1, std::memory_order_acq_rel);
  drop_marker_locked(stream);
}

void HappensBefore::drop_marker_locked(StreamState* stream) {
  if (!stream->marker) return;
  ordering_.recycle(stream->marker->marker);
  stream->marker.reset();
}

// A stream holds one marker: a new one replaces (recycles) the one it had.
bool HappensBefore::record_marker_locked(StreamState* stream) {
  drop_marker_locked(stream);
  Clock covers = position_locked(stream);  // cut before the real record: it covers frees so far
  Marker marker = 0;
  if (ordering_.record(stream->key, &marker) != Status::success) return false;
  stream->anchored.store(std::max(stream->anchored.load(), at(covers, stream->slot)), std::memory_order_release);
  stream->misses_since_marker = 0;
  stream->missed_bytes_since_marker = 0;
  stream->marker = StreamState::PendingMarker{marker, std::move(covers)};
  return true;
}

void HappensBefore::refresh_marker(StreamState* stream, std::uint64_t needed_tick) {
  std::lock_guard guard(mutex_);
  poll_marker_locked(stream);
  if (stream->marker || stream->dead) return;
  if (std::max(at(gpu_completed_, stream->slot), at(host_completed_, stream->slot)) >= needed_tick) return;
  record_marker_locked(stream);
}

bool HappensBefore::insert_dependency(StreamState* waiter, StreamState* freer, std::uint64_t needed_tick) {
  std::lock_guard guard(mutex_);
  return insert_dependency_locked(waiter, freer, needed_tick);
}

bool HappensBefore::insert_dependency_locked(StreamState* waiter, StreamState* freer, std::uint64_t needed_tick) {
  poll_marker_locked(freer);
  if (!freer->marker || at(freer->marker->covers, freer->slot) < needed_tick) {
    if (freer->dead) return false;  // its last marker is all there will ever be
    if (!record_marker_locked(freer)) return false;
  }
  if (ordering_.wait(waiter->key, freer->marker->marker) != Status::success) return false;
  merge_into(waiter->clock, freer->marker->covers);
  return true;
}

// Only the legacy stream's frees can leave such a debt on a blocking stream: a blocking stream's
// frees are implicitly ordered after the legacy stream's work alone, which any later work of the
// legacy stream (the only partner it could pass a block to) follows in its own order.
bool HappensBefore::order_free_after_allocation(StreamState* freer, StreamState* allocator) {
  std::lock_guard guard(mutex_);
  if (allocator->dead || allocator->kind != StreamKind::legacy_default || freer->kind != StreamKind::blocking ||
      allocator->group != freer->group) {
    return true;
  }
  const std::uint64_t freed = allocator->freed_at.load();
  if (freed <= allocator->anchored.load() ||
      std::max(at(host_completed_, allocator->slot), at(gpu_completed_, allocator->slot)) >= freed) {
    return true;  // every free of the legacy stream precedes a marker in it, or is known complete
  }
  return insert_dependency_locked(freer, allocator, freed);
}

std::uint64_t HappensBefore::anchor_own_frees(StreamState* legacy, Anchor mode, std::uint64_t bytes) {
  if (!implicit_partners_possible()) return UINT64_MAX;
  std::lock_guard guard(mutex_);
  const auto known = [&] {
    return std::max({legacy->anchored.load(), at(host_completed_, legacy->slot), at(gpu_completed_, legacy->slot)});
  };
  if (legacy->freed_at.load() <= known() || legacy->dead) return known();
  const bool batch_full = legacy->misses_since_marker >= kAnchorBatchMisses ||
                          legacy->missed_bytes_since_marker >= kAnchorBatchBytes;
  if (mode != Anchor::force && !batch_full) {
    if (mode == Anchor::miss) {
      ++legacy->misses_since_marker;
      legacy->missed_bytes_since_marker += bytes;
    }
    return known();
  }
  poll_marker_locked(legacy);
  record_marker_locked(legacy);  // on failure the frees after the last marker stay out of reach
  return known();
}

}  // namespace streampool::core
