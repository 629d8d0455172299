// Process-wide switches read from the environment once, on first use.
#pragma once

#include <atomic>

namespace streampool::driver {

namespace detail {
// -1: not read yet, 0: off, 1: on. Read on every hook call, so the check is inline.
extern std::atomic<int> passthrough_state;
bool read_passthrough_setting() noexcept;
}  // namespace detail

// STREAMPOOL_DISABLE=1 (any value but "" and "0"): streampool is a pure pass-through. Every entry
// point, cuGetProcAddress included, hands the caller the real driver's answer unchanged.
inline bool passthrough_requested() noexcept {
  int state = detail::passthrough_state.load(std::memory_order_relaxed);
  if (state == 0) [[likely]] return false;
  return state == 1 || detail::read_passthrough_setting();
}

// STREAMPOOL_STRICT_REUSE=1: every reuse of another stream's free that no observed completion
// proves carries a wait of streampool's own on a marker of the freeing stream (defence in depth,
// see docs/DESIGN.md). Read once, when the engine is created.
bool strict_reuse_requested() noexcept;

// STREAMPOOL_RELEASE=auto: pools whose release threshold the program never set give memory back
// by the engine's self-tuning rule (core/release_policy.hpp); `threshold` (or unset): CUDA's rule,
// a threshold of 0 unless the program set one. Anything else is one line on stderr and CUDA's rule.
bool auto_release_requested() noexcept;

// STREAMPOOL_SERVE_MALLOC=1: cuMemAlloc, cuMemAllocPitch and their cuMemFree are served from
// streampool's pools (interpose/hooks/serve/), so that the process has one budget. 1/true/yes/on
// serve, 0/false/no/off (and unset) do not; anything else is one line on stderr and off. Read once.
bool serve_malloc_requested() noexcept;

}  // namespace streampool::driver
