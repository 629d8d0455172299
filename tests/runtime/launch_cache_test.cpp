// The launch hot path: a thread's launches of a kernel are answered from a per-thread cache keyed by
// the kernel and the current context, and that cache must never launch a stale function: a reset,
// or another context made current through the driver API, loads the module again. Also the
// <<<>>> configuration stack's bound, and cudaSetDevice's shortcut when the device is current.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "fake_registration.hpp"

namespace {

using runtime_test::fake;
using runtime_test::fake_driver;
using runtime_test::launched_names;

void stub_c() {}
void stub_d() {}

unsigned long long calls_of(const char* entry_point) {
  return fake<unsigned long long (*)(const char*)>("streampool_fake_counter")(entry_point);
}

cudaError_t launch(void (*stub)()) {
  return cudaLaunchKernel(reinterpret_cast<const void*>(stub), dim3(1), dim3(1), nullptr, 0, nullptr);
}

class LaunchCache : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    void** handle = __cudaRegisterFatBinary(&runtime_test::g_fat_binary);
    __cudaRegisterFunction(handle, reinterpret_cast<const char*>(&stub_c), nullptr, "_Z6kernelCv", -1, nullptr,
                           nullptr, nullptr, nullptr, nullptr);
    __cudaRegisterFunction(handle, reinterpret_cast<const char*>(&stub_d), nullptr, "_Z6kernelDv", -1, nullptr,
                           nullptr, nullptr, nullptr, nullptr);
    __cudaRegisterFatBinaryEnd(handle);
  }
  void SetUp() override {
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    ASSERT_EQ(cudaFree(nullptr), cudaSuccess);
    ASSERT_NE(fake_driver(), nullptr);
    fake<void (*)()>("streampool_fake_launch_reset")();
  }
};

TEST_F(LaunchCache, RepeatedLaunchesByStubAndByHandleEachLaunchTheirOwnKernel) {
  cudaKernel_t handle_c = nullptr;
  cudaKernel_t handle_d = nullptr;
  ASSERT_EQ(__cudaGetKernel(&handle_c, reinterpret_cast<const void*>(&stub_c)), cudaSuccess);
  ASSERT_EQ(__cudaGetKernel(&handle_d, reinterpret_cast<const void*>(&stub_d)), cudaSuccess);

  for (int round = 0; round < 3; ++round) {
    ASSERT_EQ(launch(&stub_c), cudaSuccess);
    ASSERT_EQ(launch(&stub_d), cudaSuccess);
    ASSERT_EQ(__cudaLaunchKernel(handle_d, dim3(1), dim3(1), nullptr, 0, nullptr), cudaSuccess);
    ASSERT_EQ(__cudaLaunchKernel(handle_c, dim3(1), dim3(1), nullptr, 0, nullptr), cudaSuccess);
  }

  const std::vector<std::string> round = {"_Z6kernelCv", "_Z6kernelDv", "_Z6kernelDv", "_Z6kernelCv"};
  std::vector<std::string> expected;
  for (int index = 0; index < 3; ++index) expected.insert(expected.end(), round.begin(), round.end());
  EXPECT_EQ(launched_names(), expected);
}

TEST_F(LaunchCache, LaunchesAfterDeviceResetLoadTheModuleAndTheirFunctionsAgain) {
  ASSERT_EQ(launch(&stub_c), cudaSuccess);
  ASSERT_EQ(launch(&stub_d), cudaSuccess);  // both cached for the primary context
  const unsigned long long loads_before = calls_of("cuModuleLoadData");
  const unsigned long long lookups_before = calls_of("cuModuleGetFunction");

  ASSERT_EQ(cudaDeviceReset(), cudaSuccess);
  ASSERT_EQ(launch(&stub_c), cudaSuccess);  // makes the (same) primary context ready again
  ASSERT_EQ(launch(&stub_d), cudaSuccess);  // must not take the function from before the reset

  EXPECT_EQ(calls_of("cuModuleLoadData"), loads_before + 1);
  EXPECT_EQ(calls_of("cuModuleGetFunction"), lookups_before + 2);
  EXPECT_EQ(launched_names().size(), 4u);
}

