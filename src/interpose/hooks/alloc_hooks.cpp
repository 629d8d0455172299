// The allocation family: cuMemAllocAsync, cuMemAllocFromPoolAsync and cuMemFreeAsync, each in its
// legacy-stream and per-thread-stream (_ptsz) variant, served by the engine.
//
// Fast path (a stream seen before, no capture anywhere): one relaxed load for the capture check, a
// per-thread cache hit for the stream's key and device, one atomic load for the device's current
// pool, then the engine. No lock, no driver call, no allocation here.
//
// On a capturing stream both calls go to the real driver unchanged, so capture keeps making graph
// memory nodes; a pool of streampool's is then replaced by the real driver's default pool of the
// same location (graph memory lives outside any pool anyway), or, on a driver without such a pool,
// by a plain cuMemAllocAsync when the pool is the stream's own device's. A free of a pointer the engine does
// not own (graph memory, memory of another allocator) also goes to the real driver: it accepts
// cuMemFreeAsync of a plain cuMemAlloc pointer.
#include "driver/log.hpp"
#include "driver/capture_tracker.hpp"
#include "call_counters.hpp"
#include "process_state.hpp"
#include "driver/stream_registry.hpp"

namespace streampool::interpose {

namespace {

using AllocFn = decltype(&::cuMemAllocAsync);
using AllocFromPoolFn = decltype(&::cuMemAllocFromPoolAsync);
using FreeFn = decltype(&::cuMemFreeAsync);

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

CUresult allocate(core::Pool* pool, std::size_t bytes, core::StreamKey key, CUdeviceptr* dptr) {
  void* address = nullptr;
  core::Status status = engine().allocate(pool, bytes, key, &address);
  *dptr = core::ok(status) ? reinterpret_cast<CUdeviceptr>(address) : 0;
  if (!core::ok(status)) [[unlikely]] {
    const core::PoolStats stats = engine().stats(pool);
    STREAMPOOL_LOG_WARN("allocation of %zu bytes on stream key %#zx from pool %p failed (status %d): "
                        "reserved %llu, used %llu",
                        bytes, static_cast<std::size_t>(key), static_cast<void*>(pool), static_cast<int>(status),
                        static_cast<unsigned long long>(stats.reserved_current),
                        static_cast<unsigned long long>(stats.used_current));
  }
  return to_cuda(status);
}

CUresult alloc_async(Hook hook, AllocFn real_fn, CUdeviceptr* dptr, size_t bytes, CUstream stream,
                     bool per_thread) noexcept {
  count_call(hook);
  HookScope scope;
  if (bypass(scope)) return forward(real_fn, dptr, bytes, stream);
  if (dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  try {
    if (driver::captures_possible()) [[unlikely]] {
      bool capturing = false;
      CUresult result = driver::stream_capturing(stream, per_thread, &capturing);
      if (result != CUDA_SUCCESS || capturing) return forward(real_fn, dptr, bytes, stream);
    }
    driver::StreamRoute route;
    CUresult result = driver::resolve_stream(stream, per_thread, &route);
    if (result != CUDA_SUCCESS) {
      *dptr = 0;
      return result;
    }
    core::Pool* pool = nullptr;
    result = pools().device_current(route.device, &pool);
    if (result != CUDA_SUCCESS) {
      *dptr = 0;
      return result;
    }
    return allocate(pool, bytes, route.key, dptr);
  } catch (...) {
    *dptr = 0;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
}

CUresult alloc_from_pool_async(Hook hook, AllocFromPoolFn real_fn, CUdeviceptr* dptr, size_t bytes,
                               CUmemoryPool mem_pool, CUstream stream, bool per_thread) noexcept {
  count_call(hook);
  HookScope scope;
  if (bypass(scope)) return forward(real_fn, dptr, bytes, mem_pool, stream);
  if (dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto* pool = reinterpret_cast<core::Pool*>(mem_pool);
  try {
    if (!engine().is_pool(pool)) {
      *dptr = 0;
      return CUDA_ERROR_INVALID_VALUE;
    }
    if (driver::captures_possible()) [[unlikely]] {
      bool capturing = false;
      CUresult result = driver::stream_capturing(stream, per_thread, &capturing);
      if (result != CUDA_SUCCESS || capturing) {
        const core::PoolProps& props = engine().props(pool);
        CUmemoryPool real_pool = nullptr;
        if (real_pool_like(props, &real_pool) == CUDA_SUCCESS) return forward(real_fn, dptr, bytes, real_pool, stream);
        // A driver without pools of that kind: a device pool on the stream's own device is what
        // cuMemAllocAsync on that stream allocates from, so the graph node is the same.
        driver::StreamRoute route;
        result = driver::resolve_stream(stream, per_thread, &route);
        if (result != CUDA_SUCCESS) return result;
        if (props.kind != core::PoolKind::device || route.device != props.location_id) return CUDA_ERROR_NOT_SUPPORTED;
        const driver::DriverTable& table = driver::real();
        return forward(per_thread ? table.cuMemAllocAsync_ptsz : table.cuMemAllocAsync, dptr, bytes, stream);
      }
    }
    driver::StreamRoute route;
    CUresult result = driver::resolve_stream(stream, per_thread, &route);
    if (result != CUDA_SUCCESS) {
      *dptr = 0;
      return result;
    }
    return allocate(pool, bytes, route.key, dptr);
  } catch (...) {
    *dptr = 0;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
}

CUresult free_async(Hook hook, FreeFn real_fn, CUdeviceptr dptr, CUstream stream, bool per_thread) noexcept {
  count_call(hook);
  HookScope scope;
  if (bypass(scope)) return forward(real_fn, dptr, stream);
  if (dptr == 0) return CUDA_SUCCESS;
  try {
    if (driver::captures_possible()) [[unlikely]] {
      bool capturing = false;
      CUresult result = driver::stream_capturing(stream, per_thread, &capturing);
      if (result != CUDA_SUCCESS || capturing) return forward(real_fn, dptr, stream);
    }
    auto* address = reinterpret_cast<void*>(dptr);
    if (!engine().owns(address)) return forward(real_fn, dptr, stream);
    driver::StreamRoute route;
    CUresult result = driver::resolve_stream(stream, per_thread, &route);
    // After the driver's teardown at exit, frees are accepted quietly: the memory is gone anyway.
    if (result == CUDA_ERROR_DEINITIALIZED) return CUDA_SUCCESS;
    if (result != CUDA_SUCCESS) return result;
    core::Status status = engine().free(address, route.key);
    return status == core::Status::deinitialized ? CUDA_SUCCESS : to_cuda(status);
  } catch (...) {
    return CUDA_ERROR_UNKNOWN;
  }
}

}  // namespace

}  // namespace streampool::interpose

using streampool::interpose::Hook;

STREAMPOOL_HOOK CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  return streampool::interpose::alloc_async(Hook::cuMemAllocAsync, streampool::driver::real().cuMemAllocAsync,
                                            dptr, bytesize, hStream, false);
}

STREAMPOOL_HOOK CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  return streampool::interpose::alloc_async(Hook::cuMemAllocAsync_ptsz,
                                            streampool::driver::real().cuMemAllocAsync_ptsz, dptr, bytesize,
                                            hStream, true);
}

STREAMPOOL_HOOK CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                                 CUstream hStream) {
  return streampool::interpose::alloc_from_pool_async(Hook::cuMemAllocFromPoolAsync,
                                                      streampool::driver::real().cuMemAllocFromPoolAsync, dptr,
                                                      bytesize, pool, hStream, false);
}

STREAMPOOL_HOOK CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                                      CUstream hStream) {
  return streampool::interpose::alloc_from_pool_async(Hook::cuMemAllocFromPoolAsync_ptsz,
                                                      streampool::driver::real().cuMemAllocFromPoolAsync_ptsz,
                                                      dptr, bytesize, pool, hStream, true);
}

STREAMPOOL_HOOK CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
  return streampool::interpose::free_async(Hook::cuMemFreeAsync, streampool::driver::real().cuMemFreeAsync, dptr,
                                           hStream, false);
}

STREAMPOOL_HOOK CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) {
  return streampool::interpose::free_async(Hook::cuMemFreeAsync_ptsz,
                                           streampool::driver::real().cuMemFreeAsync_ptsz, dptr, hStream, true);
}
