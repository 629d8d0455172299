// Ordering the program makes, fed to the engine's happens-before tracking:
//   cuEventRecord(WithFlags)   Engine::event_recorded before the real call (the event then covers
//                              every free made so far on that stream);
//   cuStreamWaitEvent          Engine::stream_waited after the real call succeeded;
//   stream / event / context synchronize: a ticket before, committed after success (releases:
//                              release thresholds apply); stream / event query: the same, committed
//                              only when the query returned CUDA_SUCCESS, without releasing;
//   cuStreamDestroy, cuEventDestroy: the engine forgets the key before the handle can be reused.
// Nothing is reported for a capturing stream: a record or wait in a capture orders graph nodes,
// not the stream's real work.
//
// Contexts: cuCtxDestroy and cuDevicePrimaryCtxReset end every stream of the context. Streampool
// takes a ticket for each of them first and commits it once the driver destroyed the context
// (destruction waits for the context's work), marks its markers complete, and then reports the
// streams destroyed. Pools are per device, not per context, and stay valid (their VMM memory is
// not owned by any context); after a primary context reset each pool of that device is trimmed
// to what its live allocations need. Chunk-backed device pools (devices without VMM) lose their
// cuMemAlloc chunks with the context: not handled yet.
#include <vector>

#include "call_counters.hpp"
#include "driver/capture_tracker.hpp"
#include "driver/device_context.hpp"
#include "process_state.hpp"
#include "route_cache.hpp"
#include "driver/stream_registry.hpp"

