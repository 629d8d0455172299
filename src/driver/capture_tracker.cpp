#include "capture_tracker.hpp"

#include "driver_table.hpp"

namespace streampool::driver {

namespace detail {
std::atomic<long> captures_in_progress{0};
}

void capture_began() noexcept {
  detail::captures_in_progress.fetch_add(1, std::memory_order_relaxed);
}

void capture_ended() noexcept {
  long current = detail::captures_in_progress.load(std::memory_order_relaxed);
  while (current > 0 && !detail::captures_in_progress.compare_exchange_weak(
                            current, current - 1, std::memory_order_relaxed)) {
  }
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
