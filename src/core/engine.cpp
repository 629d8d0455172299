#include "engine.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <mutex>
#include <optional>

#include "happens_before.hpp"
#include "live_table.hpp"
#include "pool.hpp"
#include "pool_table.hpp"
#include "registries.hpp"
#include "sizes.hpp"

namespace streampool::core {

class EngineState {
 public:
  explicit EngineState(Ordering& ordering) : order(ordering) {}

  PoolStream* share_for(Pool* pool, StreamKey key);
  PoolStream* share_for_slow(Pool* pool, StreamKey key, std::uint64_t generation);

  HappensBefore order;
  LiveTable live;
  HandleSet<65536> handles;  // up to 32768 pools at once (reclaimed pools' values are reused)
  RegionSet<4096> regions;
  ReleasePolicy release_policy;
  ReleaseClock release_clock;
  std::uint64_t now_ms() const {
    if (release_policy.clock_ms) return release_policy.clock_ms();
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                          std::chrono::steady_clock::now().time_since_epoch())
                                          .count());
  }
  PoolTable pools;  // declared last: destroyed first, while `regions` still hears of it
};

namespace {

// The last few (pool, stream) -> share lookups of this thread. Keyed by the stream
// generation, so a destroyed stream whose handle is reused never hits a stale share.
struct ShareCacheEntry {
  const EngineState* engine = nullptr;
  const Pool* pool = nullptr;
  StreamKey key = 0;
  std::uint64_t generation = 0;
  PoolStream* share = nullptr;
};
// initial-exec: the library is preloaded, and a dynamic TLS access would cost a call.
__attribute__((tls_model("initial-exec"))) thread_local ShareCacheEntry t_last_share{};
__attribute__((tls_model("initial-exec"))) thread_local std::array<ShareCacheEntry, 4> t_share_cache{};
__attribute__((tls_model("initial-exec"))) thread_local unsigned t_share_cache_next = 0;

}  // namespace

inline PoolStream* EngineState::share_for(Pool* pool, StreamKey key) {
  const std::uint64_t generation = stream_generation();
  if (t_last_share.pool == pool && t_last_share.key == key && t_last_share.engine == this &&
      t_last_share.generation == generation) {
    return t_last_share.share;
  }
  return share_for_slow(pool, key, generation);
}

PoolStream* EngineState::share_for_slow(Pool* pool, StreamKey key, std::uint64_t generation) {
  for (const ShareCacheEntry& entry : t_share_cache) {
    if (entry.pool == pool && entry.key == key && entry.engine == this && entry.generation == generation) {
      t_last_share = entry;
      return entry.share;
    }
  }
  PoolStream* share = pool->stream_share(order.stream(key));
  t_last_share = {this, pool, key, generation, share};
  t_share_cache[t_share_cache_next++ % t_share_cache.size()] = t_last_share;
  return share;
}

Engine::Engine(Ordering& ordering) : state_(std::make_unique<EngineState>(ordering)) {}

Engine::~Engine() {
  // Pools first: their address spaces hand memory back to their backings.
  state_->pools.clear();
}

Status Engine::create_pool(const PoolProps& props, std::unique_ptr<Backing> backing, Pool** pool) {
  if (pool == nullptr || backing == nullptr) return Status::invalid_value;
  EngineState* state = state_.get();
  *pool = state->pools.create(props, std::move(backing), state->order,
                              [state](std::uintptr_t base, std::size_t bytes, bool added) {
                                if (added) {
                                  state->regions.add(base, bytes);
                                } else {
                                  state->regions.remove(base);
                                }
                              });
  (*pool)->set_release_epoch(state->release_clock.current());
  state->handles.insert(*pool);
  return Status::success;
}

Status Engine::destroy_pool(Pool* pool) {
  if (!state_->handles.erase(pool)) return Status::invalid_value;
  // What is still allocated or pending stays until it is freed; the last of it reclaims the pool.
  if (pool->destroy()) state_->pools.reclaim(pool);
  return Status::success;
}

