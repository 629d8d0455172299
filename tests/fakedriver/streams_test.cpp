// Streams: real asynchrony, in-order execution, the legacy default stream's implicit synchronisation,
// per-thread default streams, bad handles.
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "fake_test_support.hpp"

extern "C" CUresult cuStreamQuery_ptsz(CUstream hStream);
extern "C" CUresult cuStreamGetId_ptsz(CUstream hStream, unsigned long long* streamId);
extern "C" CUresult cuLaunchHostFunc_ptsz(CUstream hStream, CUhostFn fn, void* userData);
extern "C" CUresult cuStreamSynchronize_ptsz(CUstream hStream);

namespace fake_test {
namespace {

using Clock = std::chrono::steady_clock;
using StreamsTest = FakeDriverTest;

TEST_F(StreamsTest, LongHostFunctionDelaysOnlyItsOwnStream) {
  CUstream slow = nullptr;
  CUstream other = nullptr;
  ASSERT_EQ(cuStreamCreate(&slow, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  int sleep_for = 150;
  std::atomic<bool> slow_done{false};
  std::atomic<bool> other_done{false};

  const auto start = Clock::now();
  ASSERT_EQ(cuLaunchHostFunc(slow, sleep_ms, &sleep_for), CUDA_SUCCESS);
  ASSERT_EQ(cuLaunchHostFunc(slow, raise_flag, &slow_done), CUDA_SUCCESS);
  ASSERT_EQ(cuLaunchHostFunc(other, raise_flag, &other_done), CUDA_SUCCESS);
  const auto submitted = Clock::now();
  ASSERT_EQ(cuStreamSynchronize(other), CUDA_SUCCESS);

  EXPECT_LT(submitted - start, std::chrono::milliseconds(50));  // submission did not wait
  EXPECT_TRUE(other_done.load());
  EXPECT_FALSE(slow_done.load());
  EXPECT_EQ(cuStreamQuery(slow), CUDA_ERROR_NOT_READY);
  ASSERT_EQ(cuStreamSynchronize(slow), CUDA_SUCCESS);
  EXPECT_TRUE(slow_done.load());
  EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(150));
  EXPECT_EQ(cuStreamQuery(slow), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamDestroy(slow), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamDestroy(other), CUDA_SUCCESS);
}

TEST_F(StreamsTest, WorkOnOneStreamRunsInSubmissionOrder) {
  CUstream stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, 0), CUDA_SUCCESS);
  std::vector<int> order;
  struct Step {
    std::vector<int>* order;
    int value;
  };
  std::vector<Step> steps;
  for (int value = 0; value < 50; ++value) steps.push_back(Step{&order, value});
  for (auto& step : steps) {
    ASSERT_EQ(cuLaunchHostFunc(
                  stream, [](void* data) { static_cast<Step*>(data)->order->push_back(static_cast<Step*>(data)->value); },
                  &step),
              CUDA_SUCCESS);
  }
  ASSERT_EQ(cuStreamSynchronize(stream), CUDA_SUCCESS);
  std::vector<int> expected;
  for (int value = 0; value < 50; ++value) expected.push_back(value);
  EXPECT_EQ(order, expected);
  cuStreamDestroy(stream);
}

TEST_F(StreamsTest, StreamCallbackRunsInOrderWithSuccessStatus) {
  CUstream stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, 0), CUDA_SUCCESS);
  struct Seen {
    CUstream stream = nullptr;
    CUresult status = CUDA_ERROR_UNKNOWN;
  } seen;
  ASSERT_EQ(cuStreamAddCallback(
                stream,
                [](CUstream called_on, CUresult status, void* data) {
                  static_cast<Seen*>(data)->stream = called_on;
                  static_cast<Seen*>(data)->status = status;
                },
                &seen, 0),
            CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(stream), CUDA_SUCCESS);
  EXPECT_EQ(seen.stream, stream);
  EXPECT_EQ(seen.status, CUDA_SUCCESS);
  cuStreamDestroy(stream);
}

