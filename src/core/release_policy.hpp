// ReleasePolicy: when a pool gives unused physical memory back to its backing.
//
// `threshold` is CUDA's rule: at a host synchronisation, memory above the pool's release
// threshold (0 unless the program set it) goes back. `automatic` applies to pools whose
// threshold the program never set, and keeps what is reused: a mapping unit is given back at a
// host synchronisation once no block in it has been freed (so none used) for more than
// `idle_synchronisations` synchronisations and at least `idle_ms` (docs/DESIGN.md, "Self-tuning
// release"). Both only ever give back whole units that no live block, cached block or pending
// free touches.
//
// ReleaseClock numbers the engine's releasing host synchronisations (epochs) and remembers when
// the last few began, so that a granule's stamp (the epoch of its last free) says how long it has
// been idle. Everything here runs at synchronisations, growth or release, never on the fast path.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>

namespace streampool::core {

struct ReleasePolicy {
  enum class Mode { threshold, automatic };
  Mode mode = Mode::threshold;
  std::uint32_t idle_synchronisations = 2;  // a unit must miss more synchronisations than this
  std::uint64_t idle_ms = 500;              // and have been idle this long
  std::function<std::uint64_t()> clock_ms;  // milliseconds of a monotonic clock; null: the steady clock

  static ReleasePolicy self_tuning() {
    ReleasePolicy policy;
    policy.mode = Mode::automatic;
    return policy;
  }
};

class ReleaseClock {
 public:
  std::uint32_t current() const noexcept { return epoch_.load(std::memory_order_acquire); }
  // A releasing synchronisation at `now_ms`: the next epoch begins. Returns it.
  std::uint32_t advance(std::uint64_t now_ms) {
    std::lock_guard guard(mutex_);
    const std::uint32_t next = epoch_.load(std::memory_order_relaxed) + 1;
    started_ms_[next % kRemembered].store(now_ms, std::memory_order_relaxed);
    epoch_.store(next, std::memory_order_release);
    return next;
  }
  // When `epoch` ended (the next one began); `now_ms` for the current one. For an epoch older
  // than those remembered, the oldest beginning remembered: later than the real end, so memory
  // looks less idle than it is, never more.
  std::uint64_t ended_at(std::uint32_t epoch, std::uint64_t now_ms) const noexcept {
    const std::uint32_t now_epoch = current();
    if (epoch >= now_epoch) return now_ms;
    std::uint32_t next = epoch + 1;
    if (now_epoch - next >= kRemembered) next = now_epoch - (kRemembered - 1);
    return started_ms_[next % kRemembered].load(std::memory_order_relaxed);
  }

 private:
  static constexpr std::uint32_t kRemembered = 64;
  std::mutex mutex_;  // orders advances (synchronisations on several threads)
  std::atomic<std::uint32_t> epoch_{0};
  std::array<std::atomic<std::uint64_t>, kRemembered> started_ms_{};
};

}  // namespace streampool::core
