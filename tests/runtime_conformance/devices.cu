// Devices: count, current device, properties against attributes, versions, and lazy primary
// context initialisation (in processes of their own, so no earlier test made the context).
#include <cuda.h>
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>

#include "conformance.cuh"

using conformance::clear_last_error;

namespace {

TEST(Devices, ThereIsAtLeastOneDevice) {
  int count = 0;
  ASSERT_CUDA(cudaGetDeviceCount(&count));
  EXPECT_GE(count, 1);
}

TEST(Devices, SetDeviceThenGetDeviceAnswersIt) {
  int count = 0;
  ASSERT_CUDA(cudaGetDeviceCount(&count));
  for (int device = count - 1; device >= 0; --device) {
    int current = -1;
    ASSERT_CUDA(cudaSetDevice(device));
    ASSERT_CUDA(cudaGetDevice(&current));
    EXPECT_EQ(current, device);
  }
}

TEST(Devices, NullOutputsAreInvalidValue) {
  clear_last_error();
  EXPECT_EQ(cudaGetDevice(nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetDeviceProperties(nullptr, 0), cudaErrorInvalidValue);
  EXPECT_EQ(cudaRuntimeGetVersion(nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaDriverGetVersion(nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
}

TEST(Devices, FailedSetDeviceKeepsTheCurrentDevice) {
  clear_last_error();
  int count = 0, current = -1;
  ASSERT_CUDA(cudaGetDeviceCount(&count));
  ASSERT_CUDA(cudaSetDevice(0));

  EXPECT_EQ(cudaSetDevice(count), cudaErrorInvalidDevice);

  ASSERT_CUDA(cudaGetDevice(&current));
  EXPECT_EQ(current, 0);
  clear_last_error();
}

int attribute(cudaDeviceAttr which, int device = 0) {
  int value = -1;
  EXPECT_CUDA(cudaDeviceGetAttribute(&value, which, device));
  return value;
}

TEST(Devices, PropertiesAgreeWithAttributes) {
  cudaDeviceProp properties{};
  ASSERT_CUDA(cudaGetDeviceProperties(&properties, 0));

  EXPECT_GT(std::strlen(properties.name), 0u);
  EXPECT_GT(properties.totalGlobalMem, 0u);
  EXPECT_EQ(properties.major, attribute(cudaDevAttrComputeCapabilityMajor));
  EXPECT_EQ(properties.minor, attribute(cudaDevAttrComputeCapabilityMinor));
  EXPECT_EQ(properties.multiProcessorCount, attribute(cudaDevAttrMultiProcessorCount));
  EXPECT_EQ(properties.maxThreadsPerBlock, attribute(cudaDevAttrMaxThreadsPerBlock));
  EXPECT_EQ(properties.warpSize, attribute(cudaDevAttrWarpSize));
  EXPECT_EQ(properties.maxGridSize[0], attribute(cudaDevAttrMaxGridDimX));
  EXPECT_EQ(properties.maxThreadsDim[0], attribute(cudaDevAttrMaxBlockDimX));
  EXPECT_EQ(static_cast<int>(properties.sharedMemPerBlock), attribute(cudaDevAttrMaxSharedMemoryPerBlock));
  EXPECT_EQ(properties.l2CacheSize, attribute(cudaDevAttrL2CacheSize));
  EXPECT_EQ(properties.pciBusID, attribute(cudaDevAttrPciBusId));
  EXPECT_EQ(properties.managedMemory, attribute(cudaDevAttrManagedMemory));
  EXPECT_EQ(properties.unifiedAddressing, attribute(cudaDevAttrUnifiedAddressing));
  EXPECT_EQ(properties.concurrentManagedAccess, attribute(cudaDevAttrConcurrentManagedAccess));
  EXPECT_EQ(properties.cooperativeLaunch, attribute(cudaDevAttrCooperativeLaunch));
  EXPECT_EQ(properties.warpSize, 32);
}

TEST(Devices, AttributeOfAMissingDeviceIsInvalidDevice) {
  clear_last_error();
  int count = 0, value = 0;
  ASSERT_CUDA(cudaGetDeviceCount(&count));
  EXPECT_EQ(cudaDeviceGetAttribute(&value, cudaDevAttrWarpSize, count), cudaErrorInvalidDevice);
  clear_last_error();
}

TEST(Devices, RuntimeVersionIsCudart13AndTheDriverIsNotOlder) {
  int runtime = 0, driver = 0;
  ASSERT_CUDA(cudaRuntimeGetVersion(&runtime));
  ASSERT_CUDA(cudaDriverGetVersion(&driver));
  EXPECT_EQ(runtime, CUDART_VERSION);
  EXPECT_GE(driver, 13000);
}

TEST(Devices, DeviceResetLeavesTheDeviceUsable) {
  void* memory = nullptr;
  ASSERT_CUDA(cudaMalloc(&memory, 64));
  ASSERT_CUDA(cudaDeviceReset());

  EXPECT_CUDA(cudaMalloc(&memory, 64));
  EXPECT_CUDA(cudaMemset(memory, 1, 64));
  EXPECT_CUDA(cudaDeviceSynchronize());
  EXPECT_CUDA(cudaFree(memory));
}

// The driver the runtime loaded (it is in the process by its SONAME once the runtime started).
using CtxGetCurrent = CUresult (*)(CUcontext*);
using PrimaryCtxRetain = CUresult (*)(CUcontext*, CUdevice);
using PrimaryCtxRelease = CUresult (*)(CUdevice);

CUcontext current_driver_context() {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (driver == nullptr) return reinterpret_cast<CUcontext>(-1);
  auto get_current = reinterpret_cast<CtxGetCurrent>(dlsym(driver, "cuCtxGetCurrent"));
  CUcontext context = reinterpret_cast<CUcontext>(-1);
  if (get_current == nullptr || get_current(&context) != CUDA_SUCCESS) return reinterpret_cast<CUcontext>(-1);
  return context;
}

int lazy_init_steps() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count < 1) return 10;
  if (current_driver_context() != nullptr) return 12;  // counting devices makes no context current
  if (cudaFree(nullptr) != cudaSuccess) return 13;
  CUcontext context = current_driver_context();
  if (context == nullptr || context == reinterpret_cast<CUcontext>(-1)) return 14;
  // The context the runtime made current is the device's primary context.
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  auto retain = reinterpret_cast<PrimaryCtxRetain>(dlsym(driver, "cuDevicePrimaryCtxRetain"));
  auto release = reinterpret_cast<PrimaryCtxRelease>(dlsym(driver, "cuDevicePrimaryCtxRelease_v2"));
  CUcontext primary = nullptr;
  if (retain == nullptr || release == nullptr || retain(&primary, 0) != CUDA_SUCCESS) return 15;
  release(0);
  return primary == context ? 0 : 16;
}

int set_device_steps() {
  if (cudaSetDevice(0) != cudaSuccess) return 10;
  const CUcontext context = current_driver_context();
  return context != nullptr && context != reinterpret_cast<CUcontext>(-1) ? 0 : 11;
}

TEST(DevicesDeathTest, PrimaryContextIsMadeCurrentByTheFirstCallThatNeedsIt) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(std::exit(lazy_init_steps()), ::testing::ExitedWithCode(0), "");
}

TEST(DevicesDeathTest, SetDeviceMakesThePrimaryContextCurrent) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(std::exit(set_device_steps()), ::testing::ExitedWithCode(0), "");
}

}  // namespace
