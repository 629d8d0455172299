// Ordering the program makes, fed to the engine's happens-before tracking. The rule every hook
// here keeps: the tracking changes only after the real call succeeded, and for one event in the
// order the driver saw the calls (see core/happens_before.hpp):
//   cuEventRecord(WithFlags)   Engine::record_event: the event's lock held across the real call;
//                              the event covers the stream's frees made before the call. A record
//                              on a capturing stream, or on a stream streampool cannot name, makes
//                              the event untracked (it may be replayed by a graph);
//   cuStreamWaitEvent          Engine::wait_event: under the event's lock, merged after success
//                              (not when the waiter is capturing: the wait orders graph nodes);
//   stream / event / context synchronize: a ticket before, committed after success (releases:
//                              release thresholds apply); stream / event query: the same, committed
//                              only when the query returned CUDA_SUCCESS, without releasing. An
//                              event's ticket counts only if no record of it came in between. A
//                              context's ticket covers the streams of that context only.
// Lifetimes (creation, destruction, contexts ending) are in lifetime_hooks.cpp; records the
// hooks here do not see are in untracked_record_hooks.cpp.
#include "call_counters.hpp"
#include "driver/capture_tracker.hpp"
#include "process_state.hpp"
#include "route_cache.hpp"
#include "tracking.hpp"
#include "report/trace_points.hpp"

namespace streampool::interpose {

namespace {

template <class RealCall>
CUresult record_event(Hook hook, CUevent event, CUstream stream, bool per_thread, RealCall real_call) noexcept {
  count_call(hook);
  HookScope scope;
  if (bypass(scope) || event == nullptr) return real_call();
  RouteEntry* route = nullptr;
  const CUresult resolved = find_route(stream, per_thread, &route);
  if (resolved == CUDA_ERROR_INVALID_HANDLE) return resolved;  // the driver would crash on it
  // A record streampool cannot place in a stream's order (no route, or into a capture) still
  // happens, and leaves the event proving nothing. The fence keeps a capture from beginning on
  // another thread between the check and the real record.
  const driver::CaptureFence fence;
  const bool tracked = resolved == CUDA_SUCCESS && !fence.stream_may_capture(stream, per_thread);
  const core::StreamKey key = tracked ? route->key : 0;
  CUresult result = CUDA_SUCCESS;
  bool called = false;
  const auto real_record = [&] {
    result = real_call();
    called = true;
    return result == CUDA_SUCCESS;
  };
  try {
    if (tracked) {
      engine().record_event(event_key(event), key, real_record);
    } else {
      engine().record_untracked(event_key(event), real_record);
    }
  } catch (...) {
    if (!called) real_record();
    untrack_event(event);
  }
  driver::check_captures_after(hook_name(hook));
  return result;
}

template <class RealCall>
CUresult wait_event(Hook hook, CUstream stream, CUevent event, bool per_thread, RealCall real_call) noexcept {
  count_call(hook);
  HookScope scope;
  if (bypass(scope)) return real_call();
  RouteEntry* route = nullptr;
  const CUresult resolved = find_route(stream, per_thread, &route);
  if (resolved == CUDA_ERROR_INVALID_HANDLE) return resolved;
  // An untracked wait only loses ordering streampool could have used: nothing to keep in step.
  if (resolved != CUDA_SUCCESS || event == nullptr) return real_call();
  const core::StreamKey waiter = route->key;  // the entry may move later
  CUresult result = CUDA_SUCCESS;
  bool called = false;
  const driver::CaptureFence fence;  // no capture of the waiter begins between the wait and the check
  try {
    engine().wait_event(waiter, event_key(event), [&] {
      result = real_call();
      called = true;
      // The waiter joins a capture by this very wait: then it orders graph nodes, not the stream.
      return result == CUDA_SUCCESS && !fence.stream_may_capture(stream, per_thread);
    });
  } catch (...) {
    if (!called) result = real_call();
  }
  driver::check_captures_after(hook_name(hook));
  return result;
}

template <class RealCall>
CUresult stream_sync_or_query(Hook hook, CUstream stream, bool per_thread, bool releases, RealCall real_call) noexcept {
  count_call(hook);
  HookScope scope;
  if (bypass(scope)) return real_call();
  RouteEntry* route = nullptr;
  CUresult resolved = find_route(stream, per_thread, &route);
  if (resolved == CUDA_ERROR_INVALID_HANDLE) return resolved;
  if (resolved != CUDA_SUCCESS) return real_call();
  const core::StreamKey key = route->key;
  if (releases) return call_under_ticket([key] { return engine().ticket_for_stream(key, true); }, real_call);
  // A query: not ready while the marker its ticket recorded is (Engine::marker_pending).
  return call_under_ticket([key] { return engine().ticket_for_stream(key, false); }, [key, &real_call] {
    const CUresult result = real_call();
    return result == CUDA_SUCCESS && engine().marker_pending(key) ? CUDA_ERROR_NOT_READY : result;
  });
}

template <class RealCall>
CUresult event_sync_or_query(Hook hook, CUevent event, bool releases, RealCall real_call) noexcept {
  count_call(hook);
  HookScope scope;
  if (bypass(scope) || event == nullptr) return real_call();
  return call_under_ticket([event, releases] { return engine().ticket_for_event(event_key(event), releases); },
                           real_call);
}

template <class RealCall>
CUresult context_sync(Hook hook, CUcontext context, RealCall real_call) noexcept {
  count_call(hook);
  HookScope scope;
  if (bypass(scope)) return real_call();
  return call_under_ticket(
      [context] { return ticket_for_context(context != nullptr ? context : current_context(), true); }, real_call);
}

}  // namespace

}  // namespace streampool::interpose

