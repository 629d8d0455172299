// PoolStream: one stream's share of one pool, the home of the same-stream fast path.
//
// Memory freed on a stream belongs to that stream until something proves another stream may
// have it (the driver's rule: "a freed block belongs to the freeing stream"). Stream order
// alone makes it reusable on the same stream at once, so the fast path needs no event and no
// lock but this stream's own:
//   free      push (address, bytes, tick) on a small cache of recent frees;
//   allocate  pop an exact-size entry from the cache.
// Everything else goes to the pool's index under the pool's mutex (pool.hpp): a cache entry
// pushed out of a full cache, a request the cache cannot serve exactly. The cache is what a
// training loop that allocates the same sizes every step runs on. When a stream keeps asking
// the slow path for one small size (its memory is freed on another stream), the pool refills
// the cache with a few fresh blocks of that size, so the next requests are fast too.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "happens_before.hpp"
#include "spin_lock.hpp"
#include "usage_counter.hpp"

namespace streampool::core {

struct CachedFree {
  std::uintptr_t address = 0;
  std::size_t bytes = 0;
  std::uint64_t tick = 0;
  bool fresh = false;  // never handed out: anyone may use it, whatever the tick
};

struct alignas(64) PoolStream {  // its own cache lines: written by its stream's thread only
  static constexpr std::size_t kCacheEntries = 8;

  explicit PoolStream(StreamState* owner) : stream(owner) {}
  // The legacy default stream's share: its own frees may need a marker before they are handed
  // out again (HappensBefore::anchor_own_frees). Read from the stream each time: a share passes
  // with its slot to whatever stream reclaims the slot (HappensBefore::reclaim_slot_locked).
  bool legacy() const noexcept { return stream->kind == StreamKind::legacy_default; }

  // All under `lock`.
  // Takes the newest entry of exactly `bytes` whose tick is at most `max_tick` (fresh entries carry
  // tick 0): its address (0: none) and tick, in two registers.
  struct Taken {
    std::uintptr_t address = 0;
    std::uint64_t tick = 0;
  };
  Taken take_exact(std::size_t bytes, std::uint64_t max_tick = UINT64_MAX) noexcept {
    for (std::size_t i = cache_count; i-- > 0;) {
      if (cache[i].bytes == bytes && cache[i].tick <= max_tick) {
        const Taken taken{cache[i].address, cache[i].tick};
        remove_at(i);
        return taken;
      }
    }
    return {};
  }
  // Pushes a free; returns the oldest entry when the cache was full (for the pool's index).
  std::optional<CachedFree> push(const CachedFree& freed) noexcept {
    std::optional<CachedFree> evicted;
    if (cache_count == kCacheEntries) {
      evicted = cache[0];
      remove_at(0);
    }
    append(freed);
    return evicted;
  }
  void append(const CachedFree& freed) noexcept {
    cache[cache_count++] = freed;
    occupied.store(cache_count, std::memory_order_relaxed);
  }
  void clear() noexcept {
    cache_count = 0;
    occupied.store(0, std::memory_order_relaxed);
  }
  void remove_at(std::size_t i) noexcept {
    for (std::size_t j = i + 1; j < cache_count; ++j) cache[j - 1] = cache[j];  // keeps age order
    --cache_count;
    occupied.store(cache_count, std::memory_order_relaxed);
  }

  SpinLock lock;
  StreamState* const stream;
  UsageShard* usage = nullptr;  // set by the pool; guarded by `lock`
  std::array<CachedFree, kCacheEntries> cache{};
  std::size_t cache_count = 0;
  // cache_count for readers without the lock: a slow path skips empty caches of other streams
  // without touching their locks (idle streams' lines stay where they are).
  std::atomic<std::size_t> occupied{0};
  // Allocations served on this share minus frees counted off on it (a block freed on another
  // stream makes one share's count high and the other's low: only the pool's sum means anything).
  // Guarded by `lock`; see Pool::destroy for how the pool learns it has drained.
  std::int64_t outstanding = 0;
  // The pool's mutex guards these: the size the slow path served last, and how many times in a row.
  std::size_t last_slow_bytes = 0;
  std::size_t slow_streak = 0;
};

}  // namespace streampool::core
