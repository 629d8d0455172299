// Handles: a destroyed stream's or event's handle is handed out again by the next create (most
// recently destroyed first), as NVIDIA's driver does; an event records only on its own context's
// streams.
#include "fake_test_support.hpp"

namespace fake_test {
namespace {

using HandlesTest = FakeDriverTest;

TEST_F(HandlesTest, NextStreamGetsTheHandleDestroyedLast) {
  CUstream first = nullptr;
  CUstream second = nullptr;
  ASSERT_EQ(cuStreamCreate(&first, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamCreate(&second, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamDestroy(first), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamDestroy(second), CUDA_SUCCESS);

  CUstream again = nullptr;
  CUstream then = nullptr;
  ASSERT_EQ(cuStreamCreate(&again, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamCreate(&then, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  unsigned flags = 0;

  EXPECT_EQ(again, second);
  EXPECT_EQ(then, first);
  ASSERT_EQ(cuStreamGetFlags(again, &flags), CUDA_SUCCESS);
  EXPECT_EQ(flags, static_cast<unsigned>(CU_STREAM_NON_BLOCKING));  // the new stream's, not the old one's
  cuStreamDestroy(again);
  cuStreamDestroy(then);
}

TEST_F(HandlesTest, StreamsOfAReleasedPrimaryContextGiveTheirHandlesBack) {
  CUstream old_stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&old_stream, 0), CUDA_SUCCESS);
  unsigned flags = 0;
  int active = 1;
  while (active != 0) {  // every retain released: the primary context is destroyed
    ASSERT_EQ(cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS);
    ASSERT_EQ(cuDevicePrimaryCtxGetState(0, &flags, &active), CUDA_SUCCESS);
  }
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&context_, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSetCurrent(context_), CUDA_SUCCESS);

  CUstream new_stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&new_stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);

  EXPECT_EQ(new_stream, old_stream);
  cuStreamDestroy(new_stream);
}

TEST_F(HandlesTest, NextEventGetsTheHandleDestroyedLast) {
  CUevent first = nullptr;
  ASSERT_EQ(cuEventCreate(&first, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuEventDestroy(first), CUDA_SUCCESS);

  CUevent again = nullptr;
  ASSERT_EQ(cuEventCreate(&again, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);

  EXPECT_EQ(again, first);
  EXPECT_EQ(cuEventQuery(again), CUDA_SUCCESS);  // a fresh, never-recorded event
  cuEventDestroy(again);
}

TEST_F(HandlesTest, EventRecordsOnlyOnStreamsOfItsOwnContextButAnyStreamMayWaitForIt) {
  CUevent primary_event = nullptr;
  ASSERT_EQ(cuEventCreate(&primary_event, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  CUstream primary_stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&primary_stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  CUcontext created = nullptr;
  ASSERT_EQ(cuCtxCreate(&created, nullptr, 0, 0), CUDA_SUCCESS);
  CUstream created_stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&created_stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);

  EXPECT_EQ(cuEventRecord(primary_event, created_stream), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuEventRecord(primary_event, nullptr), CUDA_ERROR_INVALID_HANDLE);  // the created context's legacy stream
  EXPECT_EQ(cuEventRecord(primary_event, primary_stream), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamWaitEvent(created_stream, primary_event, 0), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamSynchronize(created_stream), CUDA_SUCCESS);
  cuStreamDestroy(created_stream);
  cuCtxDestroy(created);
  cuCtxSetCurrent(context_);
  cuStreamDestroy(primary_stream);
  cuEventDestroy(primary_event);
}

// Contexts: a destroyed context's handle stays stale by default; with STREAMPOOL_FAKE_REUSE_CONTEXTS=1
// the next create takes it, on whatever device it is asked for, as NVIDIA's heap-allocated contexts
// may (code keyed by a context handle must then not answer for the old context), and the old
// context's events are gone with it.
TEST_F(HandlesTest, ContextHandlesAreReusedOnlyWhenAskedFor) {
  EXPECT_EQ(run_self_with_environment("STREAMPOOL_FAKE_DEVICES=2", "--report-context-reuse"),
            "stale=201 reused=0 device=1 third_new=1 event=0\n");
  EXPECT_EQ(run_self_with_environment("STREAMPOOL_FAKE_DEVICES=2 STREAMPOOL_FAKE_REUSE_CONTEXTS=1", "--report-context-reuse"),
            "stale=201 reused=1 device=1 third_new=1 event=400\n");
  const std::string refused =
      run_self_with_environment("STREAMPOOL_FAKE_DEVICES=2 STREAMPOOL_FAKE_REUSE_CONTEXTS=yes 2>&1", "--report-context-reuse");
  EXPECT_NE(refused.find("bad STREAMPOOL_FAKE_REUSE_CONTEXTS value 'yes'"), std::string::npos) << refused;
  EXPECT_NE(refused.find("reused=0"), std::string::npos) << refused;
}

}  // namespace
}  // namespace fake_test
