// Lifetimes of what the tracking names by handle: streams, events and contexts. A handle value
// may be reused by the driver as soon as what it named is gone, so the tracking forgets a handle
// before the real destroy can free it, and a creation wipes whatever the new handle meant before
// (an object that ended where streampool could not see it).
//
//   cuStreamCreate(WithPriority), cuGreenCtxStreamCreate   the new handle starts fresh
//   cuStreamDestroy(_v2)    its pending frees get a marker, then the key is forgotten, then the
//                           real destroy
//   cuEventCreate, cuEventDestroy(_v2)   the event's tracking is forgotten
//   cuCtxDestroy(_v2), cuDevicePrimaryCtxReset(_v2), cuDevicePrimaryCtxRelease(_v2) when the
//   release destroyed the context: every stream of the context ends. A ticket for each is taken
//   first and committed once the driver destroyed the context (destruction waits for the
//   context's work); its markers count as complete; its streams are forgotten without markers.
//   Pools are per device, not per context, and stay valid (their VMM memory is not owned by any
//   context); after the primary context of a device ends, each pool of that device is trimmed to
//   what its live allocations need.
#include <vector>

#include "call_counters.hpp"
#include "driver/device_context.hpp"
#include "driver/stream_registry.hpp"
#include "insight/leak_hooks.hpp"
#include "process_state.hpp"
#include "tracking.hpp"
#include "report/trace_points.hpp"
#include "serve/serve_malloc.hpp"

