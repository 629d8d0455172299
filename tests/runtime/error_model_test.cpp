// The runtime's error model: the per-thread last error, cleared by cudaGetLastError and not by
// cudaPeekAtLastError, and cudart's names and descriptions.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace {

TEST(ErrorModel, FailedCallBecomesLastErrorAndGetLastErrorClearsIt) {
  (void)cudaGetLastError();
  ASSERT_EQ(cudaMalloc(nullptr, 16), cudaErrorInvalidValue);

  EXPECT_EQ(cudaPeekAtLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(cudaPeekAtLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST(ErrorModel, LastErrorIsPerThread) {
  (void)cudaGetLastError();
  ASSERT_EQ(cudaSetDevice(12345), cudaErrorInvalidDevice);
  cudaError_t other_thread = cudaErrorUnknown;
  std::thread([&] { other_thread = cudaPeekAtLastError(); }).join();

  EXPECT_EQ(other_thread, cudaSuccess);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidDevice);
}

TEST(ErrorModel, SuccessfulCallLeavesLastErrorAlone) {
  (void)cudaGetLastError();
  ASSERT_EQ(cudaMalloc(nullptr, 16), cudaErrorInvalidValue);
  void* pointer = nullptr;
  ASSERT_EQ(cudaMalloc(&pointer, 256), cudaSuccess);

  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFree(pointer), cudaSuccess);
}

TEST(ErrorModel, NotReadyIsNoError) {
  (void)cudaGetLastError();
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  // A host function that waits keeps the stream busy while it is queried.
  static std::atomic<bool> release{false};
  release = false;
  ASSERT_EQ(cudaLaunchHostFunc(stream, [](void*) { while (!release) std::this_thread::yield(); }, nullptr), cudaSuccess);

  EXPECT_EQ(cudaStreamQuery(stream), cudaErrorNotReady);
  EXPECT_EQ(cudaPeekAtLastError(), cudaSuccess);
  release = true;
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

TEST(ErrorModel, NamesAndDescriptionsAreCudarts) {
  EXPECT_STREQ(cudaGetErrorName(cudaErrorInvalidValue), "cudaErrorInvalidValue");
  EXPECT_STREQ(cudaGetErrorString(cudaErrorInvalidValue), "invalid argument");
  EXPECT_STREQ(cudaGetErrorString(cudaErrorMemoryAllocation), "out of memory");
  EXPECT_STREQ(cudaGetErrorName(cudaSuccess), "cudaSuccess");
  EXPECT_STREQ(cudaGetErrorName(static_cast<cudaError_t>(12345)), "unrecognized error code");
}

TEST(ErrorModel, VersionsAreAnswered) {
  int runtime = 0;
  int driver = 0;
  EXPECT_EQ(cudaRuntimeGetVersion(&runtime), cudaSuccess);
  EXPECT_EQ(cudaDriverGetVersion(&driver), cudaSuccess);
  EXPECT_EQ(runtime, CUDART_VERSION);
  EXPECT_GT(driver, 0);
}

}  // namespace