using streampool::interpose::Hook;
namespace sp = streampool::interpose;
using streampool::driver::real;

// --- event records and waits ---------------------------------------------------------------------

STREAMPOOL_HOOK CUresult cuEventRecord(CUevent hEvent, CUstream hStream) {
  return sp::traced(streampool::trace::Op::event_record, 0, hStream, 0, 0, reinterpret_cast<std::uintptr_t>(hEvent), [&] {
    return sp::record_event(Hook::cuEventRecord, hEvent, hStream, false,
                          [=] { return sp::forward(real().cuEventRecord, hEvent, hStream); });
  });
}

STREAMPOOL_HOOK CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream) {
  return sp::traced(streampool::trace::Op::event_record, streampool::trace::kPerThreadVariant, hStream, 0, 0, reinterpret_cast<std::uintptr_t>(hEvent), [&] {
    return sp::record_event(Hook::cuEventRecord_ptsz, hEvent, hStream, true,
                          [=] { return sp::forward(real().cuEventRecord_ptsz, hEvent, hStream); });
  });
}

STREAMPOOL_HOOK CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags) {
  return sp::traced(streampool::trace::Op::event_record, 0, hStream, 0, 0, reinterpret_cast<std::uintptr_t>(hEvent), [&] {
    return sp::record_event(Hook::cuEventRecordWithFlags, hEvent, hStream, false,
                          [=] { return sp::forward(real().cuEventRecordWithFlags, hEvent, hStream, flags); });
  });
}

STREAMPOOL_HOOK CUresult cuEventRecordWithFlags_ptsz(CUevent hEvent, CUstream hStream, unsigned int flags) {
  return sp::traced(streampool::trace::Op::event_record, streampool::trace::kPerThreadVariant, hStream, 0, 0, reinterpret_cast<std::uintptr_t>(hEvent), [&] {
    return sp::record_event(Hook::cuEventRecordWithFlags_ptsz, hEvent, hStream, true,
                          [=] { return sp::forward(real().cuEventRecordWithFlags_ptsz, hEvent, hStream, flags); });
  });
}

STREAMPOOL_HOOK CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags) {
  return sp::traced(streampool::trace::Op::stream_wait_event, 0, hStream, 0, 0, reinterpret_cast<std::uintptr_t>(hEvent), [&] {
    return sp::wait_event(Hook::cuStreamWaitEvent, hStream, hEvent, false,
                        [=] { return sp::forward(real().cuStreamWaitEvent, hStream, hEvent, Flags); });
  });
}

