// CHECK(call) for the single-file driver-API programs of tools/gpu: a failed call prints where and
// its CUresult, and the program exits 2 (a setup failure, apart from a verdict's exit 1); and the
// start they share.
#pragma once

#include <cuda.h>

#include <cstdio>
#include <cstdlib>

#define CHECK(call)                                                                   \
  do {                                                                                \
    CUresult r_ = (call);                                                             \
    if (r_ != CUDA_SUCCESS) {                                                         \
      std::printf("%s:%d %s = %d\n", __FILE__, __LINE__, #call, static_cast<int>(r_)); \
      std::exit(2);                                                                   \
    }                                                                                 \
  } while (0)

// cuInit, then device 0's primary context retained and made current; returns the device.
inline CUdevice start_on_device_0() {
  CHECK(cuInit(0));
  CUdevice device;
  CHECK(cuDeviceGet(&device, 0));
  CUcontext context;
  CHECK(cuDevicePrimaryCtxRetain(&context, device));
  CHECK(cuCtxSetCurrent(context));
  return device;
}
