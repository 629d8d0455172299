// The cudaMallocAsync family of a dynamically linked cudart, answered before libcudart.so.13.
//
// cudart 13 reaches the driver's cuMemAllocAsync through cuGetProcAddress, so streampool serves
// its allocations either way; but measured on an H200 (bench/results/2026-11-29-final),
// cudart's own work per call costs more than streampool's whole allocation (~85 ns per pair) and
// serialises host threads (3-5 M pairs/s at any thread count, against 140 M through the driver
// entry). Under LD_PRELOAD these definitions come first in the global scope, so a program that
// calls them through libcudart.so.13 (PyTorch, nvcc -cudart shared) reaches streampool's hook
// directly. Only the successful path is taken here: anything else (an error, no current
// context yet, STREAMPOOL_DISABLE) goes to cudart's own function, which calls the driver and so
// reaches streampool again, and sets cudart's error state and error codes exactly as cudart
// does. Programs with a static cudart never see these symbols.
#include <dlfcn.h>

#include "driver/cuda_compat.hpp"
#include "driver/settings.hpp"
#include "export.hpp"
#include "hooks/insight/leak_hooks.hpp"
#include "report/oom_report.hpp"

namespace {

constexpr int kCudaSuccess = 0;
constexpr int kCudaErrorInitializationError = 3;  // no cudart below us: nothing to fall back to

template <typename Function>
Function cudart_definition(const char* name) {
  return reinterpret_cast<Function>(dlsym(RTLD_NEXT, name));
}

using MallocAsync = int (*)(void**, size_t, CUstream);
using FreeAsync = int (*)(void*, CUstream);
using MallocFromPoolAsync = int (*)(void**, size_t, CUmemoryPool, CUstream);

template <typename Function, typename... Args>
int fall_back(Function cudart_function, Args... args) {
  return cudart_function == nullptr ? kCudaErrorInitializationError : cudart_function(args...);
}

// streampool's driver hook first; cudart's own function for anything but success.
// A failure reported once: cudart's own call repeats an allocation that already failed here,
// and its second failure is the same one (streampool::interpose::OomRetryScope).
template <typename DriverAllocate, typename CudartCall>
int serve_allocation(void** ptr, DriverAllocate driver_allocate, CudartCall cudart_call) {
  CUdeviceptr address = 0;
  if (ptr == nullptr || streampool::driver::passthrough_requested()) return cudart_call();
  const CUresult result = driver_allocate(&address);
  if (result == CUDA_SUCCESS) {
    *ptr = reinterpret_cast<void*>(address);
    return kCudaSuccess;
  }
  if (result != CUDA_ERROR_OUT_OF_MEMORY) return cudart_call();
  const streampool::interpose::OomRetryScope retry;
  return cudart_call();
}

template <typename DriverFree, typename CudartCall>
int serve_free(DriverFree driver_free, CudartCall cudart_call) {
  if (!streampool::driver::passthrough_requested() && driver_free() == CUDA_SUCCESS) return kCudaSuccess;
  if (streampool::interpose::insight_hooks::leaks_on()) [[unlikely]] {
    // The hooks have classified and reported this free already; cudart's function asks them again.
    const streampool::interpose::insight_hooks::RepeatedFree repeated;
    return cudart_call();
  }
  return cudart_call();
}

}  // namespace

// cuda.h's renaming macros do not cover these names; the driver entry points called are
// streampool's own definitions (bound inside the library by -Bsymbolic).
STREAMPOOL_EXPORT int cudaMallocAsync(void** ptr, size_t size, CUstream stream) {
  static const auto cudart = cudart_definition<MallocAsync>("cudaMallocAsync");
  return serve_allocation(
      ptr, [&](CUdeviceptr* address) { return cuMemAllocAsync(address, size, stream); },
      [&] { return fall_back(cudart, ptr, size, stream); });
}

STREAMPOOL_EXPORT int cudaMallocAsync_ptsz(void** ptr, size_t size, CUstream stream) {
  static const auto cudart = cudart_definition<MallocAsync>("cudaMallocAsync_ptsz");
  return serve_allocation(
      ptr, [&](CUdeviceptr* address) { return cuMemAllocAsync_ptsz(address, size, stream); },
      [&] { return fall_back(cudart, ptr, size, stream); });
}

STREAMPOOL_EXPORT int cudaMallocFromPoolAsync(void** ptr, size_t size, CUmemoryPool pool, CUstream stream) {
  static const auto cudart = cudart_definition<MallocFromPoolAsync>("cudaMallocFromPoolAsync");
  return serve_allocation(
      ptr, [&](CUdeviceptr* address) { return cuMemAllocFromPoolAsync(address, size, pool, stream); },
      [&] { return fall_back(cudart, ptr, size, pool, stream); });
}

STREAMPOOL_EXPORT int cudaMallocFromPoolAsync_ptsz(void** ptr, size_t size, CUmemoryPool pool, CUstream stream) {
  static const auto cudart = cudart_definition<MallocFromPoolAsync>("cudaMallocFromPoolAsync_ptsz");
  return serve_allocation(
      ptr, [&](CUdeviceptr* address) { return cuMemAllocFromPoolAsync_ptsz(address, size, pool, stream); },
      [&] { return fall_back(cudart, ptr, size, pool, stream); });
}

STREAMPOOL_EXPORT int cudaFreeAsync(void* ptr, CUstream stream) {
  static const auto cudart = cudart_definition<FreeAsync>("cudaFreeAsync");
  return serve_free([&] { return cuMemFreeAsync(reinterpret_cast<CUdeviceptr>(ptr), stream); },
                    [&] { return fall_back(cudart, ptr, stream); });
}

STREAMPOOL_EXPORT int cudaFreeAsync_ptsz(void* ptr, CUstream stream) {
  static const auto cudart = cudart_definition<FreeAsync>("cudaFreeAsync_ptsz");
  return serve_free([&] { return cuMemFreeAsync_ptsz(reinterpret_cast<CUdeviceptr>(ptr), stream); },
                    [&] { return fall_back(cudart, ptr, stream); });
}
