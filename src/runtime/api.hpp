// What every file of libstreampool_cudart.so shares: how a runtime entry point is defined, the
// error model (errors.cpp), the current device and its primary context (device.cpp) and the
// translation of driver results.
//
// The runtime calls driver entry points by their cu* names. Those names are defined inside this
// library (never exported: the version script keeps them local): streampool's hooks for the
// allocator family and the calls it tracks, generated trampolines into the real driver for the
// rest. So cudaMallocAsync reaches the engine with no extra hop, and cudaEventRecord is tracked as
// cuEventRecord is under the preload.
#pragma once

#include <atomic>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <new>

// A runtime entry point: C linkage, exported (in the libcudart.so.13 version node).
#define CUDART_EXPORT extern "C" __attribute__((visibility("default")))

namespace streampool::runtime {

// cudart's code for a driver result. The two enums share their numbers since CUDA 10 for every
// code both have; a driver code with no runtime counterpart is cudaErrorUnknown.
cudaError_t to_runtime_error(CUresult result) noexcept;

// The error model. Every entry point ends with finish(): a failure becomes the calling thread's
// last error (cudaGetLastError clears it, cudaPeekAtLastError does not); a sticky failure (the
// context is corrupt: an illegal address, a failed launch ...) is also kept for the device until
// cudaDeviceReset and answered by every later call that needs the context.
cudaError_t finish(cudaError_t error) noexcept;
inline cudaError_t finish(CUresult result) noexcept {
  return result == CUDA_SUCCESS ? cudaSuccess : finish(to_runtime_error(result));
}
bool is_sticky(cudaError_t error) noexcept;
void record_sticky(int device, cudaError_t error) noexcept;
cudaError_t sticky_error(int device) noexcept;
void clear_sticky(int device) noexcept;

namespace detail {
// Bumped by every reset; a thread's context is ready while its epoch is the current one.
extern std::atomic<unsigned> g_epoch;
extern constinit thread_local unsigned t_ready_epoch __attribute__((tls_model("initial-exec")));
// Devices with a sticky error (0 nearly always).
extern std::atomic<int> g_sticky_count;
}  // namespace detail

// This thread's context was made ready and no reset happened since (one thread-local read and one
// atomic load).
inline bool context_ready() noexcept {
  return detail::t_ready_epoch == detail::g_epoch.load(std::memory_order_acquire);
}
// ensure_context's whole work: makes the context ready, then the device's sticky error.
cudaError_t ensure_context_checked() noexcept;
// Makes the current device's primary context current on this thread (retaining it on first use),
// unless the thread already has a current context (set through the driver API, which the runtime
// then uses). The answer is the device's sticky error, if it has one. Inline for the common case
// (ready, no sticky error anywhere): an allocation through the runtime pays no call for it.
inline cudaError_t ensure_context() noexcept {
  if (context_ready() && detail::g_sticky_count.load(std::memory_order_relaxed) == 0) [[likely]] return cudaSuccess;
  return ensure_context_checked();
}
// The calling thread's device (cudaGetDevice's answer once a context is current).
int current_device() noexcept;
// `device`'s primary context, retained by this process (once) but not made current: for calls that
// name another device's context (peer copies, peer access).
cudaError_t primary_context(int device, CUcontext* context) noexcept;
// Forgets this process's contexts of `device` (cudaDeviceReset): the next call retains it again.
void forget_context(int device) noexcept;

// A stream handle as the driver means it: 0 is the legacy default stream, except in the per-thread
// (_ptsz/_ptds) entry points, where it is the calling thread's default stream. cudaStreamLegacy
// and cudaStreamPerThread have the driver's values (CU_STREAM_LEGACY, CU_STREAM_PER_THREAD).
// A pointer as the driver's unified address (every copy and memset goes by unified addressing).
inline CUdeviceptr unified_address(const void* pointer) noexcept { return reinterpret_cast<CUdeviceptr>(pointer); }

inline CUstream driver_stream(cudaStream_t stream, bool per_thread) noexcept {
  if (stream == nullptr && per_thread) return CU_STREAM_PER_THREAD;
  return stream;
}

// Runs `body` (returning cudaError_t) so that no C++ exception leaves an entry point.
template <class Body>
cudaError_t guarded(Body&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return finish(cudaErrorMemoryAllocation);
  } catch (...) {
    return finish(cudaErrorUnknown);
  }
}

// The common shape of an entry point that needs a context and then one driver call.
#define STREAMPOOL_WITH_CONTEXT(driver_call)                                        \
  do {                                                                              \
    if (const cudaError_t streampool_ctx_ = ::streampool::runtime::ensure_context(); \
        streampool_ctx_ != cudaSuccess) {                                           \
      return ::streampool::runtime::finish(streampool_ctx_);                        \
    }                                                                               \
    return ::streampool::runtime::finish(driver_call);                              \
  } while (false)

}  // namespace streampool::runtime
