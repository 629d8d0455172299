// Entry points: events.
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>

#include "api_guard.hpp"
#include "capture_rules.hpp"
#include "driver.hpp"
#include "event.hpp"
#include "stream_ops.hpp"

namespace fake {
namespace {

constexpr unsigned kEventFlagMask = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;

CUresult event_create(CUevent* out, unsigned flags) {
  Context* context = nullptr;
  if (CUresult status = require_current_context(context); status != CUDA_SUCCESS) return status;
  if (out == nullptr || (flags & ~kEventFlagMask) != 0) return CUDA_ERROR_INVALID_VALUE;
  // Interprocess events must also disable timing, as in CUDA.
  if ((flags & CU_EVENT_INTERPROCESS) != 0 && (flags & CU_EVENT_DISABLE_TIMING) == 0) return CUDA_ERROR_INVALID_VALUE;
  *out = register_event(std::make_shared<Event>(context, flags));
  return CUDA_SUCCESS;
}

CUresult event_destroy(CUevent handle) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  return unregister_event(handle) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult event_record(CUevent handle, CUstream stream_handle, DefaultStream default_stream, unsigned flags) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if ((flags & ~static_cast<unsigned>(CU_EVENT_RECORD_EXTERNAL)) != 0) return CUDA_ERROR_INVALID_VALUE;
  auto event = find_event(handle);
  if (!event) return CUDA_ERROR_INVALID_HANDLE;
  std::shared_ptr<Stream> stream;
  if (CUresult status = resolve_stream(stream_handle, default_stream, stream); status != CUDA_SUCCESS) return status;
  if (stream->context() != event->context()) return CUDA_ERROR_INVALID_HANDLE;  // cuda.h: "must be from the same context"
  if (capturing(stream)) return CUDA_SUCCESS;  // becomes a graph node in CUDA; the fake keeps no graph
  auto mark = std::make_shared<EventMark>();
  mark->stream = stream;
  mark->ticket = stream->context()->submit(stream, [mark_to_stamp = std::weak_ptr<EventMark>(mark)] {
    if (auto stamped = mark_to_stamp.lock()) stamped->reached_at = std::chrono::steady_clock::now();
  });
  event->set_mark(std::move(mark));
  return CUDA_SUCCESS;
}

CUresult event_query(CUevent handle) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  auto event = find_event(handle);
  if (!event) return CUDA_ERROR_INVALID_HANDLE;
  if (CUresult refused = refuse_during_global_capture(); refused != CUDA_SUCCESS) return refused;
  auto mark = event->mark();
  return !mark || mark->stream->reached(mark->ticket) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult event_synchronize(CUevent handle) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  auto event = find_event(handle);
  if (!event) return CUDA_ERROR_INVALID_HANDLE;
  if (auto mark = event->mark()) mark->stream->wait_until_reached(mark->ticket);
  return CUDA_SUCCESS;
}

CUresult event_elapsed_time(float* milliseconds, CUevent start_handle, CUevent end_handle) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (milliseconds == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto start = find_event(start_handle);
  auto end = find_event(end_handle);
  if (!start || !end) return CUDA_ERROR_INVALID_HANDLE;
  if (((start->flags() | end->flags()) & CU_EVENT_DISABLE_TIMING) != 0) return CUDA_ERROR_INVALID_HANDLE;
  auto start_mark = start->mark();
  auto end_mark = end->mark();
  if (!start_mark || !end_mark) return CUDA_ERROR_INVALID_HANDLE;  // never recorded
  if (!start_mark->stream->reached(start_mark->ticket) || !end_mark->stream->reached(end_mark->ticket)) {
    return CUDA_ERROR_NOT_READY;
  }
  const std::chrono::duration<float, std::milli> elapsed = end_mark->reached_at - start_mark->reached_at;
  *milliseconds = elapsed.count();
  return CUDA_SUCCESS;
}

// Interprocess events. Each process has a fake of its own, which shares no event state with
// another's: a handle names the process that exported it and the event, and the event opened from
// it in another process is a local event of that process (created with DISABLE_TIMING, as CUDA
// says the opened event behaves), whose records the exporter does not see. What the fake keeps of
// CUDA is the handles' life: only an interprocess event has one, and a handle is opened in a
// process other than its exporter (in the exporter INVALID_CONTEXT, as HIP's copy of the API
// documents).
constexpr char kIpcEventMagic[] = "streampool-fake-ipc-event";

