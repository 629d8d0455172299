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
void capture_began() noexcept;
void capture_ended() noexcept;  // never goes below zero
long captures_in_progress() noexcept;

// *capturing = whether the stream is capturing (active or invalidated). Without any capture in
// progress this is false at no cost. A driver error is returned as is.
CUresult stream_capturing(CUstream stream, bool per_thread_variant, bool* capturing) noexcept;

}  // namespace streampool::driver
