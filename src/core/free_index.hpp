// FreeIndex: free address ranges, coalesced, searchable by best fit.
//
// Two orders over the same ranges: by address (to merge a freed range with its neighbours)
// and by (size, address) (best fit, lowest address among equals, as the driver places). Each
// range carries the Requirements for reusing it. Splitting and merging update tree nodes in
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

  // Removes [address, address+bytes), which must lie inside one free range; the rest of that
  // range stays free with its requirements.
  void take(std::uintptr_t address, std::size_t bytes);

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
