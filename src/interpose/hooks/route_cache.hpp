// The allocation hooks' per-thread route cache: (CUstream, variant) -> (stream key, device, the
// device's current pool), so that an allocation or free on a stream this thread used a moment ago
// costs one compare and one load of the route epoch: no lock, no map, no driver call.
//
// Two entries per thread (the last route used and the one before it, so that alternating between
// two streams still hits), in initial-exec TLS with a constant initialiser: reaching them is an
// %fs-relative access, never __tls_get_addr (the library is preloaded; 80 bytes of static TLS).
//
// Identity of an entry: a created stream's handle (a pointer: its low two bits are clear), or for a
// default stream the current context's address plus 1 (legacy) or 2 (per-thread). Handles 0, 1 and
// 2 never match an entry, so the inline lookup needs no classification: a default stream always
// takes the out-of-line path, which asks the driver for the current context (as it must: the
// default streams mean that context's) and then looks the same two entries up.
//
// An entry is trusted only while driver::route_epoch() still equals the epoch read before it was
// computed; destroying a stream or context, changing a device's current pool (cuDeviceSetMemPool,
// cuMemSetMemPool, destroying a current pool) and fork all bump the epoch.
#pragma once

#include <cstdint>

#include "driver/cuda_compat.hpp"
#include "driver/stream_registry.hpp"
#include "core/keys.hpp"

namespace streampool::core {
class Pool;
}

namespace streampool::interpose {

struct RouteEntry {
  std::uintptr_t identity;
  std::uint64_t epoch;
  core::StreamKey key;
  core::Pool* pool;  // the device's current pool; null until an allocation needed it
  CUdevice device;
};

namespace detail {
inline constexpr unsigned kRouteEntries = 2;
extern constinit thread_local RouteEntry route_cache[kRouteEntries] __attribute__((tls_model("initial-exec")));
CUresult find_route_slow(CUstream stream, bool per_thread_variant, RouteEntry** route) noexcept;
}  // namespace detail

// The route of (stream, variant), or the driver's error for a stream it would refuse. The entry
// stays valid until this thread's next find_route; the caller may fill its pool.
inline CUresult find_route(CUstream stream, bool per_thread_variant, RouteEntry** route) noexcept {
  RouteEntry& last = detail::route_cache[0];
  if (last.identity == reinterpret_cast<std::uintptr_t>(stream) && last.epoch == driver::route_epoch()) [[likely]] {
    *route = &last;
    return CUDA_SUCCESS;
  }
  return detail::find_route_slow(stream, per_thread_variant, route);
}

}  // namespace streampool::interpose
