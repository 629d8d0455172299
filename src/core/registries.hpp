// Lock-free lookups the hot path and the handle checks need.
//
// HandleSet: which Pool pointers are live handles. A program may pass any value as a pool
// handle (the driver segfaults on a bad one; streampool answers CUDA_ERROR_INVALID_VALUE), so
// a handle is checked against this set before it is dereferenced; the set never dereferences
// one itself, so a destroyed (even reclaimed) pool's pointer stays safe to look up.
// RegionSet: which address ranges belong to some pool (a pointer streampool must serve). A
// given-back region's slot is reused by the next region added, so the slots in use stay as many
// as the regions that exist at once.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <utility>

namespace streampool::core {

// HandleSet: open addressing over atomic slots, insert-only (a destroyed pool's slot keeps its
// key with alive = false, and the same pointer coming back revives it). Lookups take no lock
// and probe a few slots whatever the number of pools; Capacity must be a power of two and
// stays at most half full (further pools are not recognised). The engine reuses a reclaimed
// pool's storage for the next pool, so the distinct keys are at most the pools that existed at
// once, not all that ever did.
template <std::size_t Capacity>
class HandleSet {
  static_assert((Capacity & (Capacity - 1)) == 0, "Capacity must be a power of two");

 public:
  void insert(const void* handle) {
    std::lock_guard guard(mutex_);
    for (std::size_t i = home(handle), probes = 0; probes < Capacity; i = (i + 1) % Capacity, ++probes) {
      const void* key = slots_[i].handle.load(std::memory_order_relaxed);
      if (key == handle) {
        slots_[i].alive.store(true, std::memory_order_release);
        return;
      }
      if (key == nullptr) {
        if ((used_ + 1) * 2 > Capacity) return;  // full enough: the handle is simply not recognised
        slots_[i].alive.store(true, std::memory_order_relaxed);
        slots_[i].handle.store(handle, std::memory_order_release);
        ++used_;
        return;
      }
    }
  }
  // True when the handle was live: of two racing erases of one handle, exactly one wins.
  bool erase(const void* handle) {
    std::lock_guard guard(mutex_);
    Slot* slot = find(handle);
    return slot != nullptr && slot->alive.exchange(false, std::memory_order_acq_rel);
  }
  bool contains(const void* handle) const {
    if (handle == nullptr) return false;
    const Slot* slot = find(handle);
    return slot != nullptr && slot->alive.load(std::memory_order_acquire);
  }

 private:
  struct Slot {
    std::atomic<const void*> handle{nullptr};
    std::atomic<bool> alive{false};
  };
  static std::size_t home(const void* handle) noexcept {
    return static_cast<std::size_t>((reinterpret_cast<std::uintptr_t>(handle) >> 4) * 0x9E3779B97F4A7C15ull >> 32) %
           Capacity;
  }
  Slot* find(const void* handle) const {
    for (std::size_t i = home(handle), probes = 0; probes < Capacity; i = (i + 1) % Capacity, ++probes) {
      const void* key = slots_[i].handle.load(std::memory_order_acquire);
      if (key == handle) return const_cast<Slot*>(&slots_[i]);
      if (key == nullptr) return nullptr;
    }
    return nullptr;
  }
  std::mutex mutex_;
  std::size_t used_ = 0;
  std::array<Slot, Capacity> slots_{};
};

template <std::size_t Capacity>
class RegionSet {
 public:
  void add(std::uintptr_t base, std::size_t bytes) {
    std::lock_guard guard(mutex_);
    const std::size_t count = count_.load(std::memory_order_relaxed);
    for (std::size_t i = 0; i < count; ++i) {
      if (slots_[i].bytes.load(std::memory_order_relaxed) == 0) {
        publish(slots_[i], base, bytes);
        return;
      }
    }
    if (count == Capacity) return;
    publish(slots_[count], base, bytes);
    count_.store(count + 1, std::memory_order_release);
  }
  void remove(std::uintptr_t base) {
    std::lock_guard guard(mutex_);
    for (std::size_t i = 0; i < count_.load(std::memory_order_relaxed); ++i) {
      if (slots_[i].base.load(std::memory_order_relaxed) == base) slots_[i].bytes.store(0, std::memory_order_release);
    }
  }
  bool contains(std::uintptr_t address) const {
    const std::size_t count = count_.load(std::memory_order_acquire);
    for (std::size_t i = 0; i < count; ++i) {
      const auto [base, bytes] = read(slots_[i]);
      if (bytes != 0 && address >= base && address - base < bytes) return true;
    }
    return false;
  }

 private:
  struct Slot {
    std::atomic<std::uintptr_t> base{0};
    std::atomic<std::size_t> bytes{0};
  };
  // A slot is reused as pools come and go, possibly while a reader looks at it. Writers clear
  // bytes, then publish base and then bytes, each a release; a reader reads base, bytes, and base
  // again, and takes the pair only if base did not change: it never pairs one region's base with
  // another's size (seeing the new bytes implies seeing the new base; seeing the new base implies
  // not seeing the old bytes).
  static void publish(Slot& slot, std::uintptr_t base, std::size_t bytes) {
    slot.base.store(base, std::memory_order_release);
    slot.bytes.store(bytes, std::memory_order_release);
  }
  static std::pair<std::uintptr_t, std::size_t> read(const Slot& slot) {
    for (;;) {
      const std::uintptr_t base = slot.base.load(std::memory_order_acquire);
      const std::size_t bytes = slot.bytes.load(std::memory_order_acquire);
      if (slot.base.load(std::memory_order_relaxed) == base) return {base, bytes};
    }
  }
  std::mutex mutex_;
  std::atomic<std::size_t> count_{0};
  std::array<Slot, Capacity> slots_{};
};

}  // namespace streampool::core
