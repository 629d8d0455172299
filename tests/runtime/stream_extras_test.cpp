// Stream callbacks (cudaStreamAddCallback: after the work before it, with the stream as named and the
// runtime's status), event records with flags, stream ids and devices, and the profiler's start/stop.
#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace {

struct Seen {
  std::atomic<bool> host_function_ran{false};
  bool ran_after_host_function = false;
  cudaStream_t stream = nullptr;
  cudaError_t status = cudaErrorUnknown;
};

TEST(StreamCallback, RunsAfterEarlierWorkWithTheStreamAndStatus) {
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  Seen seen;
  ASSERT_EQ(cudaLaunchHostFunc(
                stream,
                [](void* data) {
                  std::this_thread::sleep_for(std::chrono::milliseconds(20));
                  static_cast<Seen*>(data)->host_function_ran = true;
                },
                &seen),
            cudaSuccess);

  ASSERT_EQ(cudaStreamAddCallback(
                stream,
                [](cudaStream_t named, cudaError_t status, void* data) {
                  auto* out = static_cast<Seen*>(data);
                  out->ran_after_host_function = out->host_function_ran;
                  out->stream = named;
                  out->status = status;
                },
                &seen, 0),
            cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);

  EXPECT_TRUE(seen.ran_after_host_function);
  EXPECT_EQ(seen.stream, stream);
  EXPECT_EQ(seen.status, cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

TEST(StreamCallback, NonZeroFlagsAreInvalidValue) {
  (void)cudaGetLastError();
  EXPECT_EQ(cudaStreamAddCallback(nullptr, [](cudaStream_t, cudaError_t, void*) {}, nullptr, 1),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
}

TEST(EventRecordWithFlags, DefaultRecordCompletesAndUnknownFlagIsInvalidValue) {
  cudaEvent_t event = nullptr;
  ASSERT_EQ(cudaEventCreate(&event), cudaSuccess);

  EXPECT_EQ(cudaEventRecordWithFlags(event, nullptr, cudaEventRecordDefault), cudaSuccess);
  EXPECT_EQ(cudaEventSynchronize(event), cudaSuccess);
  EXPECT_EQ(cudaEventRecordWithFlags(event, nullptr, 0x10), cudaErrorInvalidValue);

  (void)cudaGetLastError();
  EXPECT_EQ(cudaEventDestroy(event), cudaSuccess);
}

TEST(StreamQueries, IdsDifferAndTheDeviceIsTheCurrentOne) {
  cudaStream_t first = nullptr;
  cudaStream_t second = nullptr;
  ASSERT_EQ(cudaStreamCreate(&first), cudaSuccess);
  ASSERT_EQ(cudaStreamCreate(&second), cudaSuccess);
  unsigned long long first_id = 0;
  unsigned long long second_id = 0;
  int device = -1;

  ASSERT_EQ(cudaStreamGetId(first, &first_id), cudaSuccess);
  ASSERT_EQ(cudaStreamGetId(second, &second_id), cudaSuccess);
  ASSERT_EQ(cudaStreamGetDevice(second, &device), cudaSuccess);

  EXPECT_NE(first_id, second_id);
  EXPECT_EQ(device, 0);
  EXPECT_EQ(cudaStreamDestroy(first), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(second), cudaSuccess);
}

TEST(Profiler, StartAndStopSucceedWithNoProfilerAttached) {
  EXPECT_EQ(cudaProfilerStart(), cudaSuccess);
  EXPECT_EQ(cudaProfilerStop(), cudaSuccess);
}

}  // namespace