struct IpcEventHandleData {
  char magic[sizeof kIpcEventMagic] = {};
  std::int64_t process = 0;
  std::uint64_t event = 0;
};
static_assert(sizeof(IpcEventHandleData) <= CU_IPC_HANDLE_SIZE);

CUresult ipc_get_event_handle(CUipcEventHandle* out, CUevent handle) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto event = find_event(handle);
  if (!event) return CUDA_ERROR_INVALID_HANDLE;
  if ((event->flags() & CU_EVENT_INTERPROCESS) == 0) return CUDA_ERROR_INVALID_VALUE;
  IpcEventHandleData data;
  std::memcpy(data.magic, kIpcEventMagic, sizeof kIpcEventMagic);
  data.process = getpid();
  data.event = reinterpret_cast<std::uintptr_t>(handle);
  *out = CUipcEventHandle{};
  std::memcpy(out->reserved, &data, sizeof data);
  return CUDA_SUCCESS;
}

CUresult ipc_open_event_handle(CUevent* out, const CUipcEventHandle& handle) {
  Context* context = nullptr;
  if (CUresult status = require_current_context(context); status != CUDA_SUCCESS) return status;
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  IpcEventHandleData data;
  std::memcpy(&data, handle.reserved, sizeof data);
  if (std::memcmp(data.magic, kIpcEventMagic, sizeof kIpcEventMagic) != 0) return CUDA_ERROR_INVALID_VALUE;
  if (data.process == getpid()) return CUDA_ERROR_INVALID_CONTEXT;
  *out = register_event(std::make_shared<Event>(context, CU_EVENT_DISABLE_TIMING));
  return CUDA_SUCCESS;
}

}  // namespace
}  // namespace fake

using namespace fake;

#undef cuEventDestroy
#undef cuEventElapsedTime
FAKE_EXPORT CUresult cuEventDestroy(CUevent hEvent);
FAKE_EXPORT CUresult cuEventElapsedTime(float* pMilliseconds, CUevent hStart, CUevent hEnd);
FAKE_EXPORT CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream);
FAKE_EXPORT CUresult cuEventRecordWithFlags_ptsz(CUevent hEvent, CUstream hStream, unsigned int flags);

FAKE_EXPORT CUresult cuEventCreate(CUevent* phEvent, unsigned int Flags) { FAKE_ENTRY(event_create(phEvent, Flags)); }
FAKE_EXPORT CUresult cuEventDestroy(CUevent hEvent) { FAKE_ENTRY(event_destroy(hEvent)); }
FAKE_EXPORT CUresult cuEventDestroy_v2(CUevent hEvent) { FAKE_ENTRY(event_destroy(hEvent)); }
FAKE_EXPORT CUresult cuEventRecord(CUevent hEvent, CUstream hStream) {
  FAKE_ENTRY(event_record(hEvent, hStream, DefaultStream::legacy, 0));
}
FAKE_EXPORT CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream) {
  FAKE_ENTRY(event_record(hEvent, hStream, DefaultStream::per_thread, 0));
}
FAKE_EXPORT CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags) {
  FAKE_ENTRY(event_record(hEvent, hStream, DefaultStream::legacy, flags));
}
FAKE_EXPORT CUresult cuEventRecordWithFlags_ptsz(CUevent hEvent, CUstream hStream, unsigned int flags) {
  FAKE_ENTRY(event_record(hEvent, hStream, DefaultStream::per_thread, flags));
}
FAKE_EXPORT CUresult cuEventQuery(CUevent hEvent) { FAKE_ENTRY(event_query(hEvent)); }
FAKE_EXPORT CUresult cuEventSynchronize(CUevent hEvent) { FAKE_ENTRY(event_synchronize(hEvent)); }
FAKE_EXPORT CUresult cuEventElapsedTime(float* pMilliseconds, CUevent hStart, CUevent hEnd) {
  FAKE_ENTRY(event_elapsed_time(pMilliseconds, hStart, hEnd));
}
FAKE_EXPORT CUresult cuEventElapsedTime_v2(float* pMilliseconds, CUevent hStart, CUevent hEnd) {
  FAKE_ENTRY(event_elapsed_time(pMilliseconds, hStart, hEnd));
}
FAKE_EXPORT CUresult cuIpcGetEventHandle(CUipcEventHandle* pHandle, CUevent event) {
  FAKE_ENTRY(ipc_get_event_handle(pHandle, event));
}
FAKE_EXPORT CUresult cuIpcOpenEventHandle(CUevent* phEvent, CUipcEventHandle handle) {
  FAKE_ENTRY(ipc_open_event_handle(phEvent, handle));
}
