#include "capture_tracker.hpp"

#include <mutex>
#include <thread>
#include <vector>

#include "driver_table.hpp"
#include "log.hpp"

namespace streampool::driver {

namespace detail {
std::atomic<long> captures_in_progress{0};
std::atomic<long> begins_unsettled{0};
FenceShard fence_shards[kFenceShards];
}  // namespace detail

namespace {
// 1 once captures are unseen: the phantom capture that keeps the count above zero.
std::atomic<long> unseen_floor{0};
}  // namespace

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

void lower_captures_in_progress() noexcept {
  long current = detail::captures_in_progress.load(std::memory_order_seq_cst);
  while (current > unseen_floor.load(std::memory_order_relaxed) && !detail::captures_in_progress.compare_exchange_weak(current, current - 1,
                                                                            std::memory_order_seq_cst)) {
  }
}

detail::FenceShard& own_shard() noexcept {
  static std::atomic<unsigned> next_thread{0};
  thread_local const unsigned index = next_thread.fetch_add(1, std::memory_order_relaxed) % detail::kFenceShards;
  return detail::fence_shards[index];
}

bool begin_unsettled() noexcept { return detail::begins_unsettled.load(std::memory_order_seq_cst) != 0; }

bool fences_in_flight() noexcept {
  for (const detail::FenceShard& shard : detail::fence_shards) {
    if (shard.in_flight.load(std::memory_order_seq_cst) != 0) return true;
  }
  return false;
}

}  // namespace

void capture_begin_announce() noexcept {
  // Counted before the real call, so that once this begin settles every fence asks the driver.
  detail::captures_in_progress.fetch_add(1, std::memory_order_seq_cst);
  detail::begins_unsettled.fetch_add(1, std::memory_order_seq_cst);
  // Fences that entered before they could see this begin finish their driver calls; new ones back
  // out, so this wait is bounded by the calls already under way.
  for (unsigned spins = 0; fences_in_flight(); ++spins) {
    if (spins > 64) std::this_thread::yield();
  }
}

void capture_begin_settle(bool began, CUstream stream, bool per_thread_variant) noexcept {
  if (!began) lower_captures_in_progress();
  detail::begins_unsettled.fetch_sub(1, std::memory_order_seq_cst);
  if (!began || !watching()) return;
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
  lower_captures_in_progress();
}

void forget_captures() noexcept {
  // The child has only the forking thread: no begin or fence of the parent's goes on there.
  detail::captures_in_progress.store(unseen_floor.load(std::memory_order_relaxed), std::memory_order_relaxed);
  detail::begins_unsettled.store(0, std::memory_order_relaxed);
  for (detail::FenceShard& shard : detail::fence_shards) shard.in_flight.store(0, std::memory_order_relaxed);
  watched = nullptr;  // the parent's list is abandoned with its lock
}

void assume_unseen_captures() noexcept {
  long expected = 0;
  if (unseen_floor.compare_exchange_strong(expected, 1, std::memory_order_seq_cst)) {
    detail::captures_in_progress.fetch_add(1, std::memory_order_seq_cst);
  }
}

bool captures_unseen() noexcept { return unseen_floor.load(std::memory_order_relaxed) != 0; }

long captures_in_progress() noexcept {
  return detail::captures_in_progress.load(std::memory_order_relaxed) - unseen_floor.load(std::memory_order_relaxed);
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

CaptureFence::CaptureFence() noexcept {
  if (begin_unsettled()) return;  // a begin under way: do not even enter, so it never waits long
  detail::FenceShard& shard = own_shard();
  shard.in_flight.fetch_add(1, std::memory_order_seq_cst);
  // Dekker with capture_begin_announce: this fence entered, then looks; a begin raised its flag,
  // then looks. Under seq_cst at least one of the two sees the other.
  if (begin_unsettled()) {
    shard.in_flight.fetch_sub(1, std::memory_order_seq_cst);
    return;
  }
  shard_ = &shard;
}

CaptureFence::~CaptureFence() {
  if (shard_ != nullptr) shard_->in_flight.fetch_sub(1, std::memory_order_seq_cst);
}

bool CaptureFence::stream_may_capture(CUstream stream, bool per_thread_variant) const noexcept {
  if (!admitted()) return true;
  bool capturing = false;
  return stream_capturing(stream, per_thread_variant, &capturing) != CUDA_SUCCESS || capturing;
}

bool CaptureFence::any_capture() const noexcept { return !admitted() || captures_possible(); }

}  // namespace streampool::driver
