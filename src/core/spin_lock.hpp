// A test-and-test-and-set spin lock for the per-stream fast path. Critical sections under it
// are a few dozen instructions and, in the common case, taken by one thread only, so an
// uncontended acquire is one atomic exchange and a release a plain store; waiters spin on a
// read (no cache-line ping-pong) and yield after a while.
#pragma once

#include <atomic>
#include <thread>

namespace streampool::core {

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

class SpinLock {
 public:
  void lock() noexcept {
    for (int spins = 0; locked_.exchange(true, std::memory_order_acquire); ) {
      while (locked_.load(std::memory_order_relaxed)) {
        if (++spins > 64) {
          std::this_thread::yield();
        } else {
          cpu_relax();
        }
      }
    }
  }
  bool try_lock() noexcept { return !locked_.exchange(true, std::memory_order_acquire); }
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

}  // namespace streampool::core
