// FreeIndex: free address ranges, coalesced, searchable by best fit.
//
// Ranges live in a node array. Two hash maps find a range by its start and by its end, so a
// freed range merges with its neighbours in O(1); size classes (a two-level split: powers of
// two, each cut in eight) hold intrusive lists of ranges, and a bitmap of non-empty classes
// finds the first class that can hold a request. Best fit scans the request's own class and
// then the first non-empty class above it, taking the smallest fitting range, lowest address
// among equals (the driver's placement). Nothing allocates once the arrays have grown.
// Each range carries the Requirements for reusing it; neighbours merge when those are the
// same. Not thread-safe: the pool's mutex guards it.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "address_map.hpp"
#include "requirements.hpp"

namespace streampool::core {

struct FreeRange {
  std::uintptr_t address = 0;
  std::size_t bytes = 0;
  Requirements requirements;
};

class FreeIndex {
 public:
  // Adds [address, address+bytes), merging with neighbours that have the same requirements.
  void insert(std::uintptr_t address, std::size_t bytes, const Requirements& requirements = {});

  // Smallest range of at least `bytes` (lowest address among equals) that `usable` accepts.
  template <typename Usable>
  std::optional<FreeRange> best_fit(std::size_t bytes, Usable&& usable) const {
    std::size_t bin = bin_of(bytes);
    if (auto found = best_in_bin(bin, bytes, usable)) return found;
    for (bin = next_bin(bin + 1); bin < kBins; bin = next_bin(bin + 1)) {
      if (auto found = best_in_bin(bin, bytes, usable)) return found;
    }
    return std::nullopt;
  }
  std::optional<FreeRange> best_fit(std::size_t bytes) const {
    return best_fit(bytes, [](const Requirements&) { return true; });
  }

  // best_fit, else the smallest run of adjacent ranges that `usable` all accepts (ranges that
  // wait on different frees stay apart in the index, but one stream may use them together).
  // Take the result with take_span.
  template <typename Usable>
  std::optional<FreeRange> best_run(std::size_t bytes, Usable&& usable) const {
    if (auto fit = best_fit(bytes, usable)) return fit;
    std::optional<FreeRange> best;
    for (const Node& node : nodes_) {
      if (!node.live || !usable(node.requirements)) continue;
      if (auto before = by_end_.find(node.address); before && usable(nodes_[*before].requirements)) continue;
      std::size_t length = 0;  // `node` starts a run: walk it
      for (std::optional<std::uint32_t> at = by_start_.find(node.address);
           at && usable(nodes_[*at].requirements); at = by_start_.find(nodes_[*at].address + nodes_[*at].bytes)) {
        length += nodes_[*at].bytes;
      }
      if (length >= bytes && (!best || length < best->bytes ||
                              (length == best->bytes && node.address < best->address))) {
        best = FreeRange{node.address, length, {}};
      }
    }
    return best;
  }
  // The start of the run of usable ranges ending at `end` (end itself when there is none).
  template <typename Usable>
  std::uintptr_t run_start_before(std::uintptr_t end, Usable&& usable) const {
    for (auto at = by_end_.find(end); at && usable(nodes_[*at].requirements); at = by_end_.find(end)) {
      end = nodes_[*at].address;
    }
    return end;
  }

  // Removes [address, address+bytes) from the range that starts at `address`.
  void take(std::uintptr_t address, std::size_t bytes);
  // Removes [address, address+bytes) from inside the range that starts at `range_start`.
  void take_inside(std::uintptr_t range_start, std::uintptr_t address, std::size_t bytes);
  // Removes [address, address+bytes) across adjacent ranges, the first starting at `address`.
  void take_span(std::uintptr_t address, std::size_t bytes);

  // Clears the requirements `met` accepts, then merges neighbours that now match.
  template <typename Met>
  void settle(Met&& met) {
    for (Node& node : nodes_) {
      if (node.live && !node.requirements.empty() && met(node.requirements)) node.requirements = Requirements{};
    }
    merge_all();
  }

  std::optional<FreeRange> range_at(std::uintptr_t address) const;
  std::optional<FreeRange> range_ending_at(std::uintptr_t end) const;

  bool empty() const noexcept { return count_ == 0; }
  std::size_t range_count() const noexcept { return count_; }
  std::size_t free_bytes() const noexcept { return free_bytes_; }

  // Visits every range, in no particular order; the visitor must not modify the index.
  template <typename Visit>
  void for_each(Visit&& visit) const {
    for (const Node& node : nodes_) {
      if (node.live) visit(FreeRange{node.address, node.bytes, node.requirements});
    }
  }

 private:
  static constexpr std::uint32_t kNone = UINT32_MAX;
  static constexpr std::size_t kBins = 448;
  struct Node {
    std::uintptr_t address = 0;
    std::size_t bytes = 0;
    Requirements requirements;
    std::uint32_t prev = kNone;
    std::uint32_t next = kNone;
    std::uint16_t bin = 0;
    bool live = false;
  };

  // Sizes in 512-byte units: exact classes below 16 units, then 8 classes per power of two.
  static std::size_t bin_of(std::size_t bytes) noexcept {
    const std::size_t units = bytes < 512 ? 1 : bytes >> 9;
    if (units < 16) return units;
    const unsigned top = 63u - static_cast<unsigned>(std::countl_zero(units));
    return 16 + (top - 4) * 8 + ((units >> (top - 3)) & 7);
  }
  std::size_t next_bin(std::size_t from) const noexcept {
    for (std::size_t word = from / 64; word < bitmap_.size(); ++word) {
      std::uint64_t bits = bitmap_[word];
      if (word == from / 64) bits &= ~std::uint64_t{0} << (from % 64);
      if (bits != 0) return word * 64 + static_cast<std::size_t>(std::countr_zero(bits));
    }
    return kBins;
  }
  template <typename Usable>
  std::optional<FreeRange> best_in_bin(std::size_t bin, std::size_t bytes, Usable& usable) const {
    const Node* best = nullptr;
    for (std::uint32_t at = heads_[bin]; at != kNone; at = nodes_[at].next) {
      const Node& node = nodes_[at];
      if (node.bytes < bytes || !usable(node.requirements)) continue;
      if (best == nullptr || node.bytes < best->bytes || (node.bytes == best->bytes && node.address < best->address)) {
        best = &node;
      }
    }
    if (best == nullptr) return std::nullopt;
    return FreeRange{best->address, best->bytes, best->requirements};
  }

  std::uint32_t add(std::uintptr_t address, std::size_t bytes, const Requirements& requirements);
  void take_from(std::uint32_t index, std::uintptr_t address, std::size_t bytes);
  void remove(std::uint32_t index);
  void reshape(std::uint32_t index, std::uintptr_t address, std::size_t bytes);
  void link(std::uint32_t index);
  void unlink(std::uint32_t index);
  void merge_all();

  std::vector<Node> nodes_;
  std::vector<std::uint32_t> spare_;
  std::array<std::uint32_t, kBins> heads_ = make_heads();
  std::array<std::uint64_t, kBins / 64> bitmap_{};
  AddressMap by_start_;
  AddressMap by_end_;
  std::size_t count_ = 0;
  std::size_t free_bytes_ = 0;

  static constexpr std::array<std::uint32_t, kBins> make_heads() {
    std::array<std::uint32_t, kBins> heads{};
    heads.fill(kNone);
    return heads;
  }
};

}  // namespace streampool::core
