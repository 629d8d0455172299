// Requirements: what must be known before a free range may be reused by a stream.
//
// A range freed on stream s at tick t may be reused by s at once, and by any other stream only
// once that stream is ordered after (s, t) or the free is known complete. Free ranges carry the
// set of such (slot, tick) pairs; an empty set means "anyone". Neighbouring free ranges merge
// only when they wait on exactly the same thing: merging memory that anyone may use with a
// stream's pending frees would hide it from every other stream, and merging frees of two ticks
// would make the older wait for the newer. Frees of one stream between two cuts share a tick
// and so coalesce at once; the rest coalesce once known complete (FreeIndex::settle). Each
// stream still sees adjacent ranges it may use as one (FreeIndex::best_run).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace streampool::core {

struct Requirement {
  std::uint32_t slot = 0;  // the freeing stream's slot in the happens-before tracker
  std::uint64_t tick = 0;  // its tick at the free
};

class Requirements {
 public:
  static constexpr std::size_t kCapacity = 3;

  Requirements() = default;
  static Requirements of(std::uint32_t slot, std::uint64_t tick) {
    Requirements requirements;
    requirements.items_[0] = Requirement{slot, tick};
    requirements.count_ = 1;
    return requirements;
  }

  bool empty() const noexcept { return count_ == 0; }
  std::size_t size() const noexcept { return count_; }
  const Requirement* begin() const noexcept { return items_.data(); }
  const Requirement* end() const noexcept { return items_.data() + count_; }

  // The same (slot, tick) pairs, in any order.
  bool same_as(const Requirements& other) const noexcept {
    if (count_ != other.count_) return false;
    for (std::size_t i = 0; i < count_; ++i) {
      bool found = false;
      for (std::size_t j = 0; j < other.count_; ++j) {
        found = found || (other.items_[j].slot == items_[i].slot && other.items_[j].tick == items_[i].tick);
      }
      if (!found) return false;
    }
    return true;
  }

  // The union with `other`; false, with nothing changed, if it would exceed the capacity.
  bool absorb(const Requirements& other) noexcept {
    Requirements merged = *this;
    for (const Requirement& item : other) {
      bool found = false;
      for (std::size_t i = 0; i < merged.count_; ++i) {
        if (merged.items_[i].slot == item.slot) {
          if (item.tick > merged.items_[i].tick) merged.items_[i].tick = item.tick;
          found = true;
        }
      }
      if (!found) {
        if (merged.count_ == kCapacity) return false;
        merged.items_[merged.count_++] = item;
      }
    }
    *this = merged;
    return true;
  }

  // True when `known(slot)` covers every requirement.
  template <typename Known>
  bool met_by(Known&& known) const {
    for (std::size_t i = 0; i < count_; ++i) {
      if (known(items_[i].slot) < items_[i].tick) return false;
    }
    return true;
  }

 private:
  std::array<Requirement, kCapacity> items_{};
  std::uint8_t count_ = 0;
};

}  // namespace streampool::core
