// Graph capture in progress, as cheaply as possible.
//
// Allocations and frees on a capturing stream must reach the real driver unchanged (they become
// graph memory nodes), and streampool's own markers must never be recorded into a capture. Asking
// the driver (cuStreamIsCapturing) on every allocation would cost a driver call on the hot path, so
// the capture hooks keep a process-wide count of captures begun and not yet ended, and the driver
// is only asked while that count is non-zero: a relaxed load otherwise.
#pragma once

#include <atomic>

#include "cuda_compat.hpp"

namespace streampool::driver {

namespace detail {
extern std::atomic<long> captures_in_progress;
}

inline bool captures_possible() noexcept {
  return detail::captures_in_progress.load(std::memory_order_relaxed) != 0;
}
void capture_began(CUstream stream, bool per_thread_variant) noexcept;
void capture_ended(CUstream stream, bool per_thread_variant) noexcept;  // never goes below zero
// A child after fork: no capture of the parent's goes on there.
void forget_captures() noexcept;

// Diagnostics (STREAMPOOL_LOG=debug): with captures in progress, asks the driver about each
// capturing stream and logs, once per capture, the hook after which it became invalidated, so a
// capture that streampool breaks names the step that broke it. Nothing otherwise.
void check_captures_after(const char* hook) noexcept;
long captures_in_progress() noexcept;

// *capturing = whether the stream is capturing (active or invalidated). Without any capture in
// progress this is false at no cost. A driver error is returned as is.
CUresult stream_capturing(CUstream stream, bool per_thread_variant, bool* capturing) noexcept;

}  // namespace streampool::driver
