// Pool: the end of its life. A destroyed pool keeps what is still allocated, gives back the rest
// as soon as its frees are known complete, and tells its caller, exactly once, when nothing of it
// is left to serve: the engine then reclaims it (address reservations and host memory). See the
// counting protocol in pool.hpp.
#include "pool.hpp"

namespace streampool::core {

bool Pool::destroy() {
  std::lock_guard guard(mutex_);
  // First the flag, then each share's lock: a free that takes a share's lock after the fold
  // sees the flag and counts itself off here instead of on the share.
  destroyed_.store(true, std::memory_order_release);
  for (auto& share : all_shares_) {
    std::lock_guard share_guard(share->lock);
    outstanding_ += share->outstanding;
    share->outstanding = 0;
  }
  release_idle_locked();
  return drained_locked();
}

bool Pool::finish_free(const PoolStream& owner, const std::optional<CachedFree>& evicted) {
  std::lock_guard guard(mutex_);
  if (evicted) space_.give(evicted->address, evicted->bytes, requirements_of(owner, *evicted));
  --outstanding_;
  if (!destroyed()) return false;
  release_idle_locked();
  return drained_locked();
}

bool Pool::finish_completed_free(std::uintptr_t address, std::size_t placed) {
  std::lock_guard guard(mutex_);
  space_.give(address, placed);
  --outstanding_;
  if (!destroyed()) return false;
  release_idle_locked();
  return drained_locked();
}

bool Pool::release_destroyed() {
  // Nothing mapped: no synchronisation can change what this pool holds (its last free, when it
  // comes, finds it drained itself).
  if (reserved_now_.load(std::memory_order_acquire) == 0) return false;
  std::lock_guard guard(mutex_);
  release_idle_locked();
  return drained_locked();
}

// Everything free and known complete goes back; what is still allocated or pending stays until
// it is freed.
void Pool::release_idle_locked() {
  flush_caches_locked();
  settle_locked();
  space_.release_to(0);
  note_reserved_locked();
}

bool Pool::drained_locked() {
  if (drained_ || !destroyed() || outstanding_ != 0 || space_.reserved_bytes() != 0) return false;
  drained_ = true;
  return true;
}

}  // namespace streampool::core
