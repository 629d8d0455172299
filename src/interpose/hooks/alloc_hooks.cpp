// The allocation family: cuMemAllocAsync, cuMemAllocFromPoolAsync and cuMemFreeAsync, each in its
// legacy-stream and per-thread-stream (_ptsz) variant, served by the engine.
//
// Fast path (a created stream this thread used a moment ago, no capture anywhere): a plain
// thread-local counter increment, the re-entry depth and the route cache in initial-exec TLS, one
// relaxed load for the capture check, one load of the route epoch, then the engine. No lock, no
// atomic read-modify-write, no driver call, no allocation, no call out of this file but the
// engine's. A default stream adds the driver's cuCtxGetCurrent (which context it means).
//
// On a capturing stream both calls go to the real driver unchanged, so capture keeps making graph
// memory nodes; a pool of streampool's is then replaced by the real driver's default pool of the
// same location (graph memory lives outside any pool anyway), or, on a driver without such a pool,
// by a plain cuMemAllocAsync when the pool is the stream's own device's. A free of a pointer the engine does
// not own (graph memory, memory of another allocator) also goes to the real driver: it accepts
// cuMemFreeAsync of a plain cuMemAlloc pointer. Ownership is only asked once the engine refused the
// free (a pointer that is no live allocation), so an ordinary free does not pay for it.
#include "driver/log.hpp"
#include "driver/capture_tracker.hpp"
#include "call_counters.hpp"
#include "insight/nvtx_registry.hpp"
#include "ipc/ipc.hpp"
#include "process_state.hpp"
#include "route_cache.hpp"
#include "report/oom_report.hpp"
#include "report/trace_points.hpp"
#include "driver/stream_registry.hpp"
#include "insight/leak_hooks.hpp"

