// Kernels: launch configuration errors, function attributes and __device__ variables reached by
// cudaMemcpyToSymbol / FromSymbol (no kernel needs to run for those); on a GPU the results of
// <<<>>> launches with dynamic shared memory, cudaLaunchKernel, cudaLaunchKernelExC with a launch
// attribute, a cooperative launch whose grid synchronises, occupancy, a kernel reading and writing
// __device__ variables and a __managed__ variable shared with the host.
#include <cooperative_groups.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "conformance.cuh"

using conformance::clear_last_error;

namespace {

constexpr int kCount = 1024;

__device__ int g_input[kCount];
__device__ int g_output[kCount];
__managed__ int g_managed_counter;

__global__ void scale(const int* in, int* out, int count, int factor) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) out[i] = in[i] * factor;
}

__global__ void reverse_block(int* values) {
  extern __shared__ int staged[];
  const int i = threadIdx.x;
  staged[i] = values[i];
  __syncthreads();
  values[i] = staged[blockDim.x - 1 - i];
}

__global__ void symbols_double() {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < kCount) g_output[i] = 2 * g_input[i];
}

__global__ void managed_add(int amount) { atomicAdd(&g_managed_counter, amount); }

// Every block adds its index into its slot; after the grid synchronises, block 0 sums all slots.
__global__ void grid_sum(int* slots, int* total) {
  namespace cg = cooperative_groups;
  cg::grid_group grid = cg::this_grid();
  if (threadIdx.x == 0) slots[blockIdx.x] = static_cast<int>(blockIdx.x);
  grid.sync();
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    int sum = 0;
    for (unsigned b = 0; b < gridDim.x; ++b) sum += slots[b];
    *total = sum;
  }
}

void not_a_kernel() {}

std::vector<int> ramp() {
  std::vector<int> values(kCount);
  std::iota(values.begin(), values.end(), 0);
  return values;
}

// Launch errors as NVIDIA's cudart 13 answers them on driver 580: a grid or block the device cannot
// run is cudaErrorInvalidValue (not InvalidConfiguration), and a pointer that is no kernel is taken
// for a cudaKernel_t handle and is cudaErrorInvalidResourceHandle (not InvalidDeviceFunction).
TEST(Kernels, BlockLargerThanTheDeviceAllowsIsInvalidValueAndNotSticky) {
  clear_last_error();
  int* out = nullptr;
  ASSERT_CUDA(cudaMalloc(&out, kCount * sizeof(int)));

  scale<<<1, 4096>>>(out, out, kCount, 1);

  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  scale<<<1, 256>>>(out, out, kCount, 1);
  EXPECT_CUDA(cudaGetLastError());
  EXPECT_CUDA(cudaDeviceSynchronize());
  EXPECT_CUDA(cudaFree(out));
}

TEST(Kernels, EmptyGridIsInvalidValue) {
  clear_last_error();
  int* out = nullptr;
  ASSERT_CUDA(cudaMalloc(&out, kCount * sizeof(int)));

  scale<<<0, 256>>>(out, out, kCount, 1);

  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_CUDA(cudaFree(out));
}

TEST(Kernels, LaunchOfAHostFunctionIsAnInvalidHandle) {
  clear_last_error();
  EXPECT_EQ(cudaLaunchKernel(reinterpret_cast<const void*>(&not_a_kernel), dim3(1), dim3(1), nullptr, 0, nullptr),
            cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidResourceHandle);
}

TEST(Kernels, FuncGetAttributesReportsTheThreadLimit) {
  cudaFuncAttributes attributes{};
  ASSERT_CUDA(cudaFuncGetAttributes(&attributes, scale));
  EXPECT_GT(attributes.maxThreadsPerBlock, 0);
  EXPECT_LE(attributes.maxThreadsPerBlock, 1024);
  EXPECT_GE(attributes.numRegs, 0);
}

