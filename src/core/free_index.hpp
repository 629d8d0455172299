// FreeIndex: free address ranges, coalesced, searchable by best fit.
//
// Two orders over the same ranges: by address (to merge a freed range with its neighbours)
// and by (size, address) (best fit, lowest address among equals, as the driver places).
// Each range carries the tick of the latest free merged into it: a per-stream index uses it
// to tell which of its ranges another stream may already reuse (see happens_before.hpp);
// the pool-wide index of completed frees ignores it. Not thread-safe: the owner locks.
// std::map nodes cost an allocation, which is why the same-stream fast path keeps a small
// cache in front of this index (pool_stream.hpp) and only the slow paths come here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <utility>

namespace streampool::core {

struct FreeRange {
  std::uintptr_t address = 0;
  std::size_t bytes = 0;
  std::uint64_t tick = 0;
};

class FreeIndex {
 public:
  static constexpr std::uint64_t kAnyTick = std::numeric_limits<std::uint64_t>::max();

  // Adds [address, address+bytes), merging with free neighbours (the merged tick is the max).
  void insert(std::uintptr_t address, std::size_t bytes, std::uint64_t tick);

  // Smallest range of at least `bytes` (lowest address among equals) whose tick is <= max_tick.
  std::optional<FreeRange> best_fit(std::size_t bytes, std::uint64_t max_tick = kAnyTick) const;

  // Removes [address, address+bytes) which must lie inside one free range; the rest of that
  // range stays free with its tick.
  void take(std::uintptr_t address, std::size_t bytes);

  // Takes the whole range starting at `address` (exactly as stored), returning it.
  std::optional<FreeRange> take_range_at(std::uintptr_t address);

  // The range ending exactly at `end`, if any.
  std::optional<FreeRange> range_ending_at(std::uintptr_t end) const;
  // The free range containing `address`, if any.
  std::optional<FreeRange> range_containing(std::uintptr_t address) const;

  bool empty() const noexcept { return by_address_.empty(); }
  std::size_t range_count() const noexcept { return by_address_.size(); }
  std::size_t free_bytes() const noexcept { return free_bytes_; }

  // Visits ranges in address order; the visitor must not modify the index.
  template <typename Visit>
  void for_each(Visit&& visit) const {
    for (const auto& [address, entry] : by_address_) visit(FreeRange{address, entry.bytes, entry.tick});
  }

 private:
  struct Entry {
    std::size_t bytes;
    std::uint64_t tick;
  };
  void add(std::uintptr_t address, std::size_t bytes, std::uint64_t tick);
  void remove(std::map<std::uintptr_t, Entry>::iterator it);

  std::map<std::uintptr_t, Entry> by_address_;
  std::set<std::pair<std::size_t, std::uintptr_t>> by_size_;
  std::size_t free_bytes_ = 0;
};

}  // namespace streampool::core
