#include "route_cache.hpp"

#include <utility>

#include "process_state.hpp"

namespace streampool::interpose::detail {

constinit thread_local RouteEntry route_cache[kRouteEntries] __attribute__((tls_model("initial-exec"))) = {};

namespace {

constexpr std::uintptr_t kLegacyIdentityTag = 1;
constexpr std::uintptr_t kPerThreadIdentityTag = 2;

bool default_stream(CUstream stream) noexcept {
  return stream == nullptr || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD;
}

// The entry for `identity` still valid at `epoch`, moved to the front; null if none.
RouteEntry* cached(std::uintptr_t identity, std::uint64_t epoch) noexcept {
  for (unsigned index = 0; index < kRouteEntries; ++index) {
    if (route_cache[index].identity == identity && route_cache[index].epoch == epoch) {
      if (index != 0) std::swap(route_cache[0], route_cache[index]);
      return &route_cache[0];
    }
  }
  return nullptr;
}

}  // namespace

CUresult find_route_slow(CUstream stream, bool per_thread_variant, RouteEntry** route) noexcept {
  // Read first: a change made while the route is being computed then leaves the entry stale.
  const std::uint64_t epoch = driver::route_epoch();
  auto identity = reinterpret_cast<std::uintptr_t>(stream);
  if (default_stream(stream)) {
    // A default stream means the current context's: which one can only be asked.
    CUcontext context = nullptr;
    CUresult result = forward(driver::real().cuCtxGetCurrent, &context);
    if (result != CUDA_SUCCESS) return result;
    if (context == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    const bool legacy = stream == CU_STREAM_LEGACY || (stream == nullptr && !per_thread_variant);
    identity = reinterpret_cast<std::uintptr_t>(context) + (legacy ? kLegacyIdentityTag : kPerThreadIdentityTag);
  }
  if (RouteEntry* hit = cached(identity, epoch)) {
    *route = hit;
    return CUDA_SUCCESS;
  }
  driver::StreamRoute resolved;
  CUresult result = driver::resolve_stream(stream, per_thread_variant, &resolved);
  if (result != CUDA_SUCCESS) return result;
  for (unsigned index = kRouteEntries - 1; index > 0; --index) route_cache[index] = route_cache[index - 1];
  route_cache[0] = RouteEntry{identity, epoch, resolved.key, nullptr, resolved.device};
  *route = &route_cache[0];
  return CUDA_SUCCESS;
}

}  // namespace streampool::interpose::detail
