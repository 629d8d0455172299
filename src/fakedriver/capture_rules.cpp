#include "capture_rules.hpp"

#include <algorithm>
#include <mutex>
#include <utility>
#include <vector>

#include "stream.hpp"

namespace fake {
namespace {

std::mutex captures_mutex;
std::vector<std::weak_ptr<Stream>>& global_captures() {
  static auto* captures = new std::vector<std::weak_ptr<Stream>>;  // outlives exit-time calls
  return *captures;
}

thread_local CUstreamCaptureMode thread_capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

}  // namespace

CUresult exchange_thread_capture_mode(CUstreamCaptureMode* mode) {
  if (mode == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (*mode != CU_STREAM_CAPTURE_MODE_GLOBAL && *mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
      *mode != CU_STREAM_CAPTURE_MODE_RELAXED) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::swap(*mode, thread_capture_mode);
  return CUDA_SUCCESS;
}

void global_capture_began(const std::shared_ptr<Stream>& stream) {
  std::lock_guard lock(captures_mutex);
  global_captures().push_back(stream);
}

void global_capture_ended(const Stream* stream) {
  std::lock_guard lock(captures_mutex);
  std::erase_if(global_captures(), [stream](const std::weak_ptr<Stream>& weak) {
    auto live = weak.lock();
    return !live || live.get() == stream;
  });
}

CUresult refuse_during_global_capture() {
  if (thread_capture_mode == CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_SUCCESS;
  std::lock_guard lock(captures_mutex);
  bool any = false;
  for (const std::weak_ptr<Stream>& weak : global_captures()) {
    auto stream = weak.lock();
    if (!stream) continue;
    Stream::Capture capture = stream->capture();
    if (capture.status == CU_STREAM_CAPTURE_STATUS_NONE) continue;
    capture.status = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
    stream->set_capture(capture);
    any = true;
  }
  return any ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

}  // namespace fake