bool Engine::is_pool(const Pool* pool) const { return state_->handles.contains(pool); }

void Engine::for_each_pool(const std::function<void(Pool*)>& visit) const {
  state_->pools.for_each([&visit](Pool* pool) {
    if (!pool->destroyed()) visit(pool);
  });
}

const PoolProps& Engine::props(const Pool* pool) const { return pool->props(); }

// The fast path: an exact fit from the stream's own cache of recent frees, under the share's
// lock alone. Everything else is allocate_slow.
Status Engine::allocate(Pool* pool, std::size_t bytes, StreamKey stream, void** out) {
  if (out == nullptr) [[unlikely]] return Status::invalid_value;
  *out = nullptr;
  if (!is_pool(pool)) [[unlikely]] return Status::invalid_value;
  if (bytes == 0 || bytes > (std::size_t{1} << 62)) [[unlikely]] {
    return bytes == 0 ? Status::success : Status::out_of_memory;
  }
  const std::size_t placed = round_up(bytes, kPlacementBytes);
  PoolStream* share = state_->share_for(pool, stream);
  // The legacy stream, where a blocking stream may exist, reuses only frees a marker follows.
  if (share->legacy() && state_->order.implicit_partners_possible()) [[unlikely]] {
    return allocate_on_legacy(pool, *share, placed, bytes, out);
  }
  share->lock.lock();  // nothing below throws before the unlock
  const PoolStream::Taken taken = share->take_exact(placed);
  if (taken.address == 0) [[unlikely]] {
    share->lock.unlock();
    return allocate_slow(pool, *share, placed, bytes, out);
  }
  return hand_out_locked(pool, *share, taken.address, placed, bytes, out);
}

// The accounting of an allocation the share's lock (held: released here) found or the slow path made.
Status Engine::hand_out_locked(Pool* pool, PoolStream& share, std::uintptr_t address, std::size_t placed,
                               std::size_t bytes, void** out) {
  ++share.outstanding;
  const bool charged = UsageCounter::try_charge(*share.usage, bytes);
  share.lock.unlock();
  if (!charged) [[unlikely]] pool->usage().charge_slow(*share.usage, bytes);
  state_->live.insert(LiveBlock{address, placed, bytes, pool, share.stream});
  *out = reinterpret_cast<void*>(address);
  return Status::success;
}

// The legacy stream where a blocking stream may exist (HappensBefore::anchor_own_frees): an exact
// fit among its frees a marker already follows; else, once a batch of frees waits for one, a
// marker for them all and an exact fit among them; else the slow path, which takes other memory.
Status Engine::allocate_on_legacy(Pool* pool, PoolStream& share, std::size_t placed, std::size_t bytes, void** out) {
  const auto take_marked = [&](std::uint64_t bound) {
    share.lock.lock();
    const PoolStream::Taken taken = share.take_exact(placed, bound);
    if (taken.address == 0) share.lock.unlock();
    return taken.address;
  };
  const std::uint64_t marked = share.stream->anchored.load(std::memory_order_acquire);
  std::uintptr_t address = take_marked(marked);
  if (address == 0) {
    const std::uint64_t now_marked = state_->order.anchor_own_frees(share.stream, HappensBefore::Anchor::look);
    if (now_marked > marked) address = take_marked(now_marked);  // else nothing more in the cache is usable
  }
  if (address == 0) return allocate_slow(pool, share, placed, bytes, out);
  return hand_out_locked(pool, share, address, placed, bytes, out);  // the share's lock is held
}

