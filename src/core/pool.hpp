// Pool: one stream-ordered memory pool: its properties and attributes, its address space,
// its per-stream free lists and its statistics, and the allocation policy that ties them.
//
// All free memory of a pool lives in one address-ordered index (coalesced across streams),
// each range tagged with the Requirements for reusing it; only a stream's most recent frees
// sit in its cache (pool_stream.hpp). Allocation takes, in order:
//   1. an exact fit from the stream's own cache (fast path, in Engine, no pool lock);
//   2. the best fit among its own cache and the index ranges it may use: its own frees, frees
//      it is ordered after (FOLLOW_EVENT_DEPENDENCIES; through the legacy stream's implicit
//      synchronisation only with a real wait inserted), frees the host saw complete, and frees
//      streampool's own markers saw complete (ALLOW_OPPORTUNISTIC);
//   3. the same after every cache is flushed and completed frees are coalesced;
//   4. growth (map granules after a usable free tail, up to max size);
//   5. only when growth fails: inserted waits on other streams' markers
//      (ALLOW_INTERNAL_DEPENDENCIES), then giving back free granules and growing again.
// Growing before inserting a dependency is the driver's measured policy. A request that still
// fails leaves the pool and its statistics as they were.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "address_space.hpp"
#include "backing.hpp"
#include "happens_before.hpp"
#include "pool_props.hpp"
#include "pool_stream.hpp"
#include "release_policy.hpp"
#include "usage_counter.hpp"

namespace streampool::core {

class Pool {
 public:
  Pool(const PoolProps& props, std::unique_ptr<Backing> backing, HappensBefore& order,
       AddressSpace::RegionListener on_region);
  ~Pool();

  const PoolProps& props() const noexcept { return props_; }
  bool destroyed() const noexcept { return destroyed_.load(std::memory_order_acquire); }

  // The PoolStream of a stream's live state (created on first use).
  PoolStream* stream_share(StreamState* stream);
  // What a request rounded to the placement unit takes on the slow path: itself, or in a pool of
  // exclusive granules (PoolProps::exclusive_granules) whole granules. The fast path needs no
  // such rounding: an exclusive pool's cache holds only whole-granule blocks, which an exact hit
  // of the 512-byte size can only find when the two sizes agree.
  std::size_t slow_placement(std::size_t placed) const noexcept;
  // Everything but an exact hit in the requester's cache. `placed` is the request rounded to
  // the placement unit (slow_placement). The requester's own frees are reused up to tick
  // `own_bound` only (HappensBefore::anchor_own_frees: the legacy stream's frees no marker follows).
  Status allocate_slow(PoolStream& requester, std::size_t placed, std::uintptr_t* address,
                       std::uint64_t own_bound = UINT64_MAX);

  // --- lifetime (pool_lifetime.cpp) ----------------------------------------------------------
  // A pool is drained when it is destroyed, no allocation of it is live or being freed, and all
  // its memory is known idle and given back: nothing can reach it any more, and its owner may
  // delete it. Each call below that returns true is the one that found it drained (exactly one
  // ever does); the caller must not touch the pool afterwards, but reclaim it.
  //
  // How a free is counted off without a pool-wide counter on the fast path: an allocation counts
  // itself on its share (PoolStream::outstanding, under the share's lock). A free counts itself
  // off on its share, under the share's lock, as its last touch of the pool, unless it still has
  // work for the pool (a cache eviction) or sees the pool destroyed: then it counts itself off in
  // finish_free, under the pool's mutex. destroy() marks the pool destroyed and then folds every
  // share's count into the pool's own under each share's lock, so each free is counted exactly
  // once, on its share before the fold or on the pool after it.
  bool destroy();
  // The end of a stream-ordered free that did not count itself off on its share: the evicted
  // cache entry (if any) into the index, the count, and for a destroyed pool what can be
  // released now.
  bool finish_free(const PoolStream& owner, const std::optional<CachedFree>& evicted);
  // A free the host knows complete (into the index for anyone), counted off.
  bool finish_completed_free(std::uintptr_t address, std::size_t placed);
  // A destroyed pool at a host synchronisation: what its frees left goes back now.
  bool release_destroyed();

