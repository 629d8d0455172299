// Stream callbacks, pitched allocations and 2D copies, peer copies, asynchronous symbol copies and
// symbol sizes. No kernel runs here.
#include <mutex>
#include <numeric>
#include <vector>

#include "conformance.cuh"

namespace {

__device__ double g_values[64];

struct Calls {
  std::mutex mutex;
  std::vector<int> order;
  std::vector<cudaError_t> statuses;
};
struct Call {
  Calls* calls;
  int value;
};
void CUDART_CB callback(cudaStream_t, cudaError_t status, void* data) {
  auto* call = static_cast<Call*>(data);
  std::lock_guard lock(call->calls->mutex);
  call->calls->order.push_back(call->value);
  call->calls->statuses.push_back(status);
}
void CUDART_CB host_function(void* data) {
  auto* call = static_cast<Call*>(data);
  std::lock_guard lock(call->calls->mutex);
  call->calls->order.push_back(call->value);
}

TEST(AddedFunctions, StreamCallbacksRunInOrderWithHostFunctionsAndSeeSuccess) {
  cudaStream_t stream = nullptr;
  ASSERT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  Calls calls;
  Call first{&calls, 1}, second{&calls, 2}, third{&calls, 3};

  ASSERT_CUDA(cudaStreamAddCallback(stream, callback, &first, 0));
  ASSERT_CUDA(cudaLaunchHostFunc(stream, host_function, &second));
  ASSERT_CUDA(cudaStreamAddCallback(stream, callback, &third, 0));
  ASSERT_CUDA(cudaStreamSynchronize(stream));

  EXPECT_EQ(calls.order, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(calls.statuses, (std::vector<cudaError_t>{cudaSuccess, cudaSuccess}));
  EXPECT_CUDA(cudaStreamDestroy(stream));
}

TEST(AddedFunctions, PitchedAllocationRoundTripsAMatrixThrough2DCopies) {
  constexpr std::size_t kWidth = 100, kHeight = 37;  // bytes per row, rows
  void* device = nullptr;
  std::size_t pitch = 0;
  ASSERT_CUDA(cudaMallocPitch(&device, &pitch, kWidth, kHeight));
  EXPECT_GE(pitch, kWidth);
  std::vector<unsigned char> host(kWidth * kHeight), back(kWidth * kHeight);
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<unsigned char>(i * 7);

  ASSERT_CUDA(cudaMemcpy2D(device, pitch, host.data(), kWidth, kWidth, kHeight, cudaMemcpyHostToDevice));
  ASSERT_CUDA(cudaMemcpy2D(back.data(), kWidth, device, pitch, kWidth, kHeight, cudaMemcpyDeviceToHost));

  EXPECT_EQ(back, host);
  EXPECT_CUDA(cudaFree(device));
}

TEST(AddedFunctions, PeerCopyWithinOneDeviceCopies) {
  constexpr std::size_t kBytes = 4096;
  void *source = nullptr, *target = nullptr;
  ASSERT_CUDA(cudaMalloc(&source, kBytes));
  ASSERT_CUDA(cudaMalloc(&target, kBytes));
  std::vector<unsigned char> host(kBytes, 0x3c), back(kBytes);
  ASSERT_CUDA(cudaMemcpy(source, host.data(), kBytes, cudaMemcpyHostToDevice));

  ASSERT_CUDA(cudaMemcpyPeer(target, 0, source, 0, kBytes));
  ASSERT_CUDA(cudaMemcpy(back.data(), target, kBytes, cudaMemcpyDeviceToHost));

  EXPECT_EQ(back, host);
  EXPECT_CUDA(cudaFree(source));
  EXPECT_CUDA(cudaFree(target));
}

TEST(AddedFunctions, AsyncSymbolCopiesRoundTripAndTheSizeIsTheVariables) {
  cudaStream_t stream = nullptr;
  ASSERT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::vector<double> values(64), back(64);
  std::iota(values.begin(), values.end(), 0.5);
  std::size_t size = 0;

  ASSERT_CUDA(cudaGetSymbolSize(&size, g_values));
  ASSERT_CUDA(cudaMemcpyToSymbolAsync(g_values, values.data(), sizeof(double) * 64, 0, cudaMemcpyHostToDevice, stream));
  ASSERT_CUDA(
      cudaMemcpyFromSymbolAsync(back.data(), g_values, sizeof(double) * 64, 0, cudaMemcpyDeviceToHost, stream));
  ASSERT_CUDA(cudaStreamSynchronize(stream));

  EXPECT_EQ(size, sizeof(double) * 64);
  EXPECT_EQ(back, values);
  EXPECT_CUDA(cudaStreamDestroy(stream));
}

}  // namespace
