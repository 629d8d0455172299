// What the runtime's tests share: the registration ABI nvcc's host code calls (declared here, as
// no CUDA header declares it), a fat binary the fake driver loads, and the fake driver's record of
// launches (streampool_fake_launch_*), read through dlsym of the libcuda.so.1 the runtime loaded.
#pragma once

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <string>
#include <vector>

extern "C" {
void** __cudaRegisterFatBinary(void* fatCubin);
void __cudaRegisterFatBinaryEnd(void** fatCubinHandle);
void __cudaRegisterFunction(void** fatCubinHandle, const char* hostFun, char* deviceFun, const char* deviceName,
                            int thread_limit, uint3* tid, uint3* bid, dim3* bDim, dim3* gDim, int* wSize);
void __cudaRegisterVar(void** fatCubinHandle, char* hostVar, char* deviceAddress, const char* deviceName, int ext,
                       size_t size, int constant, int global);
unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem, void* stream);
cudaError_t __cudaPopCallConfiguration(dim3* gridDim, dim3* blockDim, size_t* sharedMem, void* stream);
cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* function);
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** args, size_t sharedMem,
                               cudaStream_t stream);
}

namespace runtime_test {

// The fat binary wrapper nvcc emits (magic, version, image), around an image the fake accepts.
struct FatBinaryWrapper {
  int magic;
  int version;
  const unsigned long long* data;
  void* unused;
};
inline const unsigned long long kFakeImage[4] = {0x00100001ba55ed50ull, 0, 0, 0};
inline FatBinaryWrapper g_fat_binary{0x466243b1, 1, kFakeImage, nullptr};

// Registers `stub` as the kernel `device_name` of a fat binary of its own.
inline void register_kernel(void (*stub)(), const char* device_name) {
  void** handle = __cudaRegisterFatBinary(&g_fat_binary);
  __cudaRegisterFunction(handle, reinterpret_cast<const char*>(stub), nullptr, device_name, -1, nullptr, nullptr,
                         nullptr, nullptr, nullptr);
  __cudaRegisterFatBinaryEnd(handle);
}

inline void* fake_driver() { return dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD); }

template <class Function>
Function fake(const char* name) {
  return reinterpret_cast<Function>(dlsym(fake_driver(), name));
}

struct LaunchRecord {
  std::string name;
  unsigned grid[3];
  unsigned block[3];
};

// The fake's launches since its last reset, in order.
inline std::vector<LaunchRecord> launches() {
  const auto count = fake<unsigned long long (*)()>("streampool_fake_launch_count")();
  const auto at = fake<int (*)(unsigned long long, char*, unsigned long long, unsigned*, unsigned*)>(
      "streampool_fake_launch_at");
  std::vector<LaunchRecord> records;
  for (unsigned long long index = 0; index < count; ++index) {
    char name[128];
    LaunchRecord record{};
    at(index, name, sizeof(name), record.grid, record.block);
    record.name = name;
    records.push_back(record);
  }
  return records;
}

inline std::vector<std::string> launched_names() {
  std::vector<std::string> names;
  for (const LaunchRecord& record : launches()) names.push_back(record.name);
  return names;
}

inline void reset_launches() { fake<void (*)()>("streampool_fake_launch_reset")(); }

}  // namespace runtime_test
