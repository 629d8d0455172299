// Stream keys: how the interposer names CUDA streams to the engine, and back.
//
//   created stream             key = the CUstream handle value (a pointer: a multiple of 4)
//   legacy default stream      key = context address + 1        (one per context)
//   per-thread default stream  key = address of this thread's slot for the context + 2
//                                                               (one per thread and context)
// The handle 0 means the legacy stream in the plain ABI and the per-thread stream in the _ptsz
// variants; CU_STREAM_LEGACY and CU_STREAM_PER_THREAD mean what they say in every variant.
//
// The hot path (an allocation or free on a stream seen before) is one lookup in a small per-thread
// cache: no lock, no driver call. A miss looks in the process-wide map (shared lock), and only a
// stream never seen asks the driver (cuStreamGetCtx, cuStreamGetFlags, the context's device).
// Destroying a stream or a context bumps a global epoch (route_epoch below) that invalidates every
// thread's cache. The allocation hooks keep a smaller cache of their own in front of this one
// (interpose/hooks/route_cache.hpp) under the same epoch.
// The default streams need the current context (cuCtxGetCurrent, ~10 ns in the driver).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "cuda_compat.hpp"
#include "core/keys.hpp"
#include "core/status.hpp"

namespace streampool::driver {

// The route epoch: bumped whenever a cached route may have gone stale (a stream or context is
// forgotten, the device's current pool changes, a fork). Per-thread route caches (this file's and
// the interposer's) stamp each entry with the epoch read before the entry was computed and trust
// it only while the epoch is unchanged: one plain load on the hot path.
namespace detail {
extern std::atomic<std::uint64_t> route_epoch;
}
inline std::uint64_t route_epoch() noexcept { return detail::route_epoch.load(std::memory_order_acquire); }
// Call after the change that made routes stale is visible.
void invalidate_routes() noexcept;

struct StreamRoute {
  core::StreamKey key = 0;
  CUcontext context = nullptr;
  CUdevice device = -1;
};

// The stream a hook's (handle, variant) names: its key, context and device. Errors are the
// driver's (CUDA_ERROR_INVALID_HANDLE for a handle that is not mapped memory, CUDA_ERROR_INVALID_CONTEXT
// for a default stream without a current context, ...).
CUresult resolve_stream(CUstream stream, bool per_thread_variant, StreamRoute* route) noexcept;

// The key of a stream already known, without asking the driver (destroy paths). False if unknown.
bool known_stream_key(CUstream stream, bool per_thread_variant, core::StreamKey* key) noexcept;

// What a key stands for, for the ordering: the handle to pass to the driver and the context that
// must be current for it. not_supported for another thread's per-thread default stream (it can only
// be named from its own thread), invalid_value for a key never handed out or already forgotten.
struct StreamTarget {
  CUstream stream = nullptr;
  CUcontext context = nullptr;
};
core::Status target_of_key(core::StreamKey key, StreamTarget* target) noexcept;
core::StreamKind kind_of_key(core::StreamKey key) noexcept;
// The context a key's stream belongs to (its group for legacy-stream synchronisation); 0 if unknown.
std::uintptr_t context_of_key(core::StreamKey key) noexcept;

// A stream was just created with `flags`: whatever the handle meant before is forgotten and the
// stream registered, so that it never needs cuStreamGetFlags (which a capture in progress on it
// would not survive).
CUresult stream_created(CUstream stream, unsigned flags) noexcept;
// A created stream is gone (after cuStreamDestroy): forget it and invalidate all caches.
void forget_stream(CUstream stream) noexcept;
// True, for good, once a stream the legacy stream's implicit order binds has been seen: a created
// blocking stream (at its creation through the hooks, or first use) or a per-thread default stream.
// Until then the legacy stream's frees follow nothing but its own work (core::Ordering::implicit_partners).
const std::atomic<bool>& implicit_partners_seen() noexcept;

// Every key of a context known so far: its legacy stream, its created streams and the per-thread
// streams of all live threads.
std::vector<core::StreamKey> keys_of_context(CUcontext context);
// A context is gone (cuCtxDestroy, primary context reset): forget its streams and cached device.
void forget_context(CUcontext context) noexcept;
// How many distinct contexts streams have been seen in (a host sync of one context may be treated
// as a sync of everything while this is 1).
std::size_t contexts_seen() noexcept;
// How many streams the registry holds: created streams and live threads' per-thread streams (tests:
// a program whose streams and contexts come and go must hold a bounded number).
std::size_t streams_seen() noexcept;

// Called on a thread's exit with the key of each per-thread default stream it used, so the engine
// can treat it as destroyed (the slot's address may be reused by a later thread).
using PerThreadExitHandler = void (*)(core::StreamKey key);
void set_per_thread_exit_handler(PerThreadExitHandler handler) noexcept;

// In the child after fork: drop all state (locks may have been held by threads that do not exist).
void reset_stream_registry_after_fork() noexcept;

// Whether a key is one of the reserved default-stream keys (tests).
bool is_legacy_key(core::StreamKey key) noexcept;
bool is_per_thread_key(core::StreamKey key) noexcept;

}  // namespace streampool::driver
