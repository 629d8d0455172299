// Entry points: streams (create, destroy, query, synchronise, attributes), host functions and
// callbacks, waits on events. Each stream-taking entry point comes in the legacy form (handle 0 is
// the legacy default stream) and, where NVIDIA exports one, the _ptsz form (0 is the calling thread's
// per-thread default stream).
#include <algorithm>

#include "api_guard.hpp"
#include "capture_rules.hpp"
#include "driver.hpp"
#include "event.hpp"
#include "stream_ops.hpp"

namespace fake {
namespace {

constexpr DefaultStream kLegacy = DefaultStream::legacy;
constexpr DefaultStream kPerThread = DefaultStream::per_thread;

CUresult stream_create(CUstream* out, unsigned flags, int priority) {
  Context* context = nullptr;
  if (CUresult status = require_current_context(context); status != CUDA_SUCCESS) return status;
  if (out == nullptr || (flags & ~static_cast<unsigned>(CU_STREAM_NON_BLOCKING)) != 0) return CUDA_ERROR_INVALID_VALUE;
  priority = std::clamp(priority, -5, 0);  // the range cuCtxGetStreamPriorityRange reports
  *out = Driver::instance().register_stream(context->create_stream(flags, priority));
  return CUDA_SUCCESS;
}

CUresult stream_destroy(CUstream handle) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (handle == nullptr || handle == CU_STREAM_LEGACY || handle == CU_STREAM_PER_THREAD) return CUDA_ERROR_INVALID_HANDLE;
  auto stream = Driver::instance().unregister_stream(handle);
  if (!stream) return CUDA_ERROR_INVALID_HANDLE;
  stream->close();  // pending work still runs; the worker ends after it
  return CUDA_SUCCESS;
}

CUresult stream_query(CUstream handle, DefaultStream default_stream) {
  std::shared_ptr<Stream> stream;
  if (CUresult status = resolve_stream(handle, default_stream, stream); status != CUDA_SUCCESS) return status;
  if (capturing(stream)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (CUresult refused = refuse_during_global_capture(); refused != CUDA_SUCCESS) return refused;
  return stream->idle() ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult stream_synchronize(CUstream handle, DefaultStream default_stream) {
  std::shared_ptr<Stream> stream;
  if (CUresult status = resolve_stream(handle, default_stream, stream); status != CUDA_SUCCESS) return status;
  if (capturing(stream)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  stream->drain();
  return CUDA_SUCCESS;
}

template <class Read>
CUresult stream_read(CUstream handle, DefaultStream default_stream, Read&& read) {
  std::shared_ptr<Stream> stream;
  if (CUresult status = resolve_stream(handle, default_stream, stream); status != CUDA_SUCCESS) return status;
  return read(*stream);
}

// cuStreamGetFlags and cuStreamGetId of a capturing stream: refused, and the capture invalidated.
CUresult refuse_own_capture(Stream& stream) {
  Stream::Capture capture = stream.capture();
  capture.status = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
  stream.set_capture(capture);
  return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

CUresult stream_get_flags(CUstream handle, DefaultStream default_stream, unsigned* flags) {
  if (flags == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return stream_read(handle, default_stream, [&](Stream& stream) {
    if (stream.capture().status != CU_STREAM_CAPTURE_STATUS_NONE) return refuse_own_capture(stream);
    *flags = stream.flags();
    return CUDA_SUCCESS;
  });
}

CUresult stream_get_priority(CUstream handle, DefaultStream default_stream, int* priority) {
  if (priority == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return stream_read(handle, default_stream, [&](Stream& stream) {
    *priority = stream.priority();
    return CUDA_SUCCESS;
  });
}

CUresult stream_get_id(CUstream handle, DefaultStream default_stream, unsigned long long* id) {
  if (id == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return stream_read(handle, default_stream, [&](Stream& stream) {
    if (stream.capture().status != CU_STREAM_CAPTURE_STATUS_NONE) return refuse_own_capture(stream);
    *id = stream.id();
    return CUDA_SUCCESS;
  });
}

CUresult stream_get_ctx(CUstream handle, DefaultStream default_stream, CUcontext* pctx, CUgreenCtx* green) {
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return stream_read(handle, default_stream, [&](Stream& stream) {
    *pctx = stream.context()->handle();
    if (green != nullptr) *green = nullptr;
    return CUDA_SUCCESS;
  });
}

CUresult stream_get_device(CUstream handle, DefaultStream default_stream, CUdevice* device) {
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return stream_read(handle, default_stream, [&](Stream& stream) {
    *device = stream.context()->device();
    return CUDA_SUCCESS;
  });
}

CUresult stream_wait_event(CUstream handle, DefaultStream default_stream, CUevent event_handle, unsigned flags) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if ((flags & ~static_cast<unsigned>(CU_EVENT_WAIT_EXTERNAL)) != 0) return CUDA_ERROR_INVALID_VALUE;
  auto event = find_event(event_handle);
  if (!event) return CUDA_ERROR_INVALID_HANDLE;
  std::shared_ptr<Stream> stream;
  if (CUresult status = resolve_stream(handle, default_stream, stream); status != CUDA_SUCCESS) return status;
  auto mark = event->mark();
  if (!mark || mark->stream == stream || mark->stream->reached(mark->ticket)) return CUDA_SUCCESS;
  return submit_to_stream(handle, default_stream, nullptr, {TicketWait{mark->stream, mark->ticket}});
}

CUresult launch_host_func(CUstream handle, DefaultStream default_stream, CUhostFn fn, void* user_data) {
  if (fn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return submit_to_stream(handle, default_stream, [fn, user_data] { fn(user_data); });
}

CUresult add_callback(CUstream handle, DefaultStream default_stream, CUstreamCallback callback, void* user_data,
                      unsigned flags) {
  if (callback == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return submit_to_stream(handle, default_stream,
                          [handle, callback, user_data] { callback(handle, CUDA_SUCCESS, user_data); });
}

}  // namespace
}  // namespace fake

using namespace fake;

#undef cuStreamDestroy
FAKE_EXPORT CUresult cuStreamDestroy(CUstream hStream);
FAKE_EXPORT CUresult cuStreamGetCtx_v2(CUstream hStream, CUcontext* pCtx, CUgreenCtx* pGreenCtx);
FAKE_EXPORT CUresult cuStreamSynchronize_ptsz(CUstream hStream);
FAKE_EXPORT CUresult cuStreamQuery_ptsz(CUstream hStream);
FAKE_EXPORT CUresult cuStreamGetFlags_ptsz(CUstream hStream, unsigned int* flags);
FAKE_EXPORT CUresult cuStreamGetPriority_ptsz(CUstream hStream, int* priority);
FAKE_EXPORT CUresult cuStreamGetId_ptsz(CUstream hStream, unsigned long long* streamId);
FAKE_EXPORT CUresult cuStreamGetCtx_ptsz(CUstream hStream, CUcontext* pctx);
FAKE_EXPORT CUresult cuStreamGetCtx_v2_ptsz(CUstream hStream, CUcontext* pCtx, CUgreenCtx* pGreenCtx);
FAKE_EXPORT CUresult cuStreamGetDevice_ptsz(CUstream hStream, CUdevice* device);
FAKE_EXPORT CUresult cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent, unsigned int Flags);
FAKE_EXPORT CUresult cuLaunchHostFunc_ptsz(CUstream hStream, CUhostFn fn, void* userData);
FAKE_EXPORT CUresult cuStreamAddCallback_ptsz(CUstream hStream, CUstreamCallback callback, void* userData,
                                              unsigned int flags);

FAKE_EXPORT CUresult cuStreamCreate(CUstream* phStream, unsigned int Flags) { FAKE_ENTRY(stream_create(phStream, Flags, 0)); }
FAKE_EXPORT CUresult cuStreamCreateWithPriority(CUstream* phStream, unsigned int flags, int priority) {
  FAKE_ENTRY(stream_create(phStream, flags, priority));
}
FAKE_EXPORT CUresult cuStreamDestroy(CUstream hStream) { FAKE_ENTRY(stream_destroy(hStream)); }
FAKE_EXPORT CUresult cuStreamDestroy_v2(CUstream hStream) { FAKE_ENTRY(stream_destroy(hStream)); }

FAKE_EXPORT CUresult cuStreamSynchronize(CUstream hStream) { FAKE_ENTRY(stream_synchronize(hStream, kLegacy)); }
FAKE_EXPORT CUresult cuStreamSynchronize_ptsz(CUstream hStream) { FAKE_ENTRY(stream_synchronize(hStream, kPerThread)); }
FAKE_EXPORT CUresult cuStreamQuery(CUstream hStream) { FAKE_ENTRY(stream_query(hStream, kLegacy)); }
FAKE_EXPORT CUresult cuStreamQuery_ptsz(CUstream hStream) { FAKE_ENTRY(stream_query(hStream, kPerThread)); }

FAKE_EXPORT CUresult cuStreamGetFlags(CUstream hStream, unsigned int* flags) {
  FAKE_ENTRY(stream_get_flags(hStream, kLegacy, flags));
}
FAKE_EXPORT CUresult cuStreamGetFlags_ptsz(CUstream hStream, unsigned int* flags) {
  FAKE_ENTRY(stream_get_flags(hStream, kPerThread, flags));
}
FAKE_EXPORT CUresult cuStreamGetPriority(CUstream hStream, int* priority) {
  FAKE_ENTRY(stream_get_priority(hStream, kLegacy, priority));
}
FAKE_EXPORT CUresult cuStreamGetPriority_ptsz(CUstream hStream, int* priority) {
  FAKE_ENTRY(stream_get_priority(hStream, kPerThread, priority));
}
FAKE_EXPORT CUresult cuStreamGetId(CUstream hStream, unsigned long long* streamId) {
  FAKE_ENTRY(stream_get_id(hStream, kLegacy, streamId));
}
FAKE_EXPORT CUresult cuStreamGetId_ptsz(CUstream hStream, unsigned long long* streamId) {
  FAKE_ENTRY(stream_get_id(hStream, kPerThread, streamId));
}
FAKE_EXPORT CUresult cuStreamGetCtx(CUstream hStream, CUcontext* pctx) {
  FAKE_ENTRY(stream_get_ctx(hStream, kLegacy, pctx, nullptr));
}
FAKE_EXPORT CUresult cuStreamGetCtx_ptsz(CUstream hStream, CUcontext* pctx) {
  FAKE_ENTRY(stream_get_ctx(hStream, kPerThread, pctx, nullptr));
}
FAKE_EXPORT CUresult cuStreamGetCtx_v2(CUstream hStream, CUcontext* pCtx, CUgreenCtx* pGreenCtx) {
  FAKE_ENTRY(stream_get_ctx(hStream, kLegacy, pCtx, pGreenCtx));
}
FAKE_EXPORT CUresult cuStreamGetCtx_v2_ptsz(CUstream hStream, CUcontext* pCtx, CUgreenCtx* pGreenCtx) {
  FAKE_ENTRY(stream_get_ctx(hStream, kPerThread, pCtx, pGreenCtx));
}
FAKE_EXPORT CUresult cuStreamGetDevice(CUstream hStream, CUdevice* device) {
  FAKE_ENTRY(stream_get_device(hStream, kLegacy, device));
}
FAKE_EXPORT CUresult cuStreamGetDevice_ptsz(CUstream hStream, CUdevice* device) {
  FAKE_ENTRY(stream_get_device(hStream, kPerThread, device));
}

FAKE_EXPORT CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags) {
  FAKE_ENTRY(stream_wait_event(hStream, kLegacy, hEvent, Flags));
}
FAKE_EXPORT CUresult cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent, unsigned int Flags) {
  FAKE_ENTRY(stream_wait_event(hStream, kPerThread, hEvent, Flags));
}
FAKE_EXPORT CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void* userData) {
  FAKE_ENTRY(launch_host_func(hStream, kLegacy, fn, userData));
}
FAKE_EXPORT CUresult cuLaunchHostFunc_ptsz(CUstream hStream, CUhostFn fn, void* userData) {
  FAKE_ENTRY(launch_host_func(hStream, kPerThread, fn, userData));
}
FAKE_EXPORT CUresult cuStreamAddCallback(CUstream hStream, CUstreamCallback callback, void* userData,
                                         unsigned int flags) {
  FAKE_ENTRY(add_callback(hStream, kLegacy, callback, userData, flags));
}
FAKE_EXPORT CUresult cuStreamAddCallback_ptsz(CUstream hStream, CUstreamCallback callback, void* userData,
                                              unsigned int flags) {
  FAKE_ENTRY(add_callback(hStream, kPerThread, callback, userData, flags));
}
