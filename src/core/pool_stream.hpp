// PoolStream: one stream's share of one pool, the home of the same-stream fast path.
//
// Memory freed on a stream belongs to that stream until something proves another stream may
// have it (the driver's rule: "a freed block belongs to the freeing stream"). Stream order
// alone makes it reusable on the same stream at once, so the fast path needs no event and no
// lock but this stream's own:
//   free      push (address, bytes, tick) on a small cache of recent frees;
//   allocate  pop an exact-size entry from the cache, else best fit in the stream's index.
// The cache is an array scanned from its end; when full, its first entry moves into the
// index, where neighbours coalesce. Slow paths of other streams look into both, under `lock`,
// after flushing the cache. Also holds the stream's usage shard (usage_counter.hpp).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "free_index.hpp"
#include "happens_before.hpp"
#include "spin_lock.hpp"
#include "usage_counter.hpp"

namespace streampool::core {

struct PoolStream {
  static constexpr std::size_t kCacheEntries = 8;

  explicit PoolStream(StreamState* owner, UsageShard* usage_shard) : stream(owner), usage(usage_shard) {}

  // Under `lock`.
  std::optional<std::uintptr_t> take_exact(std::size_t bytes) {
    for (std::size_t i = cache_count; i-- > 0;) {
      if (cache[i].bytes == bytes) {
        const std::uintptr_t address = cache[i].address;
        cache[i] = cache[--cache_count];
        return address;
      }
    }
    return std::nullopt;
  }
  std::optional<std::uintptr_t> take_best_fit(std::size_t bytes) {
    flush_cache();
    auto fit = pending.best_fit(bytes);
    if (!fit) return std::nullopt;
    pending.take(fit->address, bytes);
    return fit->address;
  }
  void push(std::uintptr_t address, std::size_t bytes, std::uint64_t tick) {
    if (cache_count == kCacheEntries) {
      pending.insert(cache[0].address, cache[0].bytes, cache[0].tick);
      cache[0] = cache[--cache_count];
    }
    cache[cache_count++] = FreeRange{address, bytes, tick};
    if (tick > max_free_tick) max_free_tick = tick;
  }
  void flush_cache() {
    for (std::size_t i = 0; i < cache_count; ++i) pending.insert(cache[i].address, cache[i].bytes, cache[i].tick);
    cache_count = 0;
  }
  bool has_free() const { return cache_count != 0 || !pending.empty(); }
  std::size_t free_bytes() const {
    std::size_t bytes = pending.free_bytes();
    for (std::size_t i = 0; i < cache_count; ++i) bytes += cache[i].bytes;
    return bytes;
  }

  SpinLock lock;
  StreamState* const stream;
  UsageShard* const usage;
  std::array<FreeRange, kCacheEntries> cache{};
  std::size_t cache_count = 0;
  FreeIndex pending;  // this stream's frees, coalesced, each with its tick
  std::uint64_t max_free_tick = 0;  // a marker covering this tick covers every free above
};

}  // namespace streampool::core
