// Libraries loaded at run time (cudaLibrary*) and their kernels, kernel questions that name a
// parameter or a cluster, and device questions beyond the attributes. The library is
// library_kernels.cu built as a fat binary (the string STREAMPOOL_CONFORMANCE_LIBRARY names the
// file); the fake driver loads no library and answers none of these questions, so what needs the
// driver is in the *OnGpu suites and the fake runs the runtime's own argument checks.
#include <vector>

#include "conformance.cuh"

namespace {

constexpr const char* kLibraryPath = STREAMPOOL_CONFORMANCE_LIBRARY;
constexpr int kNoSuchDevice = 1 << 20;

__global__ void three_params(int* out, char tag, double scale) {
  if (out != nullptr) *out = static_cast<int>(tag * scale);
}

TEST(Libraries, NullOutputsAreInvalidValueAndTheLastError) {
  conformance::clear_last_error();
  EXPECT_EQ(cudaLibraryLoadFromFile(nullptr, kLibraryPath, nullptr, nullptr, 0, nullptr, nullptr, 0),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(cudaLibraryLoadData(nullptr, kLibraryPath, nullptr, nullptr, 0, nullptr, nullptr, 0),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
}

TEST(DeviceQueries, ADeviceThatIsNoneIsInvalidDevice) {
  const cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
  std::size_t width = 0;
  cudaAtomicOperation operation = cudaAtomicOperationIntegerAdd;
  unsigned capability = 0;
  conformance::clear_last_error();

  EXPECT_EQ(cudaDeviceGetTexture1DLinearMaxWidth(&width, &desc, kNoSuchDevice), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaDeviceGetHostAtomicCapabilities(&capability, &operation, 1, kNoSuchDevice), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidDevice);
}

TEST(DeviceQueries, NullOutputsAreInvalidValue) {
  const cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
  conformance::clear_last_error();
  EXPECT_EQ(cudaDeviceGetTexture1DLinearMaxWidth(nullptr, &desc, 0), cudaErrorInvalidValue);
  EXPECT_EQ(cudaDeviceGetSharedMemConfig(nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
}

TEST(LibrariesOnGpu, AKernelOfALoadedLibraryLaunchesAndItsGlobalIsFound) {
  cudaLibrary_t library = nullptr;
  ASSERT_CUDA(cudaLibraryLoadFromFile(&library, kLibraryPath, nullptr, nullptr, 0, nullptr, nullptr, 0));
  unsigned count = 0;
  ASSERT_CUDA(cudaLibraryGetKernelCount(&count, library));
  EXPECT_EQ(count, 1u);
  cudaKernel_t kernel = nullptr, listed = nullptr;
  ASSERT_CUDA(cudaLibraryGetKernel(&kernel, library, "library_add"));
  ASSERT_CUDA(cudaLibraryEnumerateKernels(&listed, 1, library));
  EXPECT_EQ(listed, kernel);
  void* counter = nullptr;
  std::size_t bytes = 0;
  ASSERT_CUDA(cudaLibraryGetGlobal(&counter, &bytes, library, "library_counter"));
  EXPECT_EQ(bytes, sizeof(int));
  int counter_value = 0;
  ASSERT_CUDA(cudaMemcpy(&counter_value, counter, sizeof(int), cudaMemcpyDeviceToHost));
  EXPECT_EQ(counter_value, 17);

  constexpr int kCount = 64;
  int* values = nullptr;
  ASSERT_CUDA(cudaMalloc(&values, kCount * sizeof(int)));
  ASSERT_CUDA(cudaMemset(values, 0, kCount * sizeof(int)));
  int count_arg = kCount, amount = 5;
  void* args[] = {&values, &count_arg, &amount};
  ASSERT_CUDA(cudaKernelSetAttributeForDevice(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 1024, 0));
  ASSERT_CUDA(cudaLaunchKernel(reinterpret_cast<const void*>(kernel), dim3(1), dim3(kCount), args, 0, nullptr));
  ASSERT_CUDA(cudaDeviceSynchronize());
  std::vector<int> back(kCount);
  ASSERT_CUDA(cudaMemcpy(back.data(), values, kCount * sizeof(int), cudaMemcpyDeviceToHost));
  EXPECT_EQ(back, std::vector<int>(kCount, 5));

  EXPECT_CUDA(cudaFree(values));
  EXPECT_CUDA(cudaLibraryUnload(library));
}

TEST(KernelQueriesOnGpu, ParamInfoGivesEachParametersOffsetAndSize) {
  std::size_t offset = 0, size = 0;
  ASSERT_CUDA(cudaFuncGetParamInfo(reinterpret_cast<const void*>(three_params), 1, &offset, &size));
  EXPECT_EQ(offset, sizeof(int*));
  EXPECT_EQ(size, sizeof(char));
  ASSERT_CUDA(cudaFuncGetParamInfo(reinterpret_cast<const void*>(three_params), 2, &offset, &size));
  EXPECT_EQ(offset, 16u);
  EXPECT_EQ(size, sizeof(double));
  conformance::clear_last_error();
  EXPECT_NE(cudaFuncGetParamInfo(reinterpret_cast<const void*>(three_params), 3, &offset, &size), cudaSuccess);
}

TEST(KernelQueriesOnGpu, ClusterOccupancyAnswersForAClusterLaunch) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(16);
  config.blockDim = dim3(128);
  cudaLaunchAttribute cluster{};
  cluster.id = cudaLaunchAttributeClusterDimension;
  cluster.val.clusterDim.x = 2;
  cluster.val.clusterDim.y = 1;
  cluster.val.clusterDim.z = 1;
  config.attrs = &cluster;
  config.numAttrs = 1;
  int clusters = 0, size = 0;

  ASSERT_CUDA(cudaOccupancyMaxActiveClusters(&clusters, reinterpret_cast<const void*>(three_params), &config));
  EXPECT_GT(clusters, 0);
  config.numAttrs = 0;
  ASSERT_CUDA(cudaOccupancyMaxPotentialClusterSize(&size, reinterpret_cast<const void*>(three_params), &config));
  EXPECT_GE(size, 1);
}

TEST(DeviceQueriesOnGpu, TextureWidthAtomicsAndBankSizeAreAnswered) {
  const cudaChannelFormatDesc desc = cudaCreateChannelDesc<float4>();
  std::size_t width = 0;
  ASSERT_CUDA(cudaDeviceGetTexture1DLinearMaxWidth(&width, &desc, 0));
  EXPECT_GT(width, 0u);
  cudaAtomicOperation operations[2] = {cudaAtomicOperationIntegerAdd, cudaAtomicOperationOr};
  unsigned capabilities[2] = {0, 0};
  ASSERT_CUDA(cudaDeviceGetHostAtomicCapabilities(capabilities, operations, 2, 0));
  cudaSharedMemConfig config = cudaSharedMemBankSizeDefault;
  ASSERT_CUDA(cudaDeviceGetSharedMemConfig(&config));
  EXPECT_NE(config, cudaSharedMemBankSizeDefault);
  ASSERT_CUDA(cudaDeviceFlushGPUDirectRDMAWrites(cudaFlushGPUDirectRDMAWritesTargetCurrentDevice,
                                                  cudaFlushGPUDirectRDMAWritesToOwner));
}

void CUDART_CB ignore_notification(cudaAsyncNotificationInfo_t*, void*, cudaAsyncCallbackHandle_t) {}

TEST(DeviceQueriesOnGpu, AsyncNotificationRegistersAndUnregisters) {
  cudaAsyncCallbackHandle_t handle = nullptr;
  ASSERT_CUDA(cudaDeviceRegisterAsyncNotification(0, ignore_notification, nullptr, &handle));
  EXPECT_NE(handle, nullptr);
  EXPECT_CUDA(cudaDeviceUnregisterAsyncNotification(0, handle));
}

}  // namespace