namespace streampool::interpose {

namespace {

// A stream was created under `stream`: nothing streampool knew about that handle still holds.
CUresult stream_created(CUresult result, const CUstream* stream, unsigned flags) noexcept {
  if (result != CUDA_SUCCESS || stream == nullptr || *stream == nullptr) return result;
  const auto key = reinterpret_cast<core::StreamKey>(*stream);
  driver::stream_created(*stream, flags);  // registered now: it may capture before its first use
  try {
    engine().stream_ended(key);
  } catch (...) {
  }
  return result;
}

template <class RealCall>
CUresult stream_create(Hook hook, CUstream* stream, unsigned flags, RealCall real_call) noexcept {
  count_call(hook);
  HookScope scope;
  if (bypass(scope)) return real_call();
  return stream_created(real_call(), stream, flags);
}

template <class RealCall>
CUresult stream_destroy(Hook hook, CUstream stream, RealCall real_call) noexcept {
  count_call(hook);
  HookScope scope;
  if (bypass(scope)) return real_call();
  core::StreamKey key = 0;
  if (driver::known_stream_key(stream, false, &key)) {
    try {
      engine().stream_destroyed(key);  // a marker while the stream still exists
    } catch (...) {
    }
    driver::forget_stream(stream);
  }
  const CUresult result = real_call();
  if (insight_hooks::leaks_on() && result == CUDA_SUCCESS) [[unlikely]] insight_hooks::stream_destroyed(stream);
  return result;
}

template <class RealCall>
CUresult event_lifetime(Hook hook, CUevent event, RealCall real_call) noexcept {
  count_call(hook);
  HookScope scope;
  if (bypass(scope)) return real_call();
  try {
    if (event != nullptr) engine().event_destroyed(event_key(event));
  } catch (...) {
  }
  return real_call();
}

CUresult event_create(CUevent* event, unsigned flags) noexcept {
  count_call(Hook::cuEventCreate);
  const auto real_call = [=] { return forward(driver::real().cuEventCreate, event, flags); };
  HookScope scope;
  if (bypass(scope)) return real_call();
  CUresult result = real_call();
  if (result != CUDA_SUCCESS || event == nullptr) return result;
  try {
    engine().event_created(event_key(*event));
  } catch (...) {
  }
  return result;
}

// What a context's end needs: its streams' keys and a ticket, taken before the end, for all the
// context's work, which the driver waits for before it destroys the context (as a synchronize of
// the context does: nothing is recorded in streams about to go).
struct ContextStreams {
  std::vector<core::StreamKey> keys;
  core::SyncTicket ticket;
};

ContextStreams streams_of(CUcontext context) noexcept {
  ContextStreams streams;
  if (context == nullptr) return streams;
  try {
    streams.keys = driver::keys_of_context(context);
    streams.ticket = ticket_for_context(context, true);
  } catch (...) {
    streams = ContextStreams{};
  }
  return streams;
}

void trim_device_pools(CUdevice device) {
  // In the visit: a pool destroyed meanwhile on another thread is not reclaimed under it.
  engine().for_each_pool([device](core::Pool* pool) {
    const core::PoolProps& props = engine().props(pool);
    if (props.kind == core::PoolKind::device && props.location_id == device) engine().trim_to(pool, 0);
  });
}

// The context is gone (the driver destroyed it, waiting for its work).
void context_ended(CUcontext context, const ContextStreams& streams, CUdevice primary_of) noexcept {
  try {
    engine().commit(streams.ticket);
    state().ordering.context_destroyed(context);
    driver::forget_context(context);
    control_hooks::context_ended(context);  // its cuMemAlloc memory went with it
    serve_hooks::context_ended(context);    // and so does what streampool served it
    for (core::StreamKey key : streams.keys) engine().stream_ended(key);
    if (primary_of >= 0) {
      driver::forget_primary_context(primary_of);
      trim_device_pools(primary_of);
    }
  } catch (...) {
  }
}

template <class RealCall>
CUresult context_destroy(Hook hook, CUcontext context, RealCall real_call) noexcept {
  count_call(hook);
  HookScope scope;
  if (bypass(scope) || context == nullptr) return real_call();
  const ContextStreams streams = streams_of(context);
  CUresult result = real_call();
  if (result == CUDA_SUCCESS) context_ended(context, streams, -1);
  return result;
}

// The primary context of `device` if it is active; null if not. A retain and a release, so that
// the program's reference count is what it was (an active context keeps its own reference).
CUcontext active_primary(CUdevice device) noexcept {
  const driver::DriverTable& table = driver::real();
  unsigned flags = 0;
  int active = 0;
  if (!driver::valid_device(device) || forward(table.cuDevicePrimaryCtxGetState, device, &flags, &active) != CUDA_SUCCESS ||
      active == 0) {
    return nullptr;
  }
  CUcontext primary = nullptr;
  if (forward(table.cuDevicePrimaryCtxRetain, &primary, device) != CUDA_SUCCESS) return nullptr;
  forward(table.cuDevicePrimaryCtxRelease_v2, device);
  return primary;
}

bool primary_active(CUdevice device) noexcept {
  unsigned flags = 0;
  int active = 1;
  forward(driver::real().cuDevicePrimaryCtxGetState, device, &flags, &active);
  return active != 0;
}

// cuDevicePrimaryCtxReset (the context's streams and work end whatever the reference count) and
// cuDevicePrimaryCtxRelease (they end when the context is no longer active after the call).
enum class PrimaryEnd { always, when_inactive };

template <class RealCall>
CUresult primary_context_end(Hook hook, CUdevice device, PrimaryEnd ends, RealCall real_call) noexcept {
  count_call(hook);
  HookScope scope;
  if (bypass(scope)) return real_call();
  CUcontext primary = active_primary(device);
  if (primary == nullptr) return real_call();
  const ContextStreams streams = streams_of(primary);
  CUresult result = real_call();
  if (result == CUDA_SUCCESS && (ends == PrimaryEnd::always || !primary_active(device))) {
    context_ended(primary, streams, device);
  }
  return result;
}

}  // namespace

}  // namespace streampool::interpose

using streampool::interpose::Hook;
namespace sp = streampool::interpose;
using streampool::driver::real;

STREAMPOOL_HOOK CUresult cuStreamCreate(CUstream* phStream, unsigned int Flags) {
  return sp::traced_create(streampool::trace::Op::stream_create, static_cast<std::uint16_t>(Flags), false, phStream, 0, 0, [&] {
    return sp::stream_create(Hook::cuStreamCreate, phStream, Flags,
                           [=] { return sp::forward(real().cuStreamCreate, phStream, Flags); });
  });
}

