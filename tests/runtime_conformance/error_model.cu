// The error model: the per-thread last error, errors of invalid arguments (not sticky: the device
// stays usable), names and descriptions of common codes; on a GPU, a sticky error (a kernel's
// illegal address) that every later call answers and cudaGetLastError does not clear.
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "conformance.cuh"

using conformance::clear_last_error;

namespace {

TEST(ErrorModel, InvalidArgumentIsTheLastErrorUntilCudaGetLastErrorReadsIt) {
  clear_last_error();

  EXPECT_EQ(cudaMalloc(nullptr, 16), cudaErrorInvalidValue);

  EXPECT_EQ(cudaPeekAtLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(cudaPeekAtLastError(), cudaErrorInvalidValue);  // peeking does not clear
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST(ErrorModel, SuccessfulCallLeavesTheLastErrorAlone) {
  clear_last_error();
  ASSERT_EQ(cudaMalloc(nullptr, 16), cudaErrorInvalidValue);
  int count = 0;

  ASSERT_CUDA(cudaGetDeviceCount(&count));

  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
}

TEST(ErrorModel, LaterErrorReplacesTheLastError) {
  clear_last_error();
  ASSERT_EQ(cudaMalloc(nullptr, 16), cudaErrorInvalidValue);
  int count = 0;
  ASSERT_CUDA(cudaGetDeviceCount(&count));

  EXPECT_EQ(cudaSetDevice(count), cudaErrorInvalidDevice);

  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidDevice);
}

TEST(ErrorModel, LastErrorIsPerThread) {
  clear_last_error();
  ASSERT_EQ(cudaMalloc(nullptr, 16), cudaErrorInvalidValue);
  cudaError_t other_before = cudaErrorUnknown, other_after = cudaErrorUnknown;

  std::thread other([&] {
    other_before = cudaPeekAtLastError();
    static_cast<void>(cudaSetDevice(-1));
    other_after = cudaGetLastError();
  });
  other.join();

  EXPECT_EQ(other_before, cudaSuccess);
  EXPECT_EQ(other_after, cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
}

TEST(ErrorModel, InvalidArgumentIsNotStickyTheDeviceStaysUsable) {
  clear_last_error();
  ASSERT_EQ(cudaMalloc(nullptr, 16), cudaErrorInvalidValue);
  ASSERT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  void* memory = nullptr;

  EXPECT_CUDA(cudaMalloc(&memory, 256));
  EXPECT_CUDA(cudaMemset(memory, 0, 256));
  EXPECT_CUDA(cudaDeviceSynchronize());
  EXPECT_CUDA(cudaFree(memory));
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST(ErrorModel, InvalidArgumentsHaveTheirDocumentedCodes) {
  clear_last_error();
  int count = 0;
  ASSERT_CUDA(cudaGetDeviceCount(&count));
  cudaDeviceProp properties{};
  char host[64] = {};
  void* device = nullptr;
  ASSERT_CUDA(cudaMalloc(&device, sizeof(host)));
  cudaEvent_t event = nullptr;

  EXPECT_EQ(cudaSetDevice(count), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaSetDevice(-1), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetDeviceProperties(&properties, count), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetDeviceCount(nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaStreamCreate(nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaEventCreate(nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaEventCreateWithFlags(&event, cudaEventInterprocess), cudaErrorInvalidValue);  // needs DisableTiming
  EXPECT_EQ(cudaMemcpy(device, host, sizeof(host), static_cast<cudaMemcpyKind>(42)), cudaErrorInvalidMemcpyDirection);
  EXPECT_EQ(cudaMallocAsync(nullptr, 16, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFree(host), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMallocHost(nullptr, 16), cudaErrorInvalidValue);
  EXPECT_EQ(cudaPointerGetAttributes(nullptr, device), cudaErrorInvalidValue);
  EXPECT_EQ(cudaDeviceGetAttribute(nullptr, cudaDevAttrWarpSize, 0), cudaErrorInvalidValue);
  EXPECT_EQ(cudaStreamGetPriority(nullptr, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaStreamGetFlags(nullptr, nullptr), cudaErrorInvalidValue);

  EXPECT_CUDA(cudaFree(device));
  clear_last_error();
}

TEST(ErrorModel, AllocationBeyondTheDeviceIsMemoryAllocationAndNotSticky) {
  clear_last_error();
  void* memory = nullptr;

  EXPECT_EQ(cudaMalloc(&memory, std::size_t{1} << 60), cudaErrorMemoryAllocation);

  EXPECT_EQ(cudaGetLastError(), cudaErrorMemoryAllocation);
  EXPECT_CUDA(cudaMalloc(&memory, 256));
  EXPECT_CUDA(cudaFree(memory));
}

struct NamedCode {
  cudaError_t code;
  const char* name;
  const char* text;
};

TEST(ErrorNames, CommonCodesHaveCudartsNamesAndDescriptions) {
  const std::vector<NamedCode> codes = {
      {cudaSuccess, "cudaSuccess", "no error"},
      {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
      {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
      {cudaErrorInitializationError, "cudaErrorInitializationError", "initialization error"},
      {cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration", "invalid configuration argument"},
      {cudaErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection", "invalid copy direction for memcpy"},
      {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
      {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
      {cudaErrorInvalidDeviceFunction, "cudaErrorInvalidDeviceFunction", "invalid device function"},
      {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
      {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
      {cudaErrorIllegalAddress, "cudaErrorIllegalAddress", "an illegal memory access was encountered"},
      {cudaErrorLaunchFailure, "cudaErrorLaunchFailure", "unspecified launch failure"},
      {cudaErrorNotSupported, "cudaErrorNotSupported", "operation not supported"},
      {cudaErrorStreamCaptureUnsupported, "cudaErrorStreamCaptureUnsupported",
       "operation not permitted when stream is capturing"},
      {cudaErrorUnknown, "cudaErrorUnknown", "unknown error"},
  };
  for (const NamedCode& code : codes) {
    EXPECT_STREQ(cudaGetErrorName(code.code), code.name) << code.code;
    EXPECT_STREQ(cudaGetErrorString(code.code), code.text) << code.code;
  }
}

TEST(ErrorNames, UnknownCodeIsUnrecognized) {
  EXPECT_STREQ(cudaGetErrorName(static_cast<cudaError_t>(99999)), "unrecognized error code");
  EXPECT_STREQ(cudaGetErrorString(static_cast<cudaError_t>(99999)), "unrecognized error code");
}

__global__ void write_through(int* address) { *address = 1; }

// Exit codes of the sticky-error child: 0 when every expectation held, else the step that failed.
int sticky_error_steps() {
  void* memory = nullptr;
  if (cudaMalloc(&memory, 16) != cudaSuccess) return 10;
  write_through<<<1, 1>>>(reinterpret_cast<int*>(16));  // an unmapped device address
  if (cudaDeviceSynchronize() != cudaErrorIllegalAddress) return 11;
  if (cudaGetLastError() != cudaErrorIllegalAddress) return 12;
  // The last error is cleared like any other (NVIDIA's cudart 13 on driver 580), but the context
  // is not: every later call that needs it fails with the error again and sets it again.
  if (cudaGetLastError() != cudaSuccess) return 13;
  void* more = nullptr;
  if (cudaMalloc(&more, 16) != cudaErrorIllegalAddress) return 14;
  if (cudaPeekAtLastError() != cudaErrorIllegalAddress) return 15;
  return 0;
}

// In a process of its own (the sticky error spoils the device for the rest of the process).
TEST(ErrorModelOnGpuDeathTest, IllegalAddressIsStickyEveryLaterCallFailsWithIt) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(std::exit(sticky_error_steps()), ::testing::ExitedWithCode(0), "");
}

}  // namespace
