// UsageCounter: a pool's used-bytes statistic and its high watermark, exact, without one
// counter that every stream's fast path writes.
//
// Each stream of a pool has a shard with its own used bytes and a quota: headroom below the
// high watermark that it may consume without asking anyone. The invariant, at every
// quiescent point, is
//     high == sum(shard.used) + sum(shard.quota) + spare.
// An allocation within its shard's quota moves quota to used; a free moves used back to
// quota. Both happen under the lock the stream's fast path already holds, as plain loads and
// stores. Only an allocation that exceeds its quota takes the counter's mutex, pulls every
// shard's quota into `spare` (taking each shard's lock in turn), and, if that is still not
// enough, raises `high` by exactly the shortfall: `high` is always the true maximum of the
// sum. Resetting the high watermark reclaims all quotas and lowers `high` to the current sum.
// A shard's used may go negative (allocated on one stream, freed on another); only the sum
// means anything. Lock order: the counter's mutex, then a shard's lock.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "spin_lock.hpp"

namespace streampool::core {

struct alignas(64) UsageShard {  // its own cache line: streams on other cores write theirs
  explicit UsageShard(SpinLock& owner_lock) : lock(owner_lock) {}
  SpinLock& lock;                    // guards quota, and every write of used
  std::atomic<std::int64_t> used{0}; // written under `lock`, read by anyone
  std::uint64_t quota = 0;
};

class UsageCounter {
 public:
  UsageShard* new_shard(SpinLock& owner_lock);

  // Under the shard's lock. False when the quota does not cover it: then call charge_slow
  // after releasing the lock.
  static bool try_charge(UsageShard& shard, std::uint64_t bytes) noexcept {
    if (shard.quota < bytes) return false;
    shard.quota -= bytes;
    shard.used.store(shard.used.load(std::memory_order_relaxed) + static_cast<std::int64_t>(bytes),
                     std::memory_order_relaxed);
    return true;
  }
  // Under the shard's lock.
  static void credit(UsageShard& shard, std::uint64_t bytes) noexcept {
    shard.quota += bytes;
    shard.used.store(shard.used.load(std::memory_order_relaxed) - static_cast<std::int64_t>(bytes),
                     std::memory_order_relaxed);
  }
  // Not holding the shard's lock.
  void charge_slow(UsageShard& shard, std::uint64_t bytes);
  void credit_locking(UsageShard& shard, std::uint64_t bytes);

  std::uint64_t used() const;
  std::uint64_t high() const;
  void reset_high();

 private:
  std::uint64_t reclaim_locked();

  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<UsageShard>> shards_;
  std::uint64_t high_ = 0;
  std::uint64_t spare_ = 0;
};

}  // namespace streampool::core
