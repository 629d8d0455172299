// Small context helpers for the driver layer's slow paths: the number of devices, the device a
// context belongs to, and "make this device's (or this) context current for a moment".
//
// VMM and event calls need a current context on some drivers, and the legacy default stream of a
// context can only be named while that context is current. The helpers push a context only when
// the current one is not already right, and pop it again in the destructor, so the program's own
// context stack is left exactly as it was.
#pragma once

#include "cuda_compat.hpp"

namespace streampool::driver {

// cuDeviceGetCount, cached after the first success.
CUresult device_count(int* count) noexcept;
// True for 0 <= device < device_count().
bool valid_device(int device) noexcept;

// The device of a context: cuCtxGetDevice with the context made current if needed. Not cached here
// (the stream registry caches it).
CUresult device_of_context(CUcontext context, CUdevice* device) noexcept;

// The primary context of a device, retained once by streampool and never released (so that VMM
// calls for a device always have a context to run in).
CUresult primary_context(CUdevice device, CUcontext* context) noexcept;
// The device's primary context was destroyed (reset, or released to zero): forget the cached
// handle, so that the next use retains the new one.
void forget_primary_context(CUdevice device) noexcept;

// Makes `context` current until destroyed (if it is not current already).
class ScopedContext {
 public:
  explicit ScopedContext(CUcontext context) noexcept;
  ~ScopedContext();
  ScopedContext(const ScopedContext&) = delete;
  ScopedContext& operator=(const ScopedContext&) = delete;
  CUresult result() const noexcept { return result_; }

 private:
  bool pushed_ = false;
  CUresult result_ = CUDA_SUCCESS;
};

// Makes a context of `device` current until destroyed: the current one if it already belongs to
// that device, else the device's primary context.
class ScopedDeviceContext {
 public:
  explicit ScopedDeviceContext(CUdevice device) noexcept;
  ~ScopedDeviceContext();
  ScopedDeviceContext(const ScopedDeviceContext&) = delete;
  ScopedDeviceContext& operator=(const ScopedDeviceContext&) = delete;
  CUresult result() const noexcept { return result_; }

 private:
  bool pushed_ = false;
  CUresult result_ = CUDA_SUCCESS;
};

}  // namespace streampool::driver
