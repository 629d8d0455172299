// UsageCounter: a pool's used-bytes statistic and its high watermark, exact, without one
// counter that every stream's fast path writes.
//
// Each stream of a pool has a shard with its own used bytes and a quota: headroom below the
// high watermark that it may consume without asking anyone. The invariant, at every
// quiescent point, is
//     high == sum(shard.used) + sum(shard.quota) + spare.
// An allocation within its shard's quota just moves quota to used (one uncontended CAS); a
// free moves used back to quota. Only an allocation that exceeds its quota takes the mutex,
// pulls every shard's quota into `spare`, and, if that is still not enough, raises `high` by
// exactly the shortfall, so `high` is always the true maximum of the sum. Resetting the high
// watermark reclaims all quotas and lowers `high` to the current sum. A shard's used may go
// negative (allocated on one stream, freed on another); only the sum means anything.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace streampool::core {

struct alignas(64) UsageShard {
  std::atomic<std::int64_t> used{0};
  std::atomic<std::uint64_t> quota{0};
};

class UsageCounter {
 public:
  UsageShard* new_shard();
  void charge(UsageShard& shard, std::uint64_t bytes) {
    std::uint64_t quota = shard.quota.load(std::memory_order_relaxed);
    while (quota >= bytes) {
      if (shard.quota.compare_exchange_weak(quota, quota - bytes, std::memory_order_acq_rel)) {
        shard.used.fetch_add(static_cast<std::int64_t>(bytes), std::memory_order_relaxed);
        return;
      }
    }
    charge_slow(shard, bytes);
  }
  void credit(UsageShard& shard, std::uint64_t bytes) {
    shard.used.fetch_sub(static_cast<std::int64_t>(bytes), std::memory_order_relaxed);
    shard.quota.fetch_add(bytes, std::memory_order_acq_rel);
  }
  std::uint64_t used() const;
  std::uint64_t high() const;
  void reset_high();

 private:
  void charge_slow(UsageShard& shard, std::uint64_t bytes);
  std::uint64_t reclaim_locked();

  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<UsageShard>> shards_;
  std::uint64_t high_ = 0;
  std::uint64_t spare_ = 0;
};

}  // namespace streampool::core
