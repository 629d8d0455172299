// How many times each fake entry point was called, for tests that must prove a call reached the
// driver (e.g. that streampool forwards an allocation made on a capturing stream). Each entry point
// owns one counter, registered by name on its first call; reading is by name through the exported
// C function streampool_fake_counter().
#pragma once

#include <atomic>
#include <cstdint>

namespace fake {

class CallCounter {
 public:
  explicit CallCounter(const char* entry_point_name);
  void increment() noexcept { calls_.fetch_add(1, std::memory_order_relaxed); }
  std::uint64_t calls() const noexcept { return calls_.load(std::memory_order_relaxed); }
  void reset() noexcept { calls_.store(0, std::memory_order_relaxed); }

 private:
  std::atomic<std::uint64_t> calls_{0};
};

}  // namespace fake

// Counts one call of the enclosing exported function, under its own (versioned) name.
#define FAKE_COUNT_CALL()                                  \
  static ::fake::CallCounter fake_call_counter_{__func__}; \
  fake_call_counter_.increment()
