// Pool: one stream-ordered memory pool: its properties and attributes, its address space,
// its per-stream free lists and its statistics, and the allocation policy that ties them.
//
// Allocation looks, in order, for memory that is provably safe for the requesting stream:
//   1. the stream's own frees (fast path, in Engine: exact size from the cache, best fit);
//   2. pool-wide free memory whose last use is known complete;
//   3. other streams' frees the requester is ordered after (FOLLOW_EVENT_DEPENDENCIES, the
//      legacy stream's implicit synchronisation), or whose completion the host observed, or
//      which streampool's own markers saw complete (ALLOW_OPPORTUNISTIC);
//   4. completed frees coalesced pool-wide, then growth (map granules, up to max size);
//   5. only when growth fails: inserted waits on other streams' markers
//      (ALLOW_INTERNAL_DEPENDENCIES), then giving back free granules and growing again.
// Growing before inserting a dependency is the driver's measured policy. A request that still
// fails leaves the pool and its statistics as they were.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "address_space.hpp"
#include "backing.hpp"
#include "happens_before.hpp"
#include "pool_props.hpp"
#include "pool_stream.hpp"
#include "usage_counter.hpp"

namespace streampool::core {

class Pool {
 public:
  Pool(const PoolProps& props, std::unique_ptr<Backing> backing, HappensBefore& order,
       AddressSpace::RegionListener on_region);
  ~Pool();

  const PoolProps& props() const noexcept { return props_; }
  bool destroyed() const noexcept { return destroyed_.load(std::memory_order_acquire); }
  void mark_destroyed() noexcept { destroyed_.store(true, std::memory_order_release); }

  // The PoolStream of a stream's live state (created on first use).
  PoolStream* stream_share(StreamState* stream);
  // Steps 2-5 above. `placed` is the request rounded to the placement unit.
  Status allocate_slow(PoolStream& requester, std::size_t placed, std::uintptr_t* address);
  // A free the host knows complete: straight into the pool-wide index.
  void give_completed(std::uintptr_t address, std::size_t placed);

  // Synchronisation point: completed frees move pool-wide and memory above the release
  // threshold goes back to the backing.
  void apply_release_threshold();
  Status trim_to(std::size_t min_bytes_to_keep);

  Status get_attribute(PoolAttribute attribute, void* value) const;
  Status set_attribute(PoolAttribute attribute, const void* value);
  PoolStats stats() const;
  Status set_access(std::span<const AccessDescriptor> access);
  int access_flags(int location_type, int location_id) const;

  UsageCounter& usage() noexcept { return usage_; }
  UsageShard* host_shard() noexcept { return host_shard_; }

 private:
  struct Candidate {
    PoolStream* source = nullptr;  // nullptr: the pool-wide index
    FreeRange range;
  };
  // Best fit among the pool-wide free memory and the frees of other streams that `bounds`
  // allows; takes it.
  bool take_reusable(PoolStream& requester, std::size_t placed, const Clock& bounds, Candidate* taken);
  void migrate_completed_locked(bool opportunistic);
  void request_markers_locked(PoolStream& requester);
  bool insert_dependencies_locked(PoolStream& requester);
  void note_reserved_locked();

  const PoolProps props_;
  std::unique_ptr<Backing> backing_;
  HappensBefore& order_;
  std::atomic<bool> destroyed_{false};

  std::atomic<int> follow_event_dependencies_{1};
  std::atomic<int> allow_opportunistic_{1};
  std::atomic<int> allow_internal_dependencies_{1};
  std::atomic<std::uint64_t> release_threshold_{0};

  mutable std::mutex mutex_;  // the slow path: address space, stream shares, access
  AddressSpace space_;
  std::unordered_map<StreamState*, PoolStream*> shares_;
  std::vector<std::unique_ptr<PoolStream>> all_shares_;  // live and dead streams' shares
  std::vector<AccessDescriptor> access_;
  std::uint64_t reserved_high_ = 0;
  std::atomic<std::uint64_t> reserved_now_{0};  // a mirror of space_.reserved_bytes() for lock-free checks

  UsageCounter usage_;
  UsageShard* host_shard_;
};

}  // namespace streampool::core