// Everything but an exact hit in the stream's cache: the pool's index, growth, the other pools'
// unused memory; then the same accounting as the fast path.
Status Engine::allocate_slow(Pool* pool, PoolStream& share, std::size_t placed, std::size_t bytes, void** out) {
  placed = pool->slow_placement(placed);
  std::uintptr_t address = 0;
  // The legacy stream reuses only its frees that a marker follows (HappensBefore::anchor_own_frees);
  // where the pool can give nothing else, it marks the rest rather than fail.
  std::uint64_t own_bound =
      share.legacy() ? state_->order.anchor_own_frees(share.stream, HappensBefore::Anchor::miss, placed) : UINT64_MAX;
  Status status = pool->allocate_slow(share, placed, &address, own_bound);
  if (status == Status::out_of_memory && own_bound != UINT64_MAX) {
    const std::uint64_t forced = state_->order.anchor_own_frees(share.stream, HappensBefore::Anchor::force);
    if (forced > own_bound) {
      own_bound = forced;
      status = pool->allocate_slow(share, placed, &address, own_bound);
    }
  }
  // Other pools of the device may hold what this one cannot map: they give back their unused
  // memory, most idle first, and the request tries once more. (This pool's own free granules
  // were tried already, and are mapped again after a failure: the pool stays as it was.)
  if (status == Status::out_of_memory && pool->maps_device_memory(pool->props().location_id) &&
      release_unused_except(pool->props().location_id, placed, pool) != 0) {
    status = pool->allocate_slow(share, placed, &address, own_bound);
  }
  if (!ok(status)) return status;
  share.lock.lock();
  return hand_out_locked(pool, share, address, placed, bytes, out);
}

// The fast path: the block into the freeing stream's cache, under the share's lock alone. A
// cache entry pushed out, or a destroyed pool, has more to do (Pool::finish_free).
Status Engine::free(void* ptr, StreamKey stream) {
  const auto address = reinterpret_cast<std::uintptr_t>(ptr);
  const std::optional<LiveBlock> block = state_->live.erase(address);
  if (!block) [[unlikely]] return Status::invalid_value;
  Pool* pool = block->pool;
  PoolStream* share = state_->share_for(pool, stream);
  // Freed on another stream than it was allocated on: the memory may owe the allocating stream's
  // implicit order (HappensBefore::order_free_after_allocation); if that cannot be made real, the
  // free counts as the allocating stream's, whose later work the implicit order binds.
  if (block->allocated_on != share->stream && block->allocated_on != nullptr) [[unlikely]] {
    if (!state_->order.order_free_after_allocation(share->stream, block->allocated_on)) {
      share = pool->stream_share(block->allocated_on);
    }
  }
  const std::uint64_t tick = HappensBefore::free_tick(share->stream);
  share->lock.lock();  // nothing below throws before the unlock
  const std::optional<CachedFree> evicted = share->push(CachedFree{address, block->placed_bytes, tick});
  UsageCounter::credit(*share->usage, block->requested_bytes);
  // Counted off here, as this free's last touch of the pool, unless the pool has more to do for
  // it (see Pool::destroy): the pool may be reclaimed as soon as the count says drained.
  const bool pool_destroyed = pool->destroyed();
  if (!evicted && !pool_destroyed) [[likely]] {
    --share->outstanding;
    share->lock.unlock();
    return Status::success;
  }
  share->lock.unlock();
  if (pool->finish_free(*share, evicted)) state_->pools.reclaim(pool);
  return Status::success;
}

Status Engine::free_completed(void* ptr) {
  auto block = state_->live.erase(reinterpret_cast<std::uintptr_t>(ptr));
  if (!block) return Status::invalid_value;
  Pool* pool = block->pool;
  pool->usage().credit_locking(pool->host_shard(), block->requested_bytes);
  if (pool->finish_completed_free(block->address, block->placed_bytes)) state_->pools.reclaim(pool);
  return Status::success;
}

bool Engine::owns(const void* address) const {
  return state_->regions.contains(reinterpret_cast<std::uintptr_t>(address));
}

bool Engine::lookup(const void* address, BlockInfo* info) const {
  if (!owns(address)) return false;
  auto block = state_->live.find_containing(reinterpret_cast<std::uintptr_t>(address));
  if (!block) return false;
  if (info != nullptr) *info = BlockInfo{block->address, block->requested_bytes, block->placed_bytes, block->pool};
  return true;
}

