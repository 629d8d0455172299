#include "usage_counter.hpp"

namespace streampool::core {

UsageShard* UsageCounter::new_shard(SpinLock& owner_lock) {
  std::lock_guard guard(mutex_);
  shards_.push_back(std::make_unique<UsageShard>(owner_lock));
  return shards_.back().get();
}

std::uint64_t UsageCounter::reclaim_locked() {
  for (auto& shard : shards_) {
    std::lock_guard shard_guard(shard->lock);
    spare_ += shard->quota;
    shard->quota = 0;
  }
  return spare_;
}

void UsageCounter::charge_slow(UsageShard& shard, std::uint64_t bytes) {
  std::lock_guard guard(mutex_);
  reclaim_locked();
  if (spare_ >= bytes) {
    spare_ -= bytes;
  } else {
    high_ += bytes - spare_;
    spare_ = 0;
  }
  std::lock_guard shard_guard(shard.lock);
  shard.used.store(shard.used.load(std::memory_order_relaxed) + static_cast<std::int64_t>(bytes),
                   std::memory_order_relaxed);
}

void UsageCounter::credit_locking(UsageShard& shard, std::uint64_t bytes) {
  std::lock_guard shard_guard(shard.lock);
  credit(shard, bytes);
}

std::uint64_t UsageCounter::used() const {
  std::lock_guard guard(mutex_);
  std::int64_t sum = 0;
  for (const auto& shard : shards_) sum += shard->used.load(std::memory_order_relaxed);
  return sum < 0 ? 0 : static_cast<std::uint64_t>(sum);
}

std::uint64_t UsageCounter::high() const {
  std::lock_guard guard(mutex_);
  return high_;
}

void UsageCounter::reset_high() {
  std::lock_guard guard(mutex_);
  high_ -= reclaim_locked();
  spare_ = 0;
}

}  // namespace streampool::core
