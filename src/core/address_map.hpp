// AddressMap: a flat hash map from a non-zero address to a 32-bit index, for the free index's
// O(1) neighbour lookups (which free range starts, or ends, exactly here?). Open addressing
// with linear probing and backward-shift deletion, so erasing leaves no tombstones and lookups
// stay short however long the pool lives. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace streampool::core {

class AddressMap {
 public:
  std::optional<std::uint32_t> find(std::uintptr_t key) const noexcept {
    if (slots_.empty()) return std::nullopt;
    for (std::size_t i = home(key);; i = (i + 1) & mask()) {
      if (slots_[i].key == key) return slots_[i].value;
      if (slots_[i].key == 0) return std::nullopt;
    }
  }
  void insert(std::uintptr_t key, std::uint32_t value) {
    if ((count_ + 1) * 2 > slots_.size()) grow();  // at most half full: a miss probes ~2 slots
    place(key, value);
    ++count_;
  }
  void erase(std::uintptr_t key) noexcept {
    if (slots_.empty()) return;
    std::size_t hole = home(key);
    for (;; hole = (hole + 1) & mask()) {
      if (slots_[hole].key == key) break;
      if (slots_[hole].key == 0) return;
    }
    for (std::size_t next = (hole + 1) & mask(); slots_[next].key != 0; next = (next + 1) & mask()) {
      const std::size_t wanted = home(slots_[next].key);
      if (((next - wanted) & mask()) >= ((next - hole) & mask())) {
        slots_[hole] = slots_[next];
        hole = next;
      }
    }
    slots_[hole] = Slot{};
    --count_;
  }

 private:
  struct Slot {
    std::uintptr_t key = 0;
    std::uint32_t value = 0;
  };
  std::size_t mask() const noexcept { return slots_.size() - 1; }
  std::size_t home(std::uintptr_t key) const noexcept {
    return static_cast<std::size_t>(((key >> 9) * 0x9E3779B97F4A7C15ull) >> 20) & mask();
  }
  void place(std::uintptr_t key, std::uint32_t value) noexcept {
    std::size_t i = home(key);
    while (slots_[i].key != 0) i = (i + 1) & mask();
    slots_[i] = Slot{key, value};
  }
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.empty() ? 64 : old.size() * 2, Slot{});
    for (const Slot& slot : old) {
      if (slot.key != 0) place(slot.key, slot.value);
    }
  }

  std::vector<Slot> slots_;
  std::size_t count_ = 0;
};

}  // namespace streampool::core