Status Engine::trim_to(Pool* pool, std::size_t min_bytes_to_keep) {
  if (!is_pool(pool)) return Status::invalid_value;
  return pool->trim_to(min_bytes_to_keep);
}

Status Engine::get_attribute(Pool* pool, PoolAttribute attribute, void* value) const {
  if (!is_pool(pool) || value == nullptr) return Status::invalid_value;
  return pool->get_attribute(attribute, value);
}

Status Engine::set_attribute(Pool* pool, PoolAttribute attribute, const void* value) {
  if (!is_pool(pool) || value == nullptr) return Status::invalid_value;
  return pool->set_attribute(attribute, value);
}

PoolStats Engine::stats(const Pool* pool) const { return pool->stats(); }

FreeFigures Engine::free_figures(const Pool* pool) const {
  if (!is_pool(pool)) return {};
  return pool->free_figures();
}

std::vector<BlockInfo> Engine::largest_live(const Pool* pool, std::size_t count) const {
  std::vector<BlockInfo> largest;
  if (count == 0) return largest;
  largest.reserve(count + 1);
  const auto larger = [](const BlockInfo& a, const BlockInfo& b) {
    return a.requested_bytes != b.requested_bytes ? a.requested_bytes > b.requested_bytes : a.base < b.base;
  };
  state_->live.for_each([&](const LiveBlock& block) {
    if (pool != nullptr && block.pool != pool) return;
    const BlockInfo info{block.address, block.requested_bytes, block.placed_bytes, block.pool};
    if (largest.size() == count && !larger(info, largest.back())) return;
    largest.insert(std::upper_bound(largest.begin(), largest.end(), info, larger), info);
    if (largest.size() > count) largest.pop_back();
  });
  return largest;
}

Status Engine::set_access(Pool* pool, std::span<const AccessDescriptor> access) {
  if (!is_pool(pool)) return Status::invalid_value;
  return pool->set_access(access);
}

Status Engine::get_access(const Pool* pool, int location_type, int location_id, int* flags) const {
  if (!is_pool(pool) || flags == nullptr) return Status::invalid_value;
  *flags = pool->access_flags(location_type, location_id);
  return Status::success;
}

std::unique_lock<std::mutex> Engine::lock_event(EventKey event) { return state_->order.lock_event(event); }

std::vector<std::uint64_t> Engine::record_position(StreamKey stream) { return state_->order.record_position(stream); }

void Engine::event_recorded_at(EventKey event, std::vector<std::uint64_t> position) {
  state_->order.event_recorded(event, std::move(position));
}

void Engine::waited_on(StreamKey waiter, EventKey event) { state_->order.stream_waited(waiter, event); }

void Engine::mark_untracked(EventKey event) { state_->order.event_untracked(event); }

void Engine::event_untracked(EventKey event) {
  std::unique_lock<std::mutex> lock = lock_event(event);
  mark_untracked(event);
}

void Engine::event_created(EventKey event) {
  std::unique_lock<std::mutex> lock = lock_event(event);
  state_->order.event_forgotten(event);
}

void Engine::event_destroyed(EventKey event) {
  std::unique_lock<std::mutex> lock = lock_event(event);
  state_->order.event_forgotten(event);
}

SyncTicket Engine::ticket_for_stream(StreamKey stream, bool releases) {
  return SyncTicket{state_->order.ticket_for_stream(stream, /*synchronize=*/releases), releases, std::nullopt, 0};
}

bool Engine::marker_pending(StreamKey stream) { return state_->order.marker_pending(stream); }

SyncTicket Engine::ticket_for_event(EventKey event, bool releases) {
  std::unique_lock<std::mutex> lock = lock_event(event);
  EventSnapshot snapshot = state_->order.snapshot_event(event);
  return SyncTicket{std::move(snapshot.clock), releases, event, snapshot.sequence};
}

SyncTicket Engine::ticket_for_all(bool releases) {
  return SyncTicket{state_->order.ticket_for_group(std::nullopt), releases, std::nullopt, 0};
}

