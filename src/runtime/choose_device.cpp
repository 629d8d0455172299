// cudaChooseDevice: the device that best matches the properties asked for. Only the compute
// capability is compared (the one property programs set before asking): the device with the lowest
// capability at least as high as the one asked for, else the one with the highest capability; ties go
// to the lowest ordinal.
#include "api.hpp"

using namespace streampool::runtime;

CUDART_EXPORT cudaError_t cudaChooseDevice(int* device, const cudaDeviceProp* prop) {
  if (device == nullptr || prop == nullptr) return finish(cudaErrorInvalidValue);
  int count = 0;
  if (const cudaError_t error = cudaGetDeviceCount(&count); error != cudaSuccess) return error;
  const int wanted = prop->major * 10 + prop->minor;
  int best = -1;
  int best_capability = 0;
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    int major = 0;
    int minor = 0;
    CUresult result = cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, ordinal);
    if (result == CUDA_SUCCESS) result = cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, ordinal);
    if (result != CUDA_SUCCESS) return finish(result);
    const int capability = major * 10 + minor;
    const bool fits = capability >= wanted;
    const bool best_fits = best >= 0 && best_capability >= wanted;
    const bool better = best < 0 || (fits && !best_fits) || (fits && best_fits && capability < best_capability) ||
                        (!fits && !best_fits && capability > best_capability);
    if (better) {
      best = ordinal;
      best_capability = capability;
    }
  }
  *device = best;
  return cudaSuccess;
}