TEST_F(LaunchCache, LaunchInAContextMadeCurrentThroughTheDriverLoadsTheModuleThere) {
  ASSERT_EQ(launch(&stub_d), cudaSuccess);  // cached for the primary context
  CUcontext other = nullptr;
  ASSERT_EQ(fake<CUresult (*)(CUcontext*, unsigned, CUdevice)>("cuCtxCreate_v2")(&other, 0, 0), CUDA_SUCCESS);
  const unsigned long long loads_before = calls_of("cuModuleLoadData");

  const cudaError_t in_other = launch(&stub_d);
  const unsigned long long loads_after = calls_of("cuModuleLoadData");
  CUcontext popped = nullptr;
  ASSERT_EQ(fake<CUresult (*)(CUcontext*)>("cuCtxPopCurrent_v2")(&popped), CUDA_SUCCESS);
  ASSERT_EQ(fake<CUresult (*)(CUcontext)>("cuCtxDestroy_v2")(other), CUDA_SUCCESS);

  EXPECT_EQ(in_other, cudaSuccess);
  EXPECT_EQ(popped, other);
  EXPECT_EQ(loads_after, loads_before + 1);
}

TEST_F(LaunchCache, AnotherThreadLaunchesThroughItsOwnCache) {
  ASSERT_EQ(launch(&stub_c), cudaSuccess);
  cudaError_t from_thread = cudaErrorUnknown;
  std::thread([&] { from_thread = launch(&stub_d); }).join();

  EXPECT_EQ(from_thread, cudaSuccess);
  EXPECT_EQ(launched_names(), (std::vector<std::string>{"_Z6kernelCv", "_Z6kernelDv"}));
}

TEST_F(LaunchCache, SetDeviceOfTheCurrentDeviceMakesItsPrimaryContextCurrentAgain) {
  CUcontext primary = nullptr;
  const auto get_current = fake<CUresult (*)(CUcontext*)>("cuCtxGetCurrent");
  ASSERT_EQ(get_current(&primary), CUDA_SUCCESS);
  CUcontext other = nullptr;
  ASSERT_EQ(fake<CUresult (*)(CUcontext*, unsigned, CUdevice)>("cuCtxCreate_v2")(&other, 0, 0), CUDA_SUCCESS);

  const cudaError_t set = cudaSetDevice(0);
  CUcontext current = nullptr;
  ASSERT_EQ(get_current(&current), CUDA_SUCCESS);
  ASSERT_EQ(fake<CUresult (*)(CUcontext)>("cuCtxDestroy_v2")(other), CUDA_SUCCESS);
  ASSERT_EQ(fake<CUresult (*)(CUcontext)>("cuCtxSetCurrent")(primary), CUDA_SUCCESS);

  EXPECT_EQ(set, cudaSuccess);
  EXPECT_EQ(current, primary);
}

TEST(CallConfiguration, NestedConfigurationsPopInReverseOrderUpToTheBound) {
  constexpr unsigned kBound = 32;
  for (unsigned depth = 0; depth < kBound; ++depth) {
    ASSERT_EQ(__cudaPushCallConfiguration(dim3(depth + 1), dim3(1), depth, nullptr), 0u) << depth;
  }
  (void)cudaGetLastError();

  EXPECT_NE(__cudaPushCallConfiguration(dim3(99), dim3(1), 0, nullptr), 0u);  // the launch is skipped
  EXPECT_EQ(cudaGetLastError(), cudaErrorLaunchOutOfResources);
  for (unsigned depth = kBound; depth-- > 0;) {
    dim3 grid, block;
    size_t shared = 0;
    cudaStream_t stream = nullptr;
    ASSERT_EQ(__cudaPopCallConfiguration(&grid, &block, &shared, &stream), cudaSuccess);
    EXPECT_EQ(grid.x, depth + 1);
    EXPECT_EQ(shared, depth);
  }
  dim3 grid, block;
  size_t shared = 0;
  cudaStream_t stream = nullptr;
  EXPECT_EQ(__cudaPopCallConfiguration(&grid, &block, &shared, &stream), cudaErrorMissingConfiguration);
  (void)cudaGetLastError();
}

}  // namespace
