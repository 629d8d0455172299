#include "capture_tracker.hpp"

#include <mutex>
#include <vector>

#include "driver_table.hpp"
#include "log.hpp"

namespace streampool::driver {

namespace detail {
std::atomic<long> captures_in_progress{0};
}

namespace {

// The streams capturing now, for the diagnostics only (kept while debug logging is on).
struct WatchedCapture {
  CUstream stream;
  bool per_thread_variant;
  bool reported;
};
std::mutex watched_mutex;
std::vector<WatchedCapture>* watched = nullptr;  // never destroyed: hooks run during exit

bool watching() noexcept { return log::enabled(log::Level::debug); }

}  // namespace

void capture_began(CUstream stream, bool per_thread_variant) noexcept {
  detail::captures_in_progress.fetch_add(1, std::memory_order_relaxed);
  if (!watching()) return;
  try {
    std::lock_guard guard(watched_mutex);
    if (watched == nullptr) watched = new std::vector<WatchedCapture>;
    watched->push_back(WatchedCapture{stream, per_thread_variant, false});
  } catch (...) {
  }
}

void check_captures_after(const char* hook) noexcept {
  if (!captures_possible() || !watching()) return;
  std::lock_guard guard(watched_mutex);
  if (watched == nullptr) return;
  const DriverTable& table = real();
  for (WatchedCapture& capture : *watched) {
    auto is_capturing = capture.per_thread_variant ? table.cuStreamIsCapturing_ptsz : table.cuStreamIsCapturing;
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    if (capture.reported || is_capturing == nullptr || is_capturing(capture.stream, &status) != CUDA_SUCCESS) continue;
    if (status == CU_STREAM_CAPTURE_STATUS_INVALIDATED) {
      capture.reported = true;
      STREAMPOOL_LOG_DEBUG("capture on stream %p invalidated by the end of %s",
                           static_cast<void*>(capture.stream), hook);
    }
  }
}

void capture_ended(CUstream stream, bool per_thread_variant) noexcept {
  if (watching()) {
    std::lock_guard guard(watched_mutex);
    if (watched != nullptr) {
      std::erase_if(*watched, [&](const WatchedCapture& capture) {
        return capture.stream == stream && capture.per_thread_variant == per_thread_variant;
      });
    }
  }
  long current = detail::captures_in_progress.load(std::memory_order_relaxed);
  while (current > 0 && !detail::captures_in_progress.compare_exchange_weak(
                            current, current - 1, std::memory_order_relaxed)) {
  }
}

void forget_captures() noexcept {
  detail::captures_in_progress.store(0, std::memory_order_relaxed);
  watched = nullptr;  // the parent's list is abandoned with its lock
}

long captures_in_progress() noexcept {
  return detail::captures_in_progress.load(std::memory_order_relaxed);
}

CUresult stream_capturing(CUstream stream, bool per_thread_variant, bool* capturing) noexcept {
  *capturing = false;
  if (!captures_possible()) return CUDA_SUCCESS;
  const DriverTable& table = real();
  auto is_capturing = per_thread_variant ? table.cuStreamIsCapturing_ptsz : table.cuStreamIsCapturing;
  if (is_capturing == nullptr) return missing_entry_result();
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  CUresult result = is_capturing(stream, &status);
  if (result == CUDA_ERROR_STREAM_CAPTURE_IMPLICIT) {
    // The legacy stream while another stream captures in global mode: the driver would refuse the
    // allocation itself, so let it answer.
    *capturing = true;
    return CUDA_SUCCESS;
  }
  if (result != CUDA_SUCCESS) return result;
  *capturing = status != CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}

}  // namespace streampool::driver
