// Fat binary registration and launches, as nvcc's generated host code makes them: the kernel a
// host stub names is launched in the current context under its device name, recorded by the fake.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>

extern "C" {
void** __cudaRegisterFatBinary(void* fatCubin);
void __cudaRegisterFatBinaryEnd(void** fatCubinHandle);
void __cudaRegisterFunction(void** fatCubinHandle, const char* hostFun, char* deviceFun, const char* deviceName,
                            int thread_limit, uint3* tid, uint3* bid, dim3* bDim, dim3* gDim, int* wSize);
unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem, void* stream);
cudaError_t __cudaPopCallConfiguration(dim3* gridDim, dim3* blockDim, size_t* sharedMem, void* stream);
cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* function);
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** args, size_t sharedMem,
                               cudaStream_t stream);
}

namespace {

struct Wrapper {
  int magic;
  int version;
  const unsigned long long* data;
  void* unused;
};

const unsigned long long kImage[4] = {0x00100001ba55ed50ull, 0, 0, 0};
Wrapper g_wrapper{0x466243b1, 1, kImage, nullptr};
void stub_a() {}
void stub_b() {}

struct LaunchRecord {
  std::string name;
  unsigned grid[3];
  unsigned block[3];
};

using Count = unsigned long long (*)();
using At = int (*)(unsigned long long, char*, unsigned long long, unsigned*, unsigned*);
using Reset = void (*)();

void* fake_driver() { return dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD); }

std::vector<LaunchRecord> launches() {
  auto count = reinterpret_cast<Count>(dlsym(fake_driver(), "streampool_fake_launch_count"));
  auto at = reinterpret_cast<At>(dlsym(fake_driver(), "streampool_fake_launch_at"));
  std::vector<LaunchRecord> records;
  for (unsigned long long index = 0; index < count(); ++index) {
    char name[128];
    LaunchRecord record;
    at(index, name, sizeof(name), record.grid, record.block);
    record.name = name;
    records.push_back(record);
  }
  return records;
}

class Launch : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    void** handle = __cudaRegisterFatBinary(&g_wrapper);
    __cudaRegisterFunction(handle, reinterpret_cast<const char*>(&stub_a), nullptr, "_Z6kernelAv", -1, nullptr,
                           nullptr, nullptr, nullptr, nullptr);
    __cudaRegisterFunction(handle, reinterpret_cast<const char*>(&stub_b), nullptr, "_Z6kernelBi", -1, nullptr,
                           nullptr, nullptr, nullptr, nullptr);
    __cudaRegisterFatBinaryEnd(handle);
  }
  void SetUp() override {
    ASSERT_EQ(cudaFree(nullptr), cudaSuccess);  // the driver is loaded
    ASSERT_NE(fake_driver(), nullptr);
    reinterpret_cast<Reset>(dlsym(fake_driver(), "streampool_fake_launch_reset"))();
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
