#include "device_context.hpp"

#include <atomic>
#include <mutex>

#include "driver_table.hpp"

namespace streampool::driver {

namespace {

std::atomic<int> cached_device_count{-1};

// Primary contexts retained so far, one per device ordinal; devices beyond the array are served
// uncached (retained again on each use, which the driver reference-counts, and never released).
constexpr int kMaxCachedDevices = 64;
std::atomic<CUcontext> retained_primary[kMaxCachedDevices];

}  // namespace

CUresult device_count(int* count) noexcept {
  int known = cached_device_count.load(std::memory_order_acquire);
  if (known >= 0) {
    *count = known;
    return CUDA_SUCCESS;
  }
  const DriverTable& table = real();
  if (table.cuDeviceGetCount == nullptr) return missing_entry_result();
  int fresh = 0;
  CUresult result = table.cuDeviceGetCount(&fresh);
  if (result != CUDA_SUCCESS) return result;
  cached_device_count.store(fresh, std::memory_order_release);
  *count = fresh;
  return CUDA_SUCCESS;
}

bool valid_device(int device) noexcept {
  int count = 0;
  return device >= 0 && device_count(&count) == CUDA_SUCCESS && device < count;
}

CUresult device_of_context(CUcontext context, CUdevice* device) noexcept {
  const DriverTable& table = real();
  if (table.cuCtxGetDevice == nullptr) return missing_entry_result();
  ScopedContext scope(context);
  if (scope.result() != CUDA_SUCCESS) return scope.result();
  return table.cuCtxGetDevice(device);
}

CUresult primary_context(CUdevice device, CUcontext* context) noexcept {
  if (device >= 0 && device < kMaxCachedDevices) {
    CUcontext known = retained_primary[device].load(std::memory_order_acquire);
    if (known != nullptr) {
      *context = known;
      return CUDA_SUCCESS;
    }
  }
  const DriverTable& table = real();
  if (table.cuDevicePrimaryCtxRetain == nullptr) return missing_entry_result();
  CUcontext fresh = nullptr;
  CUresult result = table.cuDevicePrimaryCtxRetain(&fresh, device);
  if (result != CUDA_SUCCESS) return result;
  if (device >= 0 && device < kMaxCachedDevices) {
    CUcontext expected = nullptr;
    // A racing thread may have retained it too: the driver counts both retains, which is harmless.
    retained_primary[device].compare_exchange_strong(expected, fresh, std::memory_order_acq_rel);
  }
  *context = fresh;
  return CUDA_SUCCESS;
}

void forget_primary_context(CUdevice device) noexcept {
  if (device >= 0 && device < kMaxCachedDevices) retained_primary[device].store(nullptr, std::memory_order_release);
}

ScopedContext::ScopedContext(CUcontext context) noexcept {
  const DriverTable& table = real();
  if (table.cuCtxGetCurrent == nullptr || table.cuCtxPushCurrent_v2 == nullptr ||
      table.cuCtxPopCurrent_v2 == nullptr) {
    result_ = missing_entry_result();
    return;
  }
  CUcontext current = nullptr;
  result_ = table.cuCtxGetCurrent(&current);
  if (result_ != CUDA_SUCCESS || current == context) return;
  result_ = table.cuCtxPushCurrent_v2(context);
  pushed_ = result_ == CUDA_SUCCESS;
}

ScopedContext::~ScopedContext() {
  if (pushed_) {
    CUcontext popped = nullptr;
    real().cuCtxPopCurrent_v2(&popped);
  }
}

ScopedDeviceContext::ScopedDeviceContext(CUdevice device) noexcept {
  const DriverTable& table = real();
  if (table.cuCtxGetCurrent == nullptr || table.cuCtxGetDevice == nullptr ||
      table.cuCtxPushCurrent_v2 == nullptr || table.cuCtxPopCurrent_v2 == nullptr) {
    result_ = missing_entry_result();
    return;
  }
  CUcontext current = nullptr;
  if (table.cuCtxGetCurrent(&current) == CUDA_SUCCESS && current != nullptr) {
    CUdevice current_device = -1;
    if (table.cuCtxGetDevice(&current_device) == CUDA_SUCCESS && current_device == device) return;
  }
  CUcontext primary = nullptr;
  result_ = primary_context(device, &primary);
  if (result_ != CUDA_SUCCESS) return;
  result_ = table.cuCtxPushCurrent_v2(primary);
  pushed_ = result_ == CUDA_SUCCESS;
}

ScopedDeviceContext::~ScopedDeviceContext() {
  if (pushed_) {
    CUcontext popped = nullptr;
    real().cuCtxPopCurrent_v2(&popped);
  }
}

}  // namespace streampool::driver