namespace streampool::interpose {

namespace {

core::EventKey event_key(CUevent event) noexcept { return reinterpret_cast<core::EventKey>(event); }

bool capturing(CUstream stream, bool per_thread) noexcept {
  bool active = false;
  return driver::stream_capturing(stream, per_thread, &active) != CUDA_SUCCESS || active;
}

// The ticket covering what a synchronize of `context` waits for. With one context seen, that is
// everything the engine tracks; with several, the streams of that context: the Ordering's stream
// group of a stream is its context, so one ticket for the group.
core::SyncTicket ticket_for_context(CUcontext context, bool releases) {
  if (driver::contexts_seen() <= 1) return engine().ticket_for_all(releases);
  return engine().ticket_for_group(reinterpret_cast<std::uintptr_t>(context), releases);
}

void commit_all(const std::vector<core::SyncTicket>& tickets) {
  for (const core::SyncTicket& ticket : tickets) engine().commit(ticket);
}

CUcontext current_context() noexcept {
  CUcontext context = nullptr;
  if (forward(driver::real().cuCtxGetCurrent, &context) != CUDA_SUCCESS) return nullptr;
  return context;
}

// The host synchronisations and queries: a ticket taken before the real call (it snapshots what
// the call will have waited for), committed only when the call returned CUDA_SUCCESS. When the
// engine cannot take the ticket (it threw), the call still happens, untracked.
template <class TakeTicket, class RealCall>
CUresult call_under_ticket(TakeTicket take_ticket, RealCall real_call) noexcept {
  try {
    core::SyncTicket ticket = take_ticket();
    CUresult result = real_call();
    if (result == CUDA_SUCCESS) engine().commit(ticket);
    return result;
  } catch (...) {
    return real_call();
  }
}

template <class RealCall>
CUresult record_event(Hook hook, CUevent event, CUstream stream, bool per_thread, RealCall real_call) noexcept {
  count_call(hook);
  HookScope scope;
  if (bypass(scope)) return real_call();
  try {
    RouteEntry* route = nullptr;
    CUresult result = find_route(stream, per_thread, &route);
    if (result == CUDA_ERROR_INVALID_HANDLE) return result;  // the driver would crash on it
    if (result == CUDA_SUCCESS && event != nullptr && !capturing(stream, per_thread)) {
      engine().event_recorded(event_key(event), route->key);
    }
  } catch (...) {
    // Tracking is lost for this event (it then proves nothing); the record itself still happens.
  }
  return real_call();
}

template <class RealCall>
CUresult wait_event(Hook hook, CUstream stream, CUevent event, bool per_thread, RealCall real_call) noexcept {
  count_call(hook);
  HookScope scope;
  if (bypass(scope)) return real_call();
  RouteEntry* route = nullptr;
  CUresult resolved = find_route(stream, per_thread, &route);
  if (resolved == CUDA_ERROR_INVALID_HANDLE) return resolved;
  const core::StreamKey waiter = resolved == CUDA_SUCCESS ? route->key : 0;  // the entry may move later
  CUresult result = real_call();
  if (result != CUDA_SUCCESS || resolved != CUDA_SUCCESS || event == nullptr) return result;
  try {
    if (!capturing(stream, per_thread)) engine().stream_waited(waiter, event_key(event));
  } catch (...) {
  }
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
  return call_under_ticket([key, releases] { return engine().ticket_for_stream(key, releases); }, real_call);
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

template <class RealCall>
CUresult stream_destroy(Hook hook, CUstream stream, RealCall real_call) noexcept {
  count_call(hook);
  HookScope scope;
  if (bypass(scope)) return real_call();
  core::StreamKey key = 0;
  bool known = driver::known_stream_key(stream, false, &key);
  try {
    if (known) engine().stream_destroyed(key);
  } catch (...) {
  }
  CUresult result = real_call();
  if (result == CUDA_SUCCESS && known) driver::forget_stream(stream);
  return result;
}

template <class RealCall>
CUresult event_destroy(Hook hook, CUevent event, RealCall real_call) noexcept {
  count_call(hook);
  HookScope scope;
  if (bypass(scope)) return real_call();
  try {
    if (event != nullptr) engine().event_destroyed(event_key(event));
  } catch (...) {
  }
  return real_call();
}

// cuCtxDestroy / cuDevicePrimaryCtxReset: see the file comment.
template <class RealCall>
CUresult context_end(CUcontext context, RealCall real_call) noexcept {
  if (context == nullptr) return real_call();
  std::vector<core::StreamKey> keys;
  std::vector<core::SyncTicket> tickets;
  try {
    keys = driver::keys_of_context(context);
    for (core::StreamKey key : keys) tickets.push_back(engine().ticket_for_stream(key, true));
  } catch (...) {
    keys.clear();
    tickets.clear();
  }
  CUresult result = real_call();
  if (result != CUDA_SUCCESS) return result;
  try {
    commit_all(tickets);
    state().ordering.context_destroyed(context);
    driver::forget_context(context);
    for (core::StreamKey key : keys) engine().stream_destroyed(key);
  } catch (...) {
  }
  return result;
}

CUresult context_destroy(CUcontext context) noexcept {
  count_call(Hook::cuCtxDestroy_v2);
  auto real_call = [context] { return forward(driver::real().cuCtxDestroy_v2, context); };
  HookScope scope;
  if (bypass(scope)) return real_call();
  return context_end(context, real_call);
}

CUresult primary_context_reset(CUdevice device) noexcept {
  count_call(Hook::cuDevicePrimaryCtxReset_v2);
  auto real_call = [device] { return forward(driver::real().cuDevicePrimaryCtxReset_v2, device); };
  HookScope scope;
  if (bypass(scope)) return real_call();
  CUcontext primary = nullptr;
  if (driver::valid_device(device) && driver::primary_context(device, &primary) != CUDA_SUCCESS) primary = nullptr;
  CUresult result = context_end(primary, real_call);
  if (result != CUDA_SUCCESS) return result;
  try {
    // In the visit: a pool destroyed meanwhile on another thread is not reclaimed under it.
    engine().for_each_pool([device](core::Pool* pool) {
      const core::PoolProps& props = engine().props(pool);
      if (props.kind == core::PoolKind::device && props.location_id == device) engine().trim_to(pool, 0);
    });
  } catch (...) {
  }
  return result;
}

}  // namespace

}  // namespace streampool::interpose

using streampool::interpose::Hook;
namespace sp = streampool::interpose;
using streampool::driver::real;

// --- event records and waits ---------------------------------------------------------------------

STREAMPOOL_HOOK CUresult cuEventRecord(CUevent hEvent, CUstream hStream) {
  return sp::record_event(Hook::cuEventRecord, hEvent, hStream, false,
                          [=] { return sp::forward(real().cuEventRecord, hEvent, hStream); });
}

STREAMPOOL_HOOK CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream) {
  return sp::record_event(Hook::cuEventRecord_ptsz, hEvent, hStream, true,
                          [=] { return sp::forward(real().cuEventRecord_ptsz, hEvent, hStream); });
}

STREAMPOOL_HOOK CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags) {
  return sp::record_event(Hook::cuEventRecordWithFlags, hEvent, hStream, false,
                          [=] { return sp::forward(real().cuEventRecordWithFlags, hEvent, hStream, flags); });
}

