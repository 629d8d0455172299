// FreeIndex: free address ranges, coalesced, searchable by best fit.
//
// Two orders over the same ranges: by address (to merge a freed range with its neighbours)
// and by (size, address) (best fit, lowest address among equals, as the driver places). Each
// range carries the Requirements for reusing it; neighbours merge when those are the same. Splitting and merging update tree nodes in
// place (extract, change, reinsert), so the common operations allocate nothing.
// Not thread-safe: the pool's mutex guards it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "requirements.hpp"

namespace streampool::core {

struct FreeRange {
  std::uintptr_t address = 0;
  std::size_t bytes = 0;
  Requirements requirements;
};

class FreeIndex {
 public:
  // Adds [address, address+bytes), merging with neighbours whose requirements unite.
  void insert(std::uintptr_t address, std::size_t bytes, const Requirements& requirements = {});

  // Smallest range of at least `bytes` (lowest address among equals) that `usable` accepts.
  template <typename Usable>
  std::optional<FreeRange> best_fit(std::size_t bytes, Usable&& usable) const {
    for (auto it = by_size_.lower_bound({bytes, 0}); it != by_size_.end(); ++it) {
      const Entry& entry = by_address_.find(it->second)->second;
      if (usable(entry.requirements)) return FreeRange{it->second, it->first, entry.requirements};
    }
    return std::nullopt;
  }
  std::optional<FreeRange> best_fit(std::size_t bytes) const {
    return best_fit(bytes, [](const Requirements&) { return true; });
  }

  // best_fit, else the smallest run of adjacent ranges that `usable` all accepts (ranges that
  // wait on different streams stay apart in the index, but one stream may use them together).
  // Take the result with take_span.
  template <typename Usable>
  std::optional<FreeRange> best_run(std::size_t bytes, Usable&& usable) const {
    if (auto fit = best_fit(bytes, usable)) return fit;
    std::optional<FreeRange> best;
    std::uintptr_t run_start = 0;
    std::uintptr_t run_end = 0;
    const auto close_run = [&] {
      const std::size_t length = run_end - run_start;
      if (length >= bytes && (!best || length < best->bytes)) best = FreeRange{run_start, length, {}};
    };
    for (const auto& [address, entry] : by_address_) {
      if (!usable(entry.requirements)) {
        close_run();
        run_start = run_end = 0;
        continue;
      }
      if (run_end != address) {
        close_run();
        run_start = address;
      }
      run_end = address + entry.bytes;
    }
    close_run();
    return best;
  }
  // The start of a run of usable ranges ending at `end` (end itself when there is none).
  template <typename Usable>
  std::uintptr_t run_start_before(std::uintptr_t end, Usable&& usable) const {
    for (auto range = range_ending_at(end); range && usable(range->requirements); range = range_ending_at(end)) {
      end = range->address;
    }
    return end;
  }

  // Removes [address, address+bytes), which must lie inside one free range; the rest of that
  // range stays free with its requirements.
  void take(std::uintptr_t address, std::size_t bytes);
  // The same across adjacent ranges.
  void take_span(std::uintptr_t address, std::size_t bytes);

  // Clears the requirements `met` accepts, then merges neighbours that now unite.
  template <typename Met>
  void settle(Met&& met) {
    for (auto& [address, entry] : by_address_) {
      if (!entry.requirements.empty() && met(entry.requirements)) entry.requirements = Requirements{};
    }
    merge_all();
  }

  std::optional<FreeRange> range_ending_at(std::uintptr_t end) const;
  std::optional<FreeRange> range_containing(std::uintptr_t address) const;

  bool empty() const noexcept { return by_address_.empty(); }
  std::size_t range_count() const noexcept { return by_address_.size(); }
  std::size_t free_bytes() const noexcept { return free_bytes_; }

  template <typename Visit>
  void for_each(Visit&& visit) const {
    for (const auto& [address, entry] : by_address_) visit(FreeRange{address, entry.bytes, entry.requirements});
  }

 private:
  struct Entry {
    std::size_t bytes;
    Requirements requirements;
  };
  using AddressMap = std::map<std::uintptr_t, Entry>;
  void resize(AddressMap::iterator it, std::uintptr_t new_address, std::size_t new_bytes);
  void remove(AddressMap::iterator it);
  void merge_all();

  AddressMap by_address_;
  std::set<std::pair<std::size_t, std::uintptr_t>> by_size_;
  std::size_t free_bytes_ = 0;
};

}  // namespace streampool::core
