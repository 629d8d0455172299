#include "event_ordering.hpp"

#include <algorithm>
#include <atomic>

#include "capture_tracker.hpp"
#include "device_context.hpp"
#include "driver_table.hpp"
#include "stream_registry.hpp"

namespace streampool::driver {

struct EventOrdering::MarkerRecord {
  CUevent event = nullptr;
  CUcontext context = nullptr;
  std::atomic<bool> context_gone{false};
};

EventOrdering::MarkerRecord* EventOrdering::record_of(core::Marker marker) noexcept {
  return reinterpret_cast<EventOrdering::MarkerRecord*>(marker);
}

core::Status status_from(CUresult result) noexcept {
  switch (result) {
    case CUDA_SUCCESS:
      return core::Status::success;
    case CUDA_ERROR_NOT_READY:
      return core::Status::not_ready;
    case CUDA_ERROR_OUT_OF_MEMORY:
      return core::Status::out_of_memory;
    case CUDA_ERROR_DEINITIALIZED:
      return core::Status::deinitialized;
    case CUDA_ERROR_NOT_SUPPORTED:
      return core::Status::not_supported;
    case CUDA_ERROR_INVALID_VALUE:
    case CUDA_ERROR_INVALID_HANDLE:
      return core::Status::invalid_value;
    default:
      return core::Status::backend_error;
  }
}

EventOrdering::~EventOrdering() {
  std::lock_guard lock(mutex_);
  for (auto& [context, events] : contexts_) {
    for (MarkerRecord* record : events.all) delete record;
  }
}

core::StreamKind EventOrdering::stream_kind(core::StreamKey stream) { return kind_of_key(stream); }

// Always the stream's context (0 if unknown), also while only one context was seen: a stream's
// group is fixed when the engine first sees it, and a context synchronize asks for its group.
std::uintptr_t EventOrdering::stream_group(core::StreamKey stream) { return context_of_key(stream); }

// The registry's flag: it sees every stream the hooks create or are handed (stream_registry.hpp).
const std::atomic<bool>* EventOrdering::implicit_partners() { return &implicit_partners_seen(); }

core::Status EventOrdering::take(CUcontext context, MarkerRecord** record) {
  {
    std::lock_guard lock(mutex_);
    auto it = contexts_.find(context);
    if (it != contexts_.end() && !it->second.free.empty()) {
      *record = it->second.free.back();
      it->second.free.pop_back();
      return core::Status::success;
    }
  }
  const DriverTable& table = real();
  if (table.cuEventCreate == nullptr) return status_from(missing_entry_result());
  CUevent event = nullptr;
  {
    ScopedContext scope(context);
    if (scope.result() != CUDA_SUCCESS) return status_from(scope.result());
    CUresult result = table.cuEventCreate(&event, CU_EVENT_DISABLE_TIMING);
    if (result != CUDA_SUCCESS) return status_from(result);
  }
  try {
    auto* fresh = new MarkerRecord;
    fresh->event = event;
    fresh->context = context;
    std::lock_guard lock(mutex_);
    contexts_[context].all.push_back(fresh);
    *record = fresh;
    return core::Status::success;
  } catch (...) {
    if (table.cuEventDestroy_v2 != nullptr) table.cuEventDestroy_v2(event);
    return core::Status::out_of_memory;
  }
}

namespace {

// Captures streampool cannot see (the pluggable allocator): a query would break a global-mode
// capture of any thread unless this thread's own capture mode is relaxed, which CUDA documents as
// permitting calls that are unsafe during capture; the mode is swapped for the query alone and put
// back. Anything but a clean answer (no such entry, the swap refused, an error) is "not ready": a
// marker proves nothing it cannot show.
core::Status query_relaxed(CUevent event) {
  const DriverTable& table = real();
  if (table.cuEventQuery == nullptr || table.cuThreadExchangeStreamCaptureMode == nullptr) return core::Status::not_ready;
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  if (table.cuThreadExchangeStreamCaptureMode(&mode) != CUDA_SUCCESS) return core::Status::not_ready;
  const CUresult result = table.cuEventQuery(event);
  table.cuThreadExchangeStreamCaptureMode(&mode);
  return result == CUDA_SUCCESS ? core::Status::success : core::Status::not_ready;
}

}  // namespace

// Record, query and wait each run in a CaptureFence (capture_tracker.hpp): a stream that is or may
// be capturing must not see streampool's events (a record there executes nothing, and the marker
// would read complete while the stream's work still runs), and no capture can begin between the
// check and the call.
core::Status EventOrdering::record(core::StreamKey stream, core::Marker* marker) {
  StreamTarget target;
  core::Status status = target_of_key(stream, &target);
  if (!core::ok(status)) return status;
  const CaptureFence fence;
  if (fence.stream_may_capture(target.stream, false)) return core::Status::not_supported;
  const DriverTable& table = real();
  if (table.cuEventRecord == nullptr) return status_from(missing_entry_result());
  MarkerRecord* taken = nullptr;
  status = take(target.context, &taken);
  if (!core::ok(status)) return status;
  CUresult result;
  {
    ScopedContext scope(target.context);
    result = scope.result() == CUDA_SUCCESS ? table.cuEventRecord(taken->event, target.stream) : scope.result();
  }
  if (result != CUDA_SUCCESS) {
    recycle(reinterpret_cast<core::Marker>(taken));
    return status_from(result);
  }
  *marker = reinterpret_cast<core::Marker>(taken);
  return core::Status::success;
}

core::Status EventOrdering::query(core::Marker marker) {
  MarkerRecord* record = record_of(marker);
  if (record == nullptr) return core::Status::invalid_value;
  if (record->context_gone.load(std::memory_order_acquire)) return core::Status::success;
  // Measured on driver 580: any cuEventQuery while a global-mode capture is in progress, on any
  // thread, invalidates that capture. The answer waits until no capture is going on or beginning.
  const CaptureFence fence;
  if (fence.any_capture()) {
    if (fence.admitted() && captures_unseen()) return query_relaxed(record->event);
    return core::Status::not_ready;
  }
  const DriverTable& table = real();
  if (table.cuEventQuery == nullptr) return status_from(missing_entry_result());
  return status_from(table.cuEventQuery(record->event));
}

core::Status EventOrdering::wait(core::StreamKey waiter, core::Marker marker) {
  MarkerRecord* record = record_of(marker);
  if (record == nullptr) return core::Status::invalid_value;
  if (record->context_gone.load(std::memory_order_acquire)) return core::Status::success;
  StreamTarget target;
  core::Status status = target_of_key(waiter, &target);
  if (!core::ok(status)) return status;
  const CaptureFence fence;
  if (fence.stream_may_capture(target.stream, false)) return core::Status::not_supported;
  const DriverTable& table = real();
  if (table.cuStreamWaitEvent == nullptr) return status_from(missing_entry_result());
  ScopedContext scope(target.context);
  if (scope.result() != CUDA_SUCCESS) return status_from(scope.result());
  return status_from(table.cuStreamWaitEvent(target.stream, record->event, 0));
}

void EventOrdering::recycle(core::Marker marker) {
  MarkerRecord* record = record_of(marker);
  if (record == nullptr) return;
  std::lock_guard lock(mutex_);
  if (record->context_gone.load(std::memory_order_acquire)) {
    delete record;  // its event died with its context, and no list holds it any more
    return;
  }
  try {
    contexts_[record->context].free.push_back(record);
  } catch (...) {
    // Out of memory: the record stays listed in `all` and is simply not reused.
  }
}

void EventOrdering::context_destroyed(CUcontext context) {
  std::lock_guard lock(mutex_);
  auto it = contexts_.find(context);
  if (it == contexts_.end()) return;
  std::vector<MarkerRecord*>& free = it->second.free;
  for (MarkerRecord* record : it->second.all) {
    bool is_free = std::find(free.begin(), free.end(), record) != free.end();
    if (is_free) {
      delete record;
    } else {
      record->context_gone.store(true, std::memory_order_release);  // deleted when recycled
    }
  }
  contexts_.erase(it);
}

std::size_t EventOrdering::markers_created() const {
  std::lock_guard lock(mutex_);
  std::size_t count = 0;
  for (const auto& [context, events] : contexts_) count += events.all.size();
  return count;
}

}  // namespace streampool::driver