STREAMPOOL_HOOK CUresult cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent, unsigned int Flags) {
  return sp::traced(streampool::trace::Op::stream_wait_event, streampool::trace::kPerThreadVariant, hStream, 0, 0, reinterpret_cast<std::uintptr_t>(hEvent), [&] {
    return sp::wait_event(Hook::cuStreamWaitEvent_ptsz, hStream, hEvent, true,
                        [=] { return sp::forward(real().cuStreamWaitEvent_ptsz, hStream, hEvent, Flags); });
  });
}

// --- host synchronisation ------------------------------------------------------------------------

STREAMPOOL_HOOK CUresult cuStreamSynchronize(CUstream hStream) {
  return sp::traced(streampool::trace::Op::stream_synchronize, 0, hStream, 0, 0, 0, [&] {
    return sp::stream_sync_or_query(Hook::cuStreamSynchronize, hStream, false, true,
                                  [=] { return sp::forward(real().cuStreamSynchronize, hStream); });
  });
}

STREAMPOOL_HOOK CUresult cuStreamSynchronize_ptsz(CUstream hStream) {
  return sp::traced(streampool::trace::Op::stream_synchronize, streampool::trace::kPerThreadVariant, hStream, 0, 0, 0, [&] {
    return sp::stream_sync_or_query(Hook::cuStreamSynchronize_ptsz, hStream, true, true,
                                  [=] { return sp::forward(real().cuStreamSynchronize_ptsz, hStream); });
  });
}

STREAMPOOL_HOOK CUresult cuStreamQuery(CUstream hStream) {
  return sp::traced(streampool::trace::Op::stream_query, 0, hStream, 0, 0, 0, [&] {
    return sp::stream_sync_or_query(Hook::cuStreamQuery, hStream, false, false,
                                  [=] { return sp::forward(real().cuStreamQuery, hStream); });
  });
}

STREAMPOOL_HOOK CUresult cuStreamQuery_ptsz(CUstream hStream) {
  return sp::traced(streampool::trace::Op::stream_query, streampool::trace::kPerThreadVariant, hStream, 0, 0, 0, [&] {
    return sp::stream_sync_or_query(Hook::cuStreamQuery_ptsz, hStream, true, false,
                                  [=] { return sp::forward(real().cuStreamQuery_ptsz, hStream); });
  });
}

STREAMPOOL_HOOK CUresult cuEventSynchronize(CUevent hEvent) {
  return sp::traced(streampool::trace::Op::event_synchronize, 0, nullptr, 0, 0, reinterpret_cast<std::uintptr_t>(hEvent), [&] {
    return sp::event_sync_or_query(Hook::cuEventSynchronize, hEvent, true,
                                 [=] { return sp::forward(real().cuEventSynchronize, hEvent); });
  });
}

STREAMPOOL_HOOK CUresult cuEventQuery(CUevent hEvent) {
  return sp::traced(streampool::trace::Op::event_query, 0, nullptr, 0, 0, reinterpret_cast<std::uintptr_t>(hEvent), [&] {
    return sp::event_sync_or_query(Hook::cuEventQuery, hEvent, false,
                                 [=] { return sp::forward(real().cuEventQuery, hEvent); });
  });
}

STREAMPOOL_HOOK CUresult cuCtxSynchronize(void) {
  return sp::traced(streampool::trace::Op::context_synchronize, 0, nullptr, 0, 0, 0, [&] {
    return sp::context_sync(Hook::cuCtxSynchronize, nullptr, [] { return sp::forward(real().cuCtxSynchronize); });
  });
}

STREAMPOOL_HOOK CUresult cuCtxSynchronize_v2(CUcontext ctx) {
  return sp::traced(streampool::trace::Op::context_synchronize, 0, nullptr, 0, 0, reinterpret_cast<std::uintptr_t>(ctx), [&] {
    return sp::context_sync(Hook::cuCtxSynchronize_v2, ctx,
                          [=] { return sp::forward(real().cuCtxSynchronize_v2, ctx); });
  });
}
