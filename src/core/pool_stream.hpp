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
// training loop that allocates the same sizes every step runs on.
#pragma once

#include <array>
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
};

struct alignas(64) PoolStream {  // its own cache lines: written by its stream's thread only
  static constexpr std::size_t kCacheEntries = 8;

  explicit PoolStream(StreamState* owner) : stream(owner) {}

  // All under `lock`.
  std::optional<std::uintptr_t> take_exact(std::size_t bytes) noexcept {
    for (std::size_t i = cache_count; i-- > 0;) {
      if (cache[i].bytes == bytes) {
        const std::uintptr_t address = cache[i].address;
        remove_at(i);
        return address;
      }
    }
    return std::nullopt;
  }
  // Pushes a free; returns the oldest entry when the cache was full (for the pool's index).
  std::optional<CachedFree> push(const CachedFree& freed) noexcept {
    std::optional<CachedFree> evicted;
    if (cache_count == kCacheEntries) {
      evicted = cache[0];
      remove_at(0);
    }
    cache[cache_count++] = freed;
    return evicted;
  }
  void remove_at(std::size_t i) noexcept {
    for (std::size_t j = i + 1; j < cache_count; ++j) cache[j - 1] = cache[j];  // keeps age order
    --cache_count;
  }

  SpinLock lock;
  StreamState* const stream;
  UsageShard* usage = nullptr;  // set by the pool; guarded by `lock`
  std::array<CachedFree, kCacheEntries> cache{};
  std::size_t cache_count = 0;
};

}  // namespace streampool::core