SyncTicket Engine::ticket_for_group(std::uintptr_t group, bool releases) {
  return SyncTicket{state_->order.ticket_for_group(group), releases, std::nullopt, 0};
}

void Engine::commit(const SyncTicket& ticket) {
  if (ticket.event) {
    std::unique_lock<std::mutex> lock = lock_event(*ticket.event);
    if (state_->order.same_record(*ticket.event, ticket.event_sequence)) {
      state_->order.commit_host_completion(ticket.clock);
    }
  } else {
    state_->order.commit_host_completion(ticket.clock);
  }
  if (!ticket.releases) return;
  // Destroyed pools too: what their last frees left goes back now, and a pool that this leaves
  // drained is reclaimed (after the walk: reclaiming needs the table to itself).
  EngineState& state = *state_;
  const std::uint64_t now = state.now_ms();
  const std::uint32_t epoch = state.release_clock.advance(now);
  std::vector<Pool*> drained;
  state.pools.for_each([&](Pool* pool) {
    if (!pool->destroyed()) {
      pool->at_synchronisation(state.release_policy, state.release_clock, epoch, now);
    } else if (pool->release_destroyed()) {
      drained.push_back(pool);
    }
  });
  for (Pool* pool : drained) state_->pools.reclaim(pool);
}

void Engine::stream_destroyed(StreamKey stream) { state_->order.stream_destroyed(stream); }

std::size_t Engine::stream_slots() const { return state_->order.slot_count(); }
std::size_t Engine::tracked_events() const { return state_->order.tracked_events(); }

void Engine::set_release_policy(ReleasePolicy policy) { state_->release_policy = std::move(policy); }

std::uint64_t Engine::release_unused(int device, std::uint64_t bytes) {
  return release_unused_except(device, bytes, nullptr);
}

std::uint64_t Engine::release_unused_except(int device, std::uint64_t bytes, const Pool* except) {
  EngineState& state = *state_;
  const auto serves = [&](const Pool* pool) {
    return pool != except && !pool->destroyed() && pool->maps_device_memory(device);
  };
  const std::uint64_t now = state.now_ms();
  // Which idleness gives `bytes`: the cut-off below which every pool gives back what it has.
  std::vector<Pool::UnusedMemory> unused;
  state.pools.for_each([&](Pool* pool) {
    if (!serves(pool)) return;
    for (const Pool::UnusedMemory& memory : pool->unused_memory(state.release_clock, now)) unused.push_back(memory);
  });
  std::sort(unused.begin(), unused.end(), [](const Pool::UnusedMemory& a, const Pool::UnusedMemory& b) {
    return a.idle_since_ms < b.idle_since_ms;
  });
  std::uint64_t idle_since = UINT64_MAX;
  std::uint64_t enough = 0;
  for (const Pool::UnusedMemory& memory : unused) {
    enough += memory.bytes;
    if (enough >= bytes) {
      idle_since = memory.idle_since_ms;
      break;
    }
  }
  // First everything idle for longer than the cut-off (less than `bytes` in all), then of what
  // became idle exactly at the cut-off what is still missing: what goes back is the device's most
  // idle memory whatever the order of the walk. The pools may have changed since the first walk:
  // each decides again under its lock.
  std::uint64_t released = 0;
  if (idle_since > 0) {
    state.pools.for_each([&](Pool* pool) {
      if (!serves(pool)) return;
      released += pool->release_unused(state.release_clock, now, idle_since - 1, SIZE_MAX);
    });
  }
  state.pools.for_each([&](Pool* pool) {
    if (released >= bytes || !serves(pool)) return;
    released += pool->release_unused(state.release_clock, now, idle_since, bytes - released);
  });
  return released;
}

void Engine::set_strict_reuse(bool strict) noexcept { state_->order.set_strict_reuse(strict); }

void Engine::stream_ended(StreamKey stream) { state_->order.stream_ended(stream); }

}  // namespace streampool::core