TEST_F(StreamsTest, LegacyStreamWaitsForEarlierWorkOnBlockingStreams) {
  CUstream blocking = nullptr;
  ASSERT_EQ(cuStreamCreate(&blocking, CU_STREAM_DEFAULT), CUDA_SUCCESS);
  int sleep_for = 100;
  std::atomic<bool> blocking_done{false};
  FlagObservation legacy_saw{&blocking_done};

  ASSERT_EQ(cuLaunchHostFunc(blocking, sleep_ms, &sleep_for), CUDA_SUCCESS);
  ASSERT_EQ(cuLaunchHostFunc(blocking, raise_flag, &blocking_done), CUDA_SUCCESS);
  ASSERT_EQ(cuLaunchHostFunc(nullptr, observe_flag, &legacy_saw), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(CU_STREAM_LEGACY), CUDA_SUCCESS);

  EXPECT_EQ(legacy_saw.seen.load(), 1);
  cuStreamDestroy(blocking);
}

TEST_F(StreamsTest, LegacyStreamDoesNotWaitForNonBlockingStreams) {
  CUstream non_blocking = nullptr;
  ASSERT_EQ(cuStreamCreate(&non_blocking, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  int sleep_for = 100;
  std::atomic<bool> non_blocking_done{false};
  FlagObservation legacy_saw{&non_blocking_done};

  ASSERT_EQ(cuLaunchHostFunc(non_blocking, sleep_ms, &sleep_for), CUDA_SUCCESS);
  ASSERT_EQ(cuLaunchHostFunc(non_blocking, raise_flag, &non_blocking_done), CUDA_SUCCESS);
  ASSERT_EQ(cuLaunchHostFunc(nullptr, observe_flag, &legacy_saw), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(nullptr), CUDA_SUCCESS);

  EXPECT_EQ(legacy_saw.seen.load(), 0);
  ASSERT_EQ(cuStreamSynchronize(non_blocking), CUDA_SUCCESS);
  cuStreamDestroy(non_blocking);
}

TEST_F(StreamsTest, BlockingStreamWaitsForEarlierLegacyWork) {
  CUstream blocking = nullptr;
  ASSERT_EQ(cuStreamCreate(&blocking, CU_STREAM_DEFAULT), CUDA_SUCCESS);
  int sleep_for = 100;
  std::atomic<bool> legacy_done{false};
  FlagObservation blocking_saw{&legacy_done};

  ASSERT_EQ(cuLaunchHostFunc(CU_STREAM_LEGACY, sleep_ms, &sleep_for), CUDA_SUCCESS);
  ASSERT_EQ(cuLaunchHostFunc(CU_STREAM_LEGACY, raise_flag, &legacy_done), CUDA_SUCCESS);
  ASSERT_EQ(cuLaunchHostFunc(blocking, observe_flag, &blocking_saw), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(blocking), CUDA_SUCCESS);

  EXPECT_EQ(blocking_saw.seen.load(), 1);
  cuStreamDestroy(blocking);
}

TEST_F(StreamsTest, NonBlockingStreamDoesNotWaitForLegacyWork) {
  CUstream non_blocking = nullptr;
  ASSERT_EQ(cuStreamCreate(&non_blocking, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  int sleep_for = 100;
  std::atomic<bool> legacy_done{false};
  FlagObservation non_blocking_saw{&legacy_done};

  ASSERT_EQ(cuLaunchHostFunc(nullptr, sleep_ms, &sleep_for), CUDA_SUCCESS);
  ASSERT_EQ(cuLaunchHostFunc(nullptr, raise_flag, &legacy_done), CUDA_SUCCESS);
  ASSERT_EQ(cuLaunchHostFunc(non_blocking, observe_flag, &non_blocking_saw), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(non_blocking), CUDA_SUCCESS);

  EXPECT_EQ(non_blocking_saw.seen.load(), 0);
  ASSERT_EQ(cuStreamSynchronize(nullptr), CUDA_SUCCESS);
  cuStreamDestroy(non_blocking);
}

TEST_F(StreamsTest, CtxSynchronizeWaitsForEveryStreamOfTheContext) {
  CUstream first = nullptr;
  CUstream second = nullptr;
  ASSERT_EQ(cuStreamCreate(&first, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamCreate(&second, 0), CUDA_SUCCESS);
  int sleep_for = 60;
  std::atomic<bool> first_done{false};
  std::atomic<bool> second_done{false};
  ASSERT_EQ(cuLaunchHostFunc(first, sleep_ms, &sleep_for), CUDA_SUCCESS);
  ASSERT_EQ(cuLaunchHostFunc(first, raise_flag, &first_done), CUDA_SUCCESS);
  ASSERT_EQ(cuLaunchHostFunc(second, sleep_ms, &sleep_for), CUDA_SUCCESS);
  ASSERT_EQ(cuLaunchHostFunc(second, raise_flag, &second_done), CUDA_SUCCESS);

  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);

  EXPECT_TRUE(first_done.load());
  EXPECT_TRUE(second_done.load());
  cuStreamDestroy(first);
  cuStreamDestroy(second);
}

TEST_F(StreamsTest, DestroyingAStreamLetsItsPendingWorkFinish) {
  CUstream stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, 0), CUDA_SUCCESS);
  int sleep_for = 30;
  std::atomic<bool> done{false};
  ASSERT_EQ(cuLaunchHostFunc(stream, sleep_ms, &sleep_for), CUDA_SUCCESS);
  ASSERT_EQ(cuLaunchHostFunc(stream, raise_flag, &done), CUDA_SUCCESS);

  ASSERT_EQ(cuStreamDestroy(stream), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);

  EXPECT_TRUE(done.load());
}

TEST_F(StreamsTest, StreamAttributesAreThoseItWasCreatedWith) {
  CUstream stream = nullptr;
  ASSERT_EQ(cuStreamCreateWithPriority(&stream, CU_STREAM_NON_BLOCKING, -3), CUDA_SUCCESS);
  unsigned flags = 0;
  int priority = 0;
  CUcontext owner = nullptr;
  CUdevice device = -1;
  unsigned long long id = 0;
  unsigned long long other_id = 0;
  EXPECT_EQ(cuStreamGetFlags(stream, &flags), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamGetPriority(stream, &priority), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamGetCtx(stream, &owner), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamGetDevice(stream, &device), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamGetId(stream, &id), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamGetId(CU_STREAM_LEGACY, &other_id), CUDA_SUCCESS);
  EXPECT_EQ(flags, static_cast<unsigned>(CU_STREAM_NON_BLOCKING));
  EXPECT_EQ(priority, -3);
  EXPECT_EQ(owner, context_);
  EXPECT_EQ(device, 0);
  EXPECT_NE(id, other_id);
  cuStreamDestroy(stream);
}

TEST_F(StreamsTest, InvalidStreamHandlesReturnInvalidHandle) {
  auto* bogus = reinterpret_cast<CUstream>(0x12345);
  int sleep_for = 1;
  unsigned flags = 0;
  EXPECT_EQ(cuStreamSynchronize(bogus), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuStreamQuery(bogus), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuLaunchHostFunc(bogus, sleep_ms, &sleep_for), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuStreamGetFlags(bogus, &flags), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuStreamDestroy(bogus), CUDA_ERROR_INVALID_HANDLE);
}

TEST_F(StreamsTest, DestroyedStreamHandleBecomesInvalid) {
  CUstream stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamDestroy(stream), CUDA_SUCCESS);

  EXPECT_EQ(cuStreamQuery(stream), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuStreamDestroy(stream), CUDA_ERROR_INVALID_HANDLE);
}

TEST_F(StreamsTest, StreamCallsWithoutCurrentContextFail) {
  ASSERT_EQ(cuCtxSetCurrent(nullptr), CUDA_SUCCESS);
  CUstream stream = nullptr;

  EXPECT_EQ(cuStreamCreate(&stream, 0), CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(cuStreamSynchronize(nullptr), CUDA_ERROR_INVALID_CONTEXT);
  ASSERT_EQ(cuCtxSetCurrent(context_), CUDA_SUCCESS);
}

TEST_F(StreamsTest, PerThreadDefaultStreamIsDistinctPerThreadAndStablePerThread) {
  unsigned long long main_id = 0;
  unsigned long long main_id_again = 0;
  unsigned long long main_ptsz_id = 0;
  unsigned long long legacy_id = 0;
  unsigned long long other_thread_id = 0;
  ASSERT_EQ(cuStreamGetId(CU_STREAM_PER_THREAD, &main_id), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamGetId(CU_STREAM_PER_THREAD, &main_id_again), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamGetId_ptsz(nullptr, &main_ptsz_id), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamGetId(nullptr, &legacy_id), CUDA_SUCCESS);
  CUresult other_status = CUDA_ERROR_UNKNOWN;
  std::thread([&] {
    cuCtxSetCurrent(context_);
    other_status = cuStreamGetId_ptsz(nullptr, &other_thread_id);
  }).join();

  EXPECT_EQ(main_id, main_id_again);
  EXPECT_EQ(main_id, main_ptsz_id);
  EXPECT_NE(main_id, legacy_id);
  EXPECT_EQ(other_status, CUDA_SUCCESS);
  EXPECT_NE(main_id, other_thread_id);
}

TEST_F(StreamsTest, PerThreadDefaultStreamsOfTwoThreadsRunIndependently) {
  int sleep_for = 150;
  std::atomic<bool> main_done{false};
  ASSERT_EQ(cuLaunchHostFunc_ptsz(nullptr, sleep_ms, &sleep_for), CUDA_SUCCESS);
  ASSERT_EQ(cuLaunchHostFunc_ptsz(nullptr, raise_flag, &main_done), CUDA_SUCCESS);

  std::atomic<bool> other_done{false};
  bool main_done_when_other_finished = true;
  std::thread([&] {
    cuCtxSetCurrent(context_);
    cuLaunchHostFunc_ptsz(nullptr, raise_flag, &other_done);
    cuStreamSynchronize_ptsz(nullptr);
    main_done_when_other_finished = main_done.load();
  }).join();

  EXPECT_TRUE(other_done.load());
  EXPECT_FALSE(main_done_when_other_finished);
  EXPECT_EQ(cuStreamQuery_ptsz(nullptr), CUDA_ERROR_NOT_READY);
  ASSERT_EQ(cuStreamSynchronize_ptsz(nullptr), CUDA_SUCCESS);
  EXPECT_TRUE(main_done.load());
}

TEST_F(StreamsTest, LegacyStreamWaitsForPerThreadDefaultStream) {
  int sleep_for = 100;
  std::atomic<bool> per_thread_done{false};
  FlagObservation legacy_saw{&per_thread_done};
  ASSERT_EQ(cuLaunchHostFunc(CU_STREAM_PER_THREAD, sleep_ms, &sleep_for), CUDA_SUCCESS);
  ASSERT_EQ(cuLaunchHostFunc(CU_STREAM_PER_THREAD, raise_flag, &per_thread_done), CUDA_SUCCESS);

  ASSERT_EQ(cuLaunchHostFunc(CU_STREAM_LEGACY, observe_flag, &legacy_saw), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(CU_STREAM_LEGACY), CUDA_SUCCESS);

  EXPECT_EQ(legacy_saw.seen.load(), 1);
}

}  // namespace
}  // namespace fake_test