TEST(Kernels, FuncGetAttributesOfAHostFunctionIsAnInvalidHandle) {
  clear_last_error();
  cudaFuncAttributes attributes{};
  EXPECT_EQ(cudaFuncGetAttributes(&attributes, reinterpret_cast<const void*>(&not_a_kernel)),
            cudaErrorInvalidResourceHandle);
  clear_last_error();
}

TEST(Symbols, MemcpyToSymbolThenFromSymbolRoundTrips) {
  const std::vector<int> values = ramp();
  std::vector<int> back(kCount);

  ASSERT_CUDA(cudaMemcpyToSymbol(g_input, values.data(), kCount * sizeof(int)));
  ASSERT_CUDA(cudaMemcpyFromSymbol(back.data(), g_input, kCount * sizeof(int)));

  EXPECT_EQ(back, values);
}

TEST(Symbols, OffsetCopiesReachTheRightElements) {
  const int value = 31337;
  int back = 0;

  ASSERT_CUDA(cudaMemcpyToSymbol(g_input, &value, sizeof(int), 10 * sizeof(int)));
  ASSERT_CUDA(cudaMemcpyFromSymbol(&back, g_input, sizeof(int), 10 * sizeof(int)));

  EXPECT_EQ(back, value);
}

TEST(Symbols, CopiesInTheWrongDirectionAreInvalidMemcpyDirection) {
  clear_last_error();
  int value = 1;

  EXPECT_EQ(cudaMemcpyToSymbol(g_input, &value, sizeof(int), 0, cudaMemcpyDeviceToHost),
            cudaErrorInvalidMemcpyDirection);
  EXPECT_EQ(cudaMemcpyFromSymbol(&value, g_input, sizeof(int), 0, cudaMemcpyHostToDevice),
            cudaErrorInvalidMemcpyDirection);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidMemcpyDirection);
}

TEST(Symbols, CopyPastTheEndOfTheVariableIsInvalidValue) {
  clear_last_error();
  std::vector<int> values(kCount + 1);

  EXPECT_EQ(cudaMemcpyToSymbol(g_input, values.data(), values.size() * sizeof(int)), cudaErrorInvalidValue);
  clear_last_error();
}

TEST(Symbols, SymbolAddressIsDeviceMemoryOfTheVariable) {
  void* address = nullptr;
  ASSERT_CUDA(cudaGetSymbolAddress(&address, g_output));
  const int value = 77;
  int back = 0;

  ASSERT_CUDA(cudaMemcpy(address, &value, sizeof(int), cudaMemcpyHostToDevice));
  ASSERT_CUDA(cudaMemcpyFromSymbol(&back, g_output, sizeof(int)));

  EXPECT_EQ(back, value);
}

class KernelsOnGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_CUDA(cudaMalloc(&in_, kCount * sizeof(int)));
    ASSERT_CUDA(cudaMalloc(&out_, kCount * sizeof(int)));
    ASSERT_CUDA(cudaMemcpy(in_, ramp().data(), kCount * sizeof(int), cudaMemcpyHostToDevice));
  }
  void TearDown() override {
    EXPECT_CUDA(cudaFree(in_));
    EXPECT_CUDA(cudaFree(out_));
  }
  std::vector<int> output() {
    std::vector<int> values(kCount);
    EXPECT_CUDA(cudaMemcpy(values.data(), out_, kCount * sizeof(int), cudaMemcpyDeviceToHost));
    return values;
  }
  static std::vector<int> scaled(int factor) {
    std::vector<int> values = ramp();
    for (int& value : values) value *= factor;
    return values;
  }
  int* in_ = nullptr;
  int* out_ = nullptr;
};

TEST_F(KernelsOnGpu, ChevronLaunchComputes) {
  cudaStream_t stream = nullptr;
  ASSERT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  scale<<<kCount / 128, 128, 0, stream>>>(in_, out_, kCount, 3);
  ASSERT_CUDA(cudaGetLastError());
  ASSERT_CUDA(cudaStreamSynchronize(stream));

  EXPECT_EQ(output(), scaled(3));
  EXPECT_CUDA(cudaStreamDestroy(stream));
}

