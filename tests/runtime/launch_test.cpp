// Fat binary registration and launches, as nvcc's generated host code makes them: the kernel a
// host stub names is launched in the current context under its device name, recorded by the fake.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>

#include "fake_registration.hpp"

namespace {

using runtime_test::fake_driver;
using runtime_test::launches;

void stub_a() {}
void stub_b() {}

class Launch : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    void** handle = __cudaRegisterFatBinary(&runtime_test::g_fat_binary);
    __cudaRegisterFunction(handle, reinterpret_cast<const char*>(&stub_a), nullptr, "_Z6kernelAv", -1, nullptr,
                           nullptr, nullptr, nullptr, nullptr);
    __cudaRegisterFunction(handle, reinterpret_cast<const char*>(&stub_b), nullptr, "_Z6kernelBi", -1, nullptr,
                           nullptr, nullptr, nullptr, nullptr);
    __cudaRegisterFatBinaryEnd(handle);
  }
  void SetUp() override {
    ASSERT_EQ(cudaFree(nullptr), cudaSuccess);  // the driver is loaded
    ASSERT_NE(fake_driver(), nullptr);
    runtime_test::reset_launches();
  }
};

TEST_F(Launch, LaunchByHostStubRecordsTheDeviceNameGridAndBlock) {
  ASSERT_EQ(cudaLaunchKernel(reinterpret_cast<const void*>(&stub_b), dim3(7, 2), dim3(128), nullptr, 0, nullptr),
            cudaSuccess);

  const auto records = launches();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].name, "_Z6kernelBi");
  EXPECT_EQ(records[0].grid[0], 7u);
  EXPECT_EQ(records[0].grid[1], 2u);
  EXPECT_EQ(records[0].block[0], 128u);
}

TEST_F(Launch, ChevronPathPushesPopsAndLaunchesByKernelHandle) {
  ASSERT_EQ(__cudaPushCallConfiguration(dim3(3), dim3(64), 0, nullptr), 0u);
  dim3 grid, block;
  size_t shared = 1;
  cudaStream_t stream = reinterpret_cast<cudaStream_t>(1);
  ASSERT_EQ(__cudaPopCallConfiguration(&grid, &block, &shared, &stream), cudaSuccess);
  cudaKernel_t kernel = nullptr;
  ASSERT_EQ(__cudaGetKernel(&kernel, reinterpret_cast<const void*>(&stub_a)), cudaSuccess);
  ASSERT_EQ(__cudaLaunchKernel(kernel, grid, block, nullptr, shared, stream), cudaSuccess);

  const auto records = launches();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].name, "_Z6kernelAv");
  EXPECT_EQ(records[0].grid[0], 3u);
  EXPECT_EQ(records[0].block[0], 64u);
}

TEST_F(Launch, UnknownFunctionIsAnInvalidHandleAsInCudart13) {
  (void)cudaGetLastError();
  EXPECT_EQ(cudaLaunchKernel(reinterpret_cast<const void*>(&launches), dim3(1), dim3(1), nullptr, 0, nullptr),
            cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidResourceHandle);
  EXPECT_TRUE(launches().empty());
}

TEST_F(Launch, OversizedBlockIsInvalidValueAsInCudart13) {
  EXPECT_EQ(cudaLaunchKernel(reinterpret_cast<const void*>(&stub_a), dim3(1), dim3(2048), nullptr, 0, nullptr),
            cudaErrorInvalidValue);
  EXPECT_TRUE(launches().empty());
  (void)cudaGetLastError();
}

TEST_F(Launch, FuncBySymbolIsEachKernelsOwnDriverFunction) {
  cudaFunction_t a = nullptr;
  cudaFunction_t b = nullptr;

  ASSERT_EQ(cudaGetFuncBySymbol(&a, reinterpret_cast<const void*>(&stub_a)), cudaSuccess);
  ASSERT_EQ(cudaGetFuncBySymbol(&b, reinterpret_cast<const void*>(&stub_b)), cudaSuccess);

  EXPECT_NE(a, nullptr);
  EXPECT_NE(b, nullptr);
  EXPECT_NE(a, b);
  // A pointer that is no kernel: an invalid handle, as cudart 13 answers a launch of one.
  EXPECT_EQ(cudaGetFuncBySymbol(&a, reinterpret_cast<const void*>(&launches)), cudaErrorInvalidResourceHandle);
  (void)cudaGetLastError();
}

}  // namespace