  // Synchronisation point: memory above the release threshold whose frees are known complete
  // goes back to the backing.
  void apply_release_threshold();
  // A releasing host synchronisation that began release epoch `epoch` at `now_ms`: the
  // threshold, or for a pool whose threshold the program never set under the automatic policy,
  // the units idle by its rule go back.
  void at_synchronisation(const ReleasePolicy& policy, const ReleaseClock& clock, std::uint32_t epoch,
                          std::uint64_t now_ms);
  // The pool's stamps start from the engine's current epoch (a new pool).
  void set_release_epoch(std::uint32_t epoch) noexcept { space_.set_epoch(epoch); }
  // What the pool could give back now (whole units no live block, cached block or pending free
  // touches), as (idle since, in ms of the clock; bytes) pairs.
  struct UnusedMemory {
    std::uint64_t idle_since_ms;
    std::size_t bytes;
  };
  std::vector<UnusedMemory> unused_memory(const ReleaseClock& clock, std::uint64_t now_ms);
  // Gives back unused units idle since `idle_since_ms` or before, most idle first, until at least
  // `bytes` went back or none is left. Returns the bytes given back. Whatever the threshold.
  std::size_t release_unused(const ReleaseClock& clock, std::uint64_t now_ms, std::uint64_t idle_since_ms,
                             std::size_t bytes);
  // For the engine's release by device: a device-memory pool that maps by granule.
  bool maps_device_memory(int device) const noexcept;
  Status trim_to(std::size_t min_bytes_to_keep);

  Status get_attribute(PoolAttribute attribute, void* value) const;
  Status set_attribute(PoolAttribute attribute, const void* value);
  PoolStats stats() const;
  // The pool's free memory and the frees other streams wait on (Engine::free_figures).
  FreeFigures free_figures() const;
  Status set_access(std::span<const AccessDescriptor> access);
  int access_flags(int location_type, int location_id) const;

  UsageCounter& usage() noexcept { return usage_; }
  UsageShard& host_shard() noexcept { return *host_shard_; }

 private:
  Status reuse_or_grow_locked(PoolStream& requester, std::size_t placed, std::uintptr_t* address, bool follow,
                              std::uint64_t own_bound);
  bool order_implied_locked(PoolStream& requester, std::uintptr_t address, std::size_t placed,
                            const std::function<bool(const Requirements&)>& proven);
  void flush_caches_locked();
  void refill_cache_locked(PoolStream& requester, std::size_t placed);
  static Requirements requirements_of(const PoolStream& owner, const CachedFree& freed);
  static constexpr std::size_t kRefillStreak = 4;                 // slow paths of one size in a row
  static constexpr std::size_t kRefillMaxBlockBytes = 4u << 20;  // refill only small blocks
  static constexpr std::size_t kRefillBudgetBytes = 8u << 20;    // and at most this much at once
  void settle_locked();
  // Streams whose frees, if known complete or ordered, would give the requester a fit.
  std::vector<Requirement> blocking_requirements_locked(std::size_t placed) const;
  void note_reserved_locked();
  void release_idle_locked();
  std::vector<AddressSpace::UnusedUnit> unused_units_locked();
  bool drained_locked();

  const PoolProps props_;
  std::unique_ptr<Backing> backing_;
  HappensBefore& order_;
  std::atomic<bool> destroyed_{false};

  std::atomic<int> follow_event_dependencies_{1};
  std::atomic<int> allow_opportunistic_{1};
  std::atomic<int> allow_internal_dependencies_{1};
  std::atomic<std::uint64_t> release_threshold_{0};
  std::atomic<bool> threshold_set_{false};  // the program set RELEASE_THRESHOLD: CUDA's rule, always

  mutable std::mutex mutex_;  // the slow path: address space and its index, stream shares, access
  AddressSpace space_;
  std::unordered_map<StreamState*, PoolStream*> shares_;
  std::vector<std::unique_ptr<PoolStream>> all_shares_;  // live and dead streams' shares
  std::vector<AccessDescriptor> access_;
  std::uint64_t reserved_high_ = 0;
  std::uint64_t settled_version_ = 0;  // HappensBefore::completion_version() at the last settle
  std::atomic<std::uint64_t> reserved_now_{0};  // a mirror of space_.reserved_bytes() for lock-free checks
  std::int64_t outstanding_ = 0;  // the pool's part of the allocation count (see destroy())
  bool drained_ = false;          // found drained once: never again

  UsageCounter usage_;
  SpinLock host_shard_lock_;
  UsageShard* host_shard_;
};

}  // namespace streampool::core