TEST_F(KernelsOnGpu, DynamicSharedMemoryIsTheBlocksToUse) {
  reverse_block<<<1, kCount, kCount * sizeof(int)>>>(in_);
  ASSERT_CUDA(cudaGetLastError());
  std::vector<int> back(kCount);
  ASSERT_CUDA(cudaMemcpy(back.data(), in_, kCount * sizeof(int), cudaMemcpyDeviceToHost));

  std::vector<int> expected = ramp();
  std::reverse(expected.begin(), expected.end());
  EXPECT_EQ(back, expected);
}

TEST_F(KernelsOnGpu, LaunchKernelPassesTheArguments) {
  int count = kCount, factor = 5;
  void* args[] = {&in_, &out_, &count, &factor};

  ASSERT_CUDA(cudaLaunchKernel(reinterpret_cast<const void*>(scale), dim3(kCount / 256), dim3(256), args, 0, nullptr));
  ASSERT_CUDA(cudaDeviceSynchronize());

  EXPECT_EQ(output(), scaled(5));
}

TEST_F(KernelsOnGpu, LaunchKernelExWithAPriorityAttributeComputes) {
  int least = 0, greatest = 0;
  ASSERT_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributePriority;
  attribute.val.priority = greatest;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(kCount / 64);
  config.blockDim = dim3(64);
  config.attrs = &attribute;
  config.numAttrs = 1;

  ASSERT_CUDA(cudaLaunchKernelEx(&config, scale, static_cast<const int*>(in_), out_, kCount, 7));
  ASSERT_CUDA(cudaDeviceSynchronize());

  EXPECT_EQ(output(), scaled(7));
}

TEST_F(KernelsOnGpu, CooperativeLaunchSynchronisesTheWholeGrid) {
  int blocks_per_sm = 0;
  ASSERT_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, grid_sum, 64, 0));
  ASSERT_GE(blocks_per_sm, 1);
  int sms = 0;
  ASSERT_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int blocks = std::min(sms, kCount);
  int* total = out_ + kCount - 1;
  void* args[] = {&in_, &total};

  ASSERT_CUDA(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(grid_sum), dim3(blocks), dim3(64), args, 0,
                                          nullptr));
  ASSERT_CUDA(cudaDeviceSynchronize());

  int sum = 0;
  ASSERT_CUDA(cudaMemcpy(&sum, total, sizeof(int), cudaMemcpyDeviceToHost));
  EXPECT_EQ(sum, blocks * (blocks - 1) / 2);
}

TEST_F(KernelsOnGpu, OccupancyAndMaxDynamicSharedMemoryAttribute) {
  int blocks = 0;
  ASSERT_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, scale, 256, 0));
  EXPECT_GE(blocks, 1);
  ASSERT_CUDA(cudaFuncSetAttribute(reverse_block, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 * 1024));
  cudaFuncAttributes attributes{};
  ASSERT_CUDA(cudaFuncGetAttributes(&attributes, reverse_block));
  EXPECT_EQ(attributes.maxDynamicSharedSizeBytes, 64 * 1024);
}

TEST_F(KernelsOnGpu, KernelReadsAndWritesDeviceVariables) {
  ASSERT_CUDA(cudaMemcpyToSymbol(g_input, ramp().data(), kCount * sizeof(int)));

  symbols_double<<<kCount / 256, 256>>>();
  ASSERT_CUDA(cudaGetLastError());
  std::vector<int> back(kCount);
  ASSERT_CUDA(cudaMemcpyFromSymbol(back.data(), g_output, kCount * sizeof(int)));

  EXPECT_EQ(back, scaled(2));
}

TEST_F(KernelsOnGpu, ManagedVariableIsSharedWithTheHost) {
  g_managed_counter = 5;

  managed_add<<<4, 32>>>(1);
  ASSERT_CUDA(cudaDeviceSynchronize());

  EXPECT_EQ(g_managed_counter, 5 + 4 * 32);
}

}  // namespace
