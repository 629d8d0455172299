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
  // One pair at most: ranges merge only when their requirements are the same, so a range never
  // waits on more than the stream that freed it.
  static constexpr std::size_t kCapacity = 1;

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
