// Events: completion follows the recorded work, re-recording re-arms, waits order streams, timing.
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>

#include "fake_test_support.hpp"

namespace fake_test {
namespace {

using EventsTest = FakeDriverTest;

TEST_F(EventsTest, EventAfterLongWorkIsNotReadyUntilTheWorkEnds) {
  CUstream slow = nullptr;
  CUstream fast = nullptr;
  ASSERT_EQ(cuStreamCreate(&slow, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamCreate(&fast, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  CUevent after_slow = nullptr;
  CUevent after_fast = nullptr;
  ASSERT_EQ(cuEventCreate(&after_slow, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuEventCreate(&after_fast, 0), CUDA_SUCCESS);
  int sleep_for = 100;

  ASSERT_EQ(cuLaunchHostFunc(slow, sleep_ms, &sleep_for), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(after_slow, slow), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(after_fast, fast), CUDA_SUCCESS);
  ASSERT_EQ(cuEventSynchronize(after_fast), CUDA_SUCCESS);

  EXPECT_EQ(cuEventQuery(after_fast), CUDA_SUCCESS);
  EXPECT_EQ(cuEventQuery(after_slow), CUDA_ERROR_NOT_READY);
  ASSERT_EQ(cuEventSynchronize(after_slow), CUDA_SUCCESS);
  EXPECT_EQ(cuEventQuery(after_slow), CUDA_SUCCESS);
  cuEventDestroy(after_slow);
  cuEventDestroy(after_fast);
  cuStreamDestroy(slow);
  cuStreamDestroy(fast);
}

TEST_F(EventsTest, NeverRecordedEventIsCompleteAndWaitingOnItIsANoOp) {
  CUevent event = nullptr;
  CUstream stream = nullptr;
  ASSERT_EQ(cuEventCreate(&event, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);

  EXPECT_EQ(cuEventQuery(event), CUDA_SUCCESS);
  EXPECT_EQ(cuEventSynchronize(event), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamWaitEvent(stream, event, 0), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamQuery(stream), CUDA_SUCCESS);
  cuEventDestroy(event);
  cuStreamDestroy(stream);
}

TEST_F(EventsTest, ReRecordingReArmsTheEvent) {
  CUstream stream = nullptr;
  CUevent event = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(cuEventCreate(&event, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(event, stream), CUDA_SUCCESS);
  ASSERT_EQ(cuEventSynchronize(event), CUDA_SUCCESS);
  ASSERT_EQ(cuEventQuery(event), CUDA_SUCCESS);
  int sleep_for = 100;

  ASSERT_EQ(cuLaunchHostFunc(stream, sleep_ms, &sleep_for), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(event, stream), CUDA_SUCCESS);

  EXPECT_EQ(cuEventQuery(event), CUDA_ERROR_NOT_READY);
  ASSERT_EQ(cuEventSynchronize(event), CUDA_SUCCESS);
  EXPECT_EQ(cuEventQuery(event), CUDA_SUCCESS);
  cuEventDestroy(event);
  cuStreamDestroy(stream);
}

TEST_F(EventsTest, StreamWaitEventDelaysLaterWorkUntilTheEvent) {
  CUstream producer = nullptr;
  CUstream consumer = nullptr;
  ASSERT_EQ(cuStreamCreate(&producer, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamCreate(&consumer, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  CUevent produced = nullptr;
  ASSERT_EQ(cuEventCreate(&produced, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  int sleep_for = 100;
  std::atomic<bool> producer_done{false};
  FlagObservation consumer_saw{&producer_done};

  ASSERT_EQ(cuLaunchHostFunc(producer, sleep_ms, &sleep_for), CUDA_SUCCESS);
  ASSERT_EQ(cuLaunchHostFunc(producer, raise_flag, &producer_done), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(produced, producer), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamWaitEvent(consumer, produced, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuLaunchHostFunc(consumer, observe_flag, &consumer_saw), CUDA_SUCCESS);

  EXPECT_EQ(cuStreamQuery(consumer), CUDA_ERROR_NOT_READY);
  ASSERT_EQ(cuStreamSynchronize(consumer), CUDA_SUCCESS);
  EXPECT_EQ(consumer_saw.seen.load(), 1);
  cuEventDestroy(produced);
  cuStreamDestroy(producer);
  cuStreamDestroy(consumer);
}

TEST_F(EventsTest, WaitCapturesTheRecordAtWaitTimeNotALaterReRecord) {
  CUstream producer = nullptr;
  CUstream consumer = nullptr;
  ASSERT_EQ(cuStreamCreate(&producer, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamCreate(&consumer, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  CUevent event = nullptr;
  ASSERT_EQ(cuEventCreate(&event, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(event, producer), CUDA_SUCCESS);
  ASSERT_EQ(cuEventSynchronize(event), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamWaitEvent(consumer, event, 0), CUDA_SUCCESS);
  int sleep_for = 150;

  ASSERT_EQ(cuLaunchHostFunc(producer, sleep_ms, &sleep_for), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(event, producer), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(consumer), CUDA_SUCCESS);

  EXPECT_EQ(cuEventQuery(event), CUDA_ERROR_NOT_READY);
  cuStreamSynchronize(producer);
  cuEventDestroy(event);
  cuStreamDestroy(producer);
  cuStreamDestroy(consumer);
}

TEST_F(EventsTest, ElapsedTimeMeasuresTheWorkBetweenTwoRecords) {
  CUstream stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  CUevent start = nullptr;
  CUevent end = nullptr;
  ASSERT_EQ(cuEventCreate(&start, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuEventCreate(&end, 0), CUDA_SUCCESS);
  int sleep_for = 50;

  ASSERT_EQ(cuEventRecord(start, stream), CUDA_SUCCESS);
  ASSERT_EQ(cuLaunchHostFunc(stream, sleep_ms, &sleep_for), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(end, stream), CUDA_SUCCESS);
  float milliseconds = -1;
  EXPECT_EQ(cuEventElapsedTime(&milliseconds, start, end), CUDA_ERROR_NOT_READY);
  ASSERT_EQ(cuEventSynchronize(end), CUDA_SUCCESS);
  ASSERT_EQ(cuEventElapsedTime(&milliseconds, start, end), CUDA_SUCCESS);

  EXPECT_GE(milliseconds, 49.0f);
  EXPECT_LT(milliseconds, 1000.0f);
  cuEventDestroy(start);
  cuEventDestroy(end);
  cuStreamDestroy(stream);
}

TEST_F(EventsTest, ElapsedTimeRejectsEventsWithoutTimingOrNeverRecorded) {
  CUstream stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, 0), CUDA_SUCCESS);
  CUevent timed = nullptr;
  CUevent untimed = nullptr;
  CUevent unrecorded = nullptr;
  ASSERT_EQ(cuEventCreate(&timed, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuEventCreate(&untimed, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  ASSERT_EQ(cuEventCreate(&unrecorded, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(timed, stream), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(untimed, stream), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(stream), CUDA_SUCCESS);
  float milliseconds = 0;

  EXPECT_EQ(cuEventElapsedTime(&milliseconds, timed, untimed), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuEventElapsedTime(&milliseconds, timed, unrecorded), CUDA_ERROR_INVALID_HANDLE);
  cuEventDestroy(timed);
  cuEventDestroy(untimed);
  cuEventDestroy(unrecorded);
  cuStreamDestroy(stream);
}

TEST_F(EventsTest, EventOnLegacyStreamCoversEarlierBlockingStreamWork) {
  CUstream blocking = nullptr;
  ASSERT_EQ(cuStreamCreate(&blocking, 0), CUDA_SUCCESS);
  CUevent event = nullptr;
  ASSERT_EQ(cuEventCreate(&event, 0), CUDA_SUCCESS);
  int sleep_for = 100;

  ASSERT_EQ(cuLaunchHostFunc(blocking, sleep_ms, &sleep_for), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(event, nullptr), CUDA_SUCCESS);

  EXPECT_EQ(cuEventQuery(event), CUDA_ERROR_NOT_READY);
  ASSERT_EQ(cuEventSynchronize(event), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamQuery(blocking), CUDA_SUCCESS);
  cuEventDestroy(event);
  cuStreamDestroy(blocking);
}

TEST_F(EventsTest, InvalidAndDestroyedEventHandlesReturnInvalidHandle) {
  auto* bogus = reinterpret_cast<CUevent>(0x4242);
  CUevent destroyed = nullptr;
  ASSERT_EQ(cuEventCreate(&destroyed, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuEventDestroy(destroyed), CUDA_SUCCESS);

  EXPECT_EQ(cuEventQuery(bogus), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuEventRecord(bogus, nullptr), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuEventSynchronize(destroyed), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuStreamWaitEvent(nullptr, bogus, 0), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuEventDestroy(destroyed), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuEventRecordWithFlags(bogus, nullptr, 0), CUDA_ERROR_INVALID_HANDLE);
}

// Only an interprocess event has a handle, and the handle opens in another process only (here a
// forked child, which touches no stream: its copy of the fake serves the open alone).
TEST_F(EventsTest, AnInterprocessEventsHandleOpensInAnotherProcessOnly) {
  CUevent plain = nullptr;
  CUevent shared = nullptr;
  ASSERT_EQ(cuEventCreate(&plain, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  ASSERT_EQ(cuEventCreate(&shared, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  CUipcEventHandle handle{};
  CUevent opened = nullptr;

  EXPECT_EQ(cuIpcGetEventHandle(&handle, plain), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuIpcGetEventHandle(nullptr, shared), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuIpcOpenEventHandle(&opened, handle), CUDA_ERROR_INVALID_VALUE);  // no handle at all
  ASSERT_EQ(cuIpcGetEventHandle(&handle, shared), CUDA_SUCCESS);
  EXPECT_EQ(cuIpcOpenEventHandle(&opened, handle), CUDA_ERROR_INVALID_CONTEXT);  // in its exporter
  EXPECT_EQ(opened, nullptr);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // 0: opened, a live event other than the exporter's; 1: not.
    CUevent in_child = nullptr;
    const bool ok = cuIpcOpenEventHandle(&in_child, handle) == CUDA_SUCCESS && in_child != nullptr &&
                    cuEventQuery(in_child) == CUDA_SUCCESS && cuEventDestroy(in_child) == CUDA_SUCCESS;
    _exit(ok ? 0 : 1);
  }
  int status = -1;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child could not open the handle";
  cuEventDestroy(plain);
  cuEventDestroy(shared);
}

}  // namespace
}  // namespace fake_test