STREAMPOOL_HOOK CUresult cuEventRecordWithFlags_ptsz(CUevent hEvent, CUstream hStream, unsigned int flags) {
  return sp::record_event(Hook::cuEventRecordWithFlags_ptsz, hEvent, hStream, true,
                          [=] { return sp::forward(real().cuEventRecordWithFlags_ptsz, hEvent, hStream, flags); });
}

STREAMPOOL_HOOK CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags) {
  return sp::wait_event(Hook::cuStreamWaitEvent, hStream, hEvent, false,
                        [=] { return sp::forward(real().cuStreamWaitEvent, hStream, hEvent, Flags); });
}

STREAMPOOL_HOOK CUresult cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent, unsigned int Flags) {
  return sp::wait_event(Hook::cuStreamWaitEvent_ptsz, hStream, hEvent, true,
                        [=] { return sp::forward(real().cuStreamWaitEvent_ptsz, hStream, hEvent, Flags); });
}

// --- host synchronisation ------------------------------------------------------------------------

STREAMPOOL_HOOK CUresult cuStreamSynchronize(CUstream hStream) {
  return sp::stream_sync_or_query(Hook::cuStreamSynchronize, hStream, false, true,
                                  [=] { return sp::forward(real().cuStreamSynchronize, hStream); });
}

STREAMPOOL_HOOK CUresult cuStreamSynchronize_ptsz(CUstream hStream) {
  return sp::stream_sync_or_query(Hook::cuStreamSynchronize_ptsz, hStream, true, true,
                                  [=] { return sp::forward(real().cuStreamSynchronize_ptsz, hStream); });
}

STREAMPOOL_HOOK CUresult cuStreamQuery(CUstream hStream) {
  return sp::stream_sync_or_query(Hook::cuStreamQuery, hStream, false, false,
                                  [=] { return sp::forward(real().cuStreamQuery, hStream); });
}

STREAMPOOL_HOOK CUresult cuStreamQuery_ptsz(CUstream hStream) {
  return sp::stream_sync_or_query(Hook::cuStreamQuery_ptsz, hStream, true, false,
                                  [=] { return sp::forward(real().cuStreamQuery_ptsz, hStream); });
}

STREAMPOOL_HOOK CUresult cuEventSynchronize(CUevent hEvent) {
  return sp::event_sync_or_query(Hook::cuEventSynchronize, hEvent, true,
                                 [=] { return sp::forward(real().cuEventSynchronize, hEvent); });
}

STREAMPOOL_HOOK CUresult cuEventQuery(CUevent hEvent) {
  return sp::event_sync_or_query(Hook::cuEventQuery, hEvent, false,
                                 [=] { return sp::forward(real().cuEventQuery, hEvent); });
}

STREAMPOOL_HOOK CUresult cuCtxSynchronize(void) {
  return sp::context_sync(Hook::cuCtxSynchronize, nullptr, [] { return sp::forward(real().cuCtxSynchronize); });
}

STREAMPOOL_HOOK CUresult cuCtxSynchronize_v2(CUcontext ctx) {
  return sp::context_sync(Hook::cuCtxSynchronize_v2, ctx,
                          [=] { return sp::forward(real().cuCtxSynchronize_v2, ctx); });
}

// --- destruction ---------------------------------------------------------------------------------

STREAMPOOL_HOOK CUresult cuStreamDestroy(CUstream hStream) {
  return sp::stream_destroy(Hook::cuStreamDestroy, hStream, [=] { return sp::forward(real().cuStreamDestroy, hStream); });
}

STREAMPOOL_HOOK CUresult cuStreamDestroy_v2(CUstream hStream) {
  return sp::stream_destroy(Hook::cuStreamDestroy_v2, hStream,
                            [=] { return sp::forward(real().cuStreamDestroy_v2, hStream); });
}

STREAMPOOL_HOOK CUresult cuEventDestroy(CUevent hEvent) {
  return sp::event_destroy(Hook::cuEventDestroy, hEvent, [=] { return sp::forward(real().cuEventDestroy, hEvent); });
}

STREAMPOOL_HOOK CUresult cuEventDestroy_v2(CUevent hEvent) {
  return sp::event_destroy(Hook::cuEventDestroy_v2, hEvent,
                           [=] { return sp::forward(real().cuEventDestroy_v2, hEvent); });
}

STREAMPOOL_HOOK CUresult cuCtxDestroy_v2(CUcontext ctx) { return sp::context_destroy(ctx); }

STREAMPOOL_HOOK CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) { return sp::primary_context_reset(dev); }