STREAMPOOL_HOOK CUresult cuStreamCreateWithPriority(CUstream* phStream, unsigned int flags, int priority) {
  return sp::traced_create(streampool::trace::Op::stream_create, static_cast<std::uint16_t>(flags), false, phStream, 0, 0, [&] {
    return sp::stream_create(Hook::cuStreamCreateWithPriority, phStream, flags,
                           [=] { return sp::forward(real().cuStreamCreateWithPriority, phStream, flags, priority); });
  });
}

STREAMPOOL_HOOK CUresult cuGreenCtxStreamCreate(CUstream* phStream, CUgreenCtx greenCtx, unsigned int flags,
                                                int priority) {
  return sp::traced_create(streampool::trace::Op::stream_create, static_cast<std::uint16_t>(flags), false, phStream, 0, 0, [&] {
    return sp::stream_create(Hook::cuGreenCtxStreamCreate, phStream, flags, [=] {
    return sp::forward(real().cuGreenCtxStreamCreate, phStream, greenCtx, flags, priority);
  });
  });
}

STREAMPOOL_HOOK CUresult cuStreamDestroy(CUstream hStream) {
  return sp::traced(streampool::trace::Op::stream_destroy, 0, hStream, 0, 0, 0, [&] {
    return sp::stream_destroy(Hook::cuStreamDestroy, hStream, [=] { return sp::forward(real().cuStreamDestroy, hStream); });
  });
}

STREAMPOOL_HOOK CUresult cuStreamDestroy_v2(CUstream hStream) {
  return sp::traced(streampool::trace::Op::stream_destroy, 0, hStream, 0, 0, 0, [&] {
    return sp::stream_destroy(Hook::cuStreamDestroy_v2, hStream,
                            [=] { return sp::forward(real().cuStreamDestroy_v2, hStream); });
  });
}

STREAMPOOL_HOOK CUresult cuEventCreate(CUevent* phEvent, unsigned int Flags) { return sp::event_create(phEvent, Flags); }

STREAMPOOL_HOOK CUresult cuEventDestroy(CUevent hEvent) {
  return sp::event_lifetime(Hook::cuEventDestroy, hEvent, [=] { return sp::forward(real().cuEventDestroy, hEvent); });
}

STREAMPOOL_HOOK CUresult cuEventDestroy_v2(CUevent hEvent) {
  return sp::event_lifetime(Hook::cuEventDestroy_v2, hEvent,
                            [=] { return sp::forward(real().cuEventDestroy_v2, hEvent); });
}

STREAMPOOL_HOOK CUresult cuCtxDestroy(CUcontext ctx) {
  return sp::context_destroy(Hook::cuCtxDestroy, ctx, [=] { return sp::forward(real().cuCtxDestroy, ctx); });
}

STREAMPOOL_HOOK CUresult cuCtxDestroy_v2(CUcontext ctx) {
  return sp::context_destroy(Hook::cuCtxDestroy_v2, ctx, [=] { return sp::forward(real().cuCtxDestroy_v2, ctx); });
}

STREAMPOOL_HOOK CUresult cuDevicePrimaryCtxReset(CUdevice dev) {
  return sp::primary_context_end(Hook::cuDevicePrimaryCtxReset, dev, sp::PrimaryEnd::always,
                                 [=] { return sp::forward(real().cuDevicePrimaryCtxReset, dev); });
}

STREAMPOOL_HOOK CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  return sp::primary_context_end(Hook::cuDevicePrimaryCtxReset_v2, dev, sp::PrimaryEnd::always,
                                 [=] { return sp::forward(real().cuDevicePrimaryCtxReset_v2, dev); });
}

STREAMPOOL_HOOK CUresult cuDevicePrimaryCtxRelease(CUdevice dev) {
  return sp::primary_context_end(Hook::cuDevicePrimaryCtxRelease, dev, sp::PrimaryEnd::when_inactive,
                                 [=] { return sp::forward(real().cuDevicePrimaryCtxRelease, dev); });
}

STREAMPOOL_HOOK CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  return sp::primary_context_end(Hook::cuDevicePrimaryCtxRelease_v2, dev, sp::PrimaryEnd::when_inactive,
                                 [=] { return sp::forward(real().cuDevicePrimaryCtxRelease_v2, dev); });
}