namespace streampool::interpose {

namespace {

// Which real entry point a hook forwards to: a member of the driver table, so that the table is
// only reached (driver::real(), a guarded static) when a call is actually forwarded.
using AllocFn = decltype(&::cuMemAllocAsync);
using AllocFromPoolFn = decltype(&::cuMemAllocFromPoolAsync);
using FreeFn = decltype(&::cuMemFreeAsync);
using AllocEntry = AllocFn driver::DriverTable::*;
using AllocFromPoolEntry = AllocFromPoolFn driver::DriverTable::*;
using FreeEntry = FreeFn driver::DriverTable::*;

// The real driver's pool with the same location and allocation type as one of ours.
CUresult real_pool_like(const core::PoolProps& props, CUmemoryPool* real_pool) noexcept {
  const driver::DriverTable& table = driver::real();
  if (props.location_type == CU_MEM_LOCATION_TYPE_DEVICE && props.kind == core::PoolKind::device) {
    return forward(table.cuDeviceGetDefaultMemPool, real_pool, props.location_id);
  }
  CUmemLocation location{};
  location.type = static_cast<CUmemLocationType>(props.location_type);
  location.id = props.location_id;
  return forward(table.cuMemGetDefaultMemPool, real_pool, &location,
                 static_cast<CUmemAllocationType>(props.allocation_type));
}

// Whether the call must go to the real driver as it is: the stream captures (or the driver could
// not say). Only asked while some capture is in progress.
[[gnu::noinline]] bool capture_forwards(CUstream stream, bool per_thread) noexcept {
  bool capturing = false;
  CUresult result = driver::stream_capturing(stream, per_thread, &capturing);
  return result != CUDA_SUCCESS || capturing;
}

[[gnu::cold]] [[gnu::noinline]] void warn_allocation_failed(core::Pool* pool, std::size_t bytes, core::StreamKey key,
                                                            core::Status status) noexcept {
  try {
    const core::PoolStats stats = engine().stats(pool);
    STREAMPOOL_LOG_WARN("allocation of %zu bytes on stream key %#zx from pool %p failed (status %d): "
                        "reserved %llu, used %llu",
                        bytes, static_cast<std::size_t>(key), static_cast<void*>(pool), static_cast<int>(status),
                        static_cast<unsigned long long>(stats.reserved_current),
                        static_cast<unsigned long long>(stats.used_current));
  } catch (...) {
  }
}

// Inlined into both allocation hooks: the fast path is one call, the engine's. `stream` and
// `per_thread` only name the stream in a failure's report.
[[gnu::always_inline]] inline CUresult allocate(core::Pool* pool, std::size_t bytes, core::StreamKey key,
                                                CUdeviceptr* dptr, CUstream stream, bool per_thread) noexcept {
  void* address = nullptr;
  core::Status status = core::Status::out_of_memory;
  // Under compute-sanitizer (or STREAMPOOL_NVTX=1) each block is followed by a guard its region
  // leaves out, so that a write past its end lands outside every region.
  const std::size_t engine_bytes = insight_hooks::nvtx_enabled() ? insight_hooks::nvtx_guarded(bytes) : bytes;
  try {
    status = engine().allocate(pool, engine_bytes, key, &address);
    // Over a cap: what the other pools of the device hold unused goes back, and it is tried once more.
    if (status == core::Status::out_of_memory && control_hooks::reclaim_for(pool)) [[unlikely]] {
      status = engine().allocate(pool, engine_bytes, key, &address);
    }
  } catch (...) {
    status = core::Status::out_of_memory;
  }
  if (core::ok(status)) [[likely]] {
    *dptr = reinterpret_cast<CUdeviceptr>(address);
    // Under compute-sanitizer (or STREAMPOOL_NVTX=1): the block a region of its pool's heap.
    if (insight_hooks::nvtx_enabled()) [[unlikely]] insight_hooks::nvtx_allocated(reinterpret_cast<std::uintptr_t>(address), bytes);
    trace_detail::served_pool = reinterpret_cast<std::uintptr_t>(pool);  // for the trace: one TLS store
    if (insight_hooks::leaks_on()) [[unlikely]] insight_hooks::allocation_made(address, bytes, pool);
    return CUDA_SUCCESS;
  }
  *dptr = 0;
  // The failure after every recovery: the out-of-memory report (report/oom_report.hpp).
  if (status == core::Status::out_of_memory) {
    report_out_of_memory(pool, bytes, stream, per_thread);
  } else if (status != core::Status::invalid_value) {
    // invalid_value: not a live pool (a bad handle of cuMemAllocFromPoolAsync): nothing to report on.
    warn_allocation_failed(pool, bytes, key, status);
  }
  return to_cuda(status);
}

// The device's current pool for a route, looked up once per route and then cached in it.
[[gnu::noinline]] CUresult current_pool_of(RouteEntry* route, core::Pool** pool) noexcept {
  CUresult result = pools().device_current(route->device, pool);
  if (result == CUDA_SUCCESS) route->pool = *pool;
  return result;
}

[[gnu::always_inline]] inline CUresult alloc_async(Hook hook, AllocEntry real_entry, CUdeviceptr* dptr, size_t bytes,
                                                   CUstream stream, bool per_thread) noexcept {
  count_call(hook);
  HookScope scope;
  if (bypass(scope)) [[unlikely]] return forward(driver::real().*real_entry, dptr, bytes, stream);
  if (dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (driver::captures_possible() && capture_forwards(stream, per_thread)) [[unlikely]] {
    return forward(driver::real().*real_entry, dptr, bytes, stream);
  }
  RouteEntry* route = nullptr;
  CUresult result = find_route(stream, per_thread, &route);
  if (result != CUDA_SUCCESS) [[unlikely]] {
    *dptr = 0;
    return result;
  }
  core::Pool* pool = route->pool;
  if (pool == nullptr) [[unlikely]] {
    result = current_pool_of(route, &pool);
    if (result != CUDA_SUCCESS) {
      *dptr = 0;
      return result;
    }
  }
  result = allocate(pool, bytes, route->key, dptr, stream, per_thread);
  if (driver::captures_possible()) [[unlikely]] driver::check_captures_after(hook_name(hook));
  return result;
}

// cuMemAllocFromPoolAsync on a capturing stream: the real driver's call, on the real pool that
// stands for ours.
[[gnu::noinline]] CUresult alloc_from_pool_captured(AllocFromPoolEntry real_entry, CUdeviceptr* dptr, size_t bytes,
                                                    core::Pool* pool, CUstream stream, bool per_thread) noexcept {
  try {
    const core::PoolProps& props = engine().props(pool);
    CUmemoryPool real_pool = nullptr;
    if (real_pool_like(props, &real_pool) == CUDA_SUCCESS) {
      return forward(driver::real().*real_entry, dptr, bytes, real_pool, stream);
    }
    // A driver without pools of that kind: a device pool on the stream's own device is what
    // cuMemAllocAsync on that stream allocates from, so the graph node is the same.
    driver::StreamRoute route;
    CUresult result = driver::resolve_stream(stream, per_thread, &route);
    if (result != CUDA_SUCCESS) return result;
    if (props.kind != core::PoolKind::device || route.device != props.location_id) return CUDA_ERROR_NOT_SUPPORTED;
    const driver::DriverTable& table = driver::real();
    return forward(per_thread ? table.cuMemAllocAsync_ptsz : table.cuMemAllocAsync, dptr, bytes, stream);
  } catch (...) {
    *dptr = 0;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
}

bool live_pool(core::Pool* pool) noexcept {
  try {
    return engine().is_pool(pool);
  } catch (...) {
    return false;
  }
}

[[gnu::always_inline]] inline CUresult alloc_from_pool_async(Hook hook, AllocFromPoolEntry real_entry,
                                                             CUdeviceptr* dptr, size_t bytes, CUmemoryPool mem_pool,
                                                             CUstream stream, bool per_thread) noexcept {
  count_call(hook);
  HookScope scope;
  if (bypass(scope)) [[unlikely]] return forward(driver::real().*real_entry, dptr, bytes, mem_pool, stream);
  if (dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto* pool = reinterpret_cast<core::Pool*>(mem_pool);
  if (driver::captures_possible()) [[unlikely]] {
    if (!live_pool(pool)) {
      *dptr = 0;
      return CUDA_ERROR_INVALID_VALUE;
    }
    if (capture_forwards(stream, per_thread)) {
      return alloc_from_pool_captured(real_entry, dptr, bytes, pool, stream, per_thread);
    }
  }
  RouteEntry* route = nullptr;
  CUresult result = find_route(stream, per_thread, &route);
  if (result != CUDA_SUCCESS) [[unlikely]] {
    *dptr = 0;
    return live_pool(pool) ? result : CUDA_ERROR_INVALID_VALUE;  // a bad pool is reported first
  }
  // The engine checks the pool handle itself (a bad one: invalid_value, *dptr = 0).
  result = allocate(pool, bytes, route->key, dptr, stream, per_thread);
  if (driver::captures_possible()) [[unlikely]] driver::check_captures_after(hook_name(hook));
  return result;
}

// A free the engine did not take (or whose stream could not be routed): another allocator's
// pointer goes to the real driver; ours gets the error.
[[gnu::noinline]] CUresult free_not_taken(FreeEntry real_entry, CUdeviceptr dptr, CUstream stream, bool per_thread,
                                           CUresult error) noexcept {
  try {
    if (ipc::is_imported_pointer(dptr)) [[unlikely]] {
      // The _ptsz entries name the per-thread stream by 0; the host function must go there too.
      return ipc::free_imported_async(dptr, per_thread && stream == nullptr ? CU_STREAM_PER_THREAD : stream);
    }
    if (!engine().owns(reinterpret_cast<void*>(dptr))) return forward(driver::real().*real_entry, dptr, stream);
  } catch (...) {
    return CUDA_ERROR_UNKNOWN;
  }
  // After the driver's teardown at exit, frees are accepted quietly: the memory is gone anyway.
  return error == CUDA_ERROR_DEINITIALIZED ? CUDA_SUCCESS : error;
}

// A free with NVTX registration on: the block's region goes when its stream reaches the free (the
// work queued before it may still use the block), named by its generation read before the engine
// can hand the block to another thread's allocation.
[[gnu::noinline]] core::Status free_registered(CUdeviceptr dptr, core::StreamKey key, CUstream stream,
                                               bool per_thread) {
  const auto address = static_cast<std::uintptr_t>(dptr);
  const std::uint64_t generation = insight_hooks::nvtx_region_generation(address);
  const core::Status status = engine().free(reinterpret_cast<void*>(dptr), key);
  if (core::ok(status)) {
    insight_hooks::nvtx_freed_in_stream_order(address, generation,
                                              per_thread && stream == nullptr ? CU_STREAM_PER_THREAD : stream);
  }
  return status;
}

[[gnu::always_inline]] inline CUresult free_async_unchecked(Hook hook, FreeEntry real_entry, CUdeviceptr dptr,
                                                            CUstream stream, bool per_thread) noexcept {
  count_call(hook);
  HookScope scope;
  if (bypass(scope)) [[unlikely]] return forward(driver::real().*real_entry, dptr, stream);
  if (dptr == 0) [[unlikely]] {
    // Nothing to free, but the stream is checked as an allocation on it would be.
    RouteEntry* route = nullptr;
    return find_route(stream, per_thread, &route);
  }
  if (driver::captures_possible() && capture_forwards(stream, per_thread)) [[unlikely]] {
    return forward(driver::real().*real_entry, dptr, stream);
  }
  RouteEntry* route = nullptr;
  CUresult result = find_route(stream, per_thread, &route);
  if (result != CUDA_SUCCESS) [[unlikely]] return free_not_taken(real_entry, dptr, stream, per_thread, result);
  core::Status status = core::Status::success;
  try {
    status = insight_hooks::nvtx_enabled() ? free_registered(dptr, route->key, stream, per_thread)
                                     : engine().free(reinterpret_cast<void*>(dptr), route->key);
  } catch (...) {
    return CUDA_ERROR_UNKNOWN;
  }
  if (core::ok(status)) [[likely]] {
    ipc::allocation_freed(dptr);  // export data of it is stale from now on
    return CUDA_SUCCESS;
  }
  if (status == core::Status::invalid_value) {
    return free_not_taken(real_entry, dptr, stream, per_thread, CUDA_ERROR_INVALID_VALUE);
  }
  return status == core::Status::deinitialized ? CUDA_SUCCESS : to_cuda(status);
}

// STREAMPOOL_LEAKS=1: the same free, classified (insight/leak_hooks.hpp). The stream is resolved
// apart from the free so that a refused stream is told from a refused pointer; the result is the
// unchecked free's, unchanged.
[[gnu::noinline]] CUresult free_async_checked(Hook hook, FreeEntry real_entry, CUdeviceptr dptr, CUstream stream,
                                              bool per_thread) noexcept {
  if (dptr == 0 || ReentryGuard::inside() || driver::passthrough_requested()) {
    return free_async_unchecked(hook, real_entry, dptr, stream, per_thread);
  }
  driver::StreamRoute route;
  CUresult route_result = CUDA_SUCCESS;
  {
    HookScope scope;
    // Work on a capturing stream is the real driver's (graph memory): nothing to classify.
    if (driver::captures_possible() && capture_forwards(stream, per_thread)) {
      route_result = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    } else {
      route_result = driver::resolve_stream(stream, per_thread, &route);
    }
  }
  if (route_result == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED) {
    return free_async_unchecked(hook, real_entry, dptr, stream, per_thread);
  }
  const insight_hooks::FreeCheck check = insight_hooks::free_starts(dptr, stream);
  const CUresult result = free_async_unchecked(hook, real_entry, dptr, stream, per_thread);
  insight_hooks::free_ended(check, route_result, route.device, result);
  return result;
}

[[gnu::always_inline]] inline CUresult free_async(Hook hook, FreeEntry real_entry, CUdeviceptr dptr, CUstream stream,
                                                  bool per_thread) noexcept {
  if (insight_hooks::leaks_on()) [[unlikely]] return free_async_checked(hook, real_entry, dptr, stream, per_thread);
  return free_async_unchecked(hook, real_entry, dptr, stream, per_thread);
}

}  // namespace

}  // namespace streampool::interpose

using streampool::interpose::Hook;

STREAMPOOL_HOOK CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  return streampool::interpose::traced_alloc(streampool::trace::Op::alloc, false, dptr, bytesize, nullptr, hStream, [&] {
    return streampool::interpose::alloc_async(Hook::cuMemAllocAsync, &streampool::driver::DriverTable::cuMemAllocAsync,
                                            dptr, bytesize, hStream, false);
  });
}

STREAMPOOL_HOOK CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  return streampool::interpose::traced_alloc(streampool::trace::Op::alloc, true, dptr, bytesize, nullptr, hStream, [&] {
    return streampool::interpose::alloc_async(Hook::cuMemAllocAsync_ptsz,
                                            &streampool::driver::DriverTable::cuMemAllocAsync_ptsz, dptr, bytesize,
                                            hStream, true);
  });
}

STREAMPOOL_HOOK CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                                 CUstream hStream) {
  return streampool::interpose::traced_alloc(streampool::trace::Op::alloc_from_pool, false, dptr, bytesize, pool, hStream, [&] {
    return streampool::interpose::alloc_from_pool_async(Hook::cuMemAllocFromPoolAsync,
                                                      &streampool::driver::DriverTable::cuMemAllocFromPoolAsync, dptr,
                                                      bytesize, pool, hStream, false);
  });
}

STREAMPOOL_HOOK CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                                      CUstream hStream) {
  return streampool::interpose::traced_alloc(streampool::trace::Op::alloc_from_pool, true, dptr, bytesize, pool, hStream, [&] {
    return streampool::interpose::alloc_from_pool_async(Hook::cuMemAllocFromPoolAsync_ptsz,
                                                      &streampool::driver::DriverTable::cuMemAllocFromPoolAsync_ptsz,
                                                      dptr, bytesize, pool, hStream, true);
  });
}

STREAMPOOL_HOOK CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
  return streampool::interpose::traced_free(streampool::trace::Op::free, false, dptr, hStream, [&] {
    return streampool::interpose::free_async(Hook::cuMemFreeAsync, &streampool::driver::DriverTable::cuMemFreeAsync, dptr,
                                           hStream, false);
  });
}

STREAMPOOL_HOOK CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) {
  return streampool::interpose::traced_free(streampool::trace::Op::free, true, dptr, hStream, [&] {
    return streampool::interpose::free_async(Hook::cuMemFreeAsync_ptsz,
                                           &streampool::driver::DriverTable::cuMemFreeAsync_ptsz, dptr, hStream, true);
  });
}
