// Lock-free lookups the hot path and the handle checks need.
//
// HandleSet: which Pool pointers are live handles. A program may pass any value as a pool
// handle (the driver segfaults on a bad one; streampool answers CUDA_ERROR_INVALID_VALUE), so
// a handle is checked against this set before it is dereferenced. Insert-only slots plus an
// alive flag; pools are never freed while the engine lives, so a stale pointer stays safe.
// RegionSet: which address ranges belong to some pool (a pointer streampool must serve).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

namespace streampool::core {

template <std::size_t Capacity>
class HandleSet {
 public:
  void insert(const void* handle) {
    std::lock_guard guard(mutex_);
    const std::size_t count = count_.load(std::memory_order_relaxed);
    for (std::size_t i = 0; i < count; ++i) {
      if (slots_[i].handle.load(std::memory_order_relaxed) == handle) {
        slots_[i].alive.store(true, std::memory_order_release);
        return;
      }
    }
    if (count == Capacity) return;  // beyond capacity the handle is simply not recognised
    slots_[count].handle.store(handle, std::memory_order_relaxed);
    slots_[count].alive.store(true, std::memory_order_relaxed);
    count_.store(count + 1, std::memory_order_release);
  }
  void erase(const void* handle) {
    std::lock_guard guard(mutex_);
    for (std::size_t i = 0; i < count_.load(std::memory_order_relaxed); ++i) {
      if (slots_[i].handle.load(std::memory_order_relaxed) == handle) slots_[i].alive.store(false);
    }
  }
  bool contains(const void* handle) const {
    if (handle == nullptr) return false;
    const std::size_t count = count_.load(std::memory_order_acquire);
    for (std::size_t i = 0; i < count; ++i) {
      if (slots_[i].handle.load(std::memory_order_relaxed) == handle) {
        return slots_[i].alive.load(std::memory_order_acquire);
      }
    }
    return false;
  }

 private:
  struct Slot {
    std::atomic<const void*> handle{nullptr};
    std::atomic<bool> alive{false};
  };
  std::mutex mutex_;
  std::atomic<std::size_t> count_{0};
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
      const std::size_t bytes = slots_[i].bytes.load(std::memory_order_acquire);
      const std::uintptr_t base = slots_[i].base.load(std::memory_order_relaxed);
      if (bytes != 0 && address >= base && address - base < bytes) return true;
    }
    return false;
  }

 private:
  struct Slot {
    std::atomic<std::uintptr_t> base{0};
    std::atomic<std::size_t> bytes{0};
  };
  static void publish(Slot& slot, std::uintptr_t base, std::size_t bytes) {
    slot.base.store(base, std::memory_order_relaxed);
    slot.bytes.store(bytes, std::memory_order_release);
  }
  std::mutex mutex_;
  std::atomic<std::size_t> count_{0};
  std::array<Slot, Capacity> slots_{};
};

}  // namespace streampool::core
