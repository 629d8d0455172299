// streampool never makes a call that invalidates a capture in progress. The fake driver refuses,
// as NVIDIA's driver 580 does, cuEventQuery, cuStreamQuery of another stream and cuStreamGetFlags /
// cuStreamGetId of the capturing stream while a global-mode capture runs, and invalidates it
// (src/fakedriver/capture_rules.hpp). Each test ends a global capture during which streampool's
// hooks ran, and requires it to end cleanly.
#include <unistd.h>

#include <atomic>

#include <cstdlib>
#include <cstring>
#include <string>

#include "hooks_test_api.hpp"

namespace {

void CUDA_CB sleep_briefly(void* done) {
  usleep(100 * 1000);
  static_cast<std::atomic<int>*>(done)->store(1);
}

class CaptureHooks : public hooks_test::DriverTest {
 protected:
  void SetUp() override {
    DriverTest::SetUp();
    ASSERT_EQ(SP(cuStreamCreate)(&other, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuEventCreate)(&fork, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuEventCreate)(&join, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  }
  void TearDown() override {
    SP(cuEventDestroy_v2)(fork);
    SP(cuEventDestroy_v2)(join);
    SP(cuStreamDestroy_v2)(other);
    DriverTest::TearDown();
  }
  // The samples' fork/join: record on the capturing stream, the other stream waits, records, and
  // the capturing stream waits back. The capture's end status.
  CUresult fork_join_capture(CUstream capturing) {
    EXPECT_EQ(SP(cuStreamBeginCapture_v2)(capturing, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    EXPECT_EQ(SP(cuEventRecord)(fork, capturing), CUDA_SUCCESS);
    EXPECT_EQ(SP(cuStreamWaitEvent)(other, fork, 0), CUDA_SUCCESS);
    EXPECT_EQ(SP(cuEventRecord)(join, other), CUDA_SUCCESS);
    EXPECT_EQ(SP(cuStreamWaitEvent)(capturing, join, 0), CUDA_SUCCESS);
    CUgraph graph = nullptr;
    CUresult ended = SP(cuStreamEndCapture)(capturing, &graph);
    if (graph != nullptr) SP(cuGraphDestroy)(graph);
    return ended;
  }
  CUstream other = nullptr;
  CUevent fork = nullptr;
  CUevent join = nullptr;
};

// Two captures at once: the end of one leaves the other counted, so that streampool's markers
// still ask the driver about it; the end of both leaves none (the stats report's count).
TEST_F(CaptureHooks, EachCapturesEndLowersTheCountOfCapturesInProgressByOne) {
  const auto counted = [] {
    const std::string report = hooks_test::stats_report();
    const size_t at = report.find("\"captures_in_progress\":");
    return at == std::string::npos ? -1L : std::atol(report.c_str() + at + std::strlen("\"captures_in_progress\":"));
  };
  ASSERT_EQ(counted(), 0);
  ASSERT_EQ(SP(cuStreamBeginCapture_v2)(stream, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuStreamBeginCapture_v2)(other, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
  EXPECT_EQ(counted(), 2);
  CUgraph graph = nullptr;
  ASSERT_EQ(SP(cuStreamEndCapture)(stream, &graph), CUDA_SUCCESS);
  SP(cuGraphDestroy)(graph);
  EXPECT_EQ(counted(), 1) << "the other capture no longer counted";
  ASSERT_EQ(SP(cuStreamEndCapture)(other, &graph), CUDA_SUCCESS);
  SP(cuGraphDestroy)(graph);
  EXPECT_EQ(counted(), 0);
}

TEST_F(CaptureHooks, AForkJoinCaptureSurvivesTheRecordAndWaitHooks) {
  EXPECT_EQ(fork_join_capture(stream), CUDA_SUCCESS);
}

TEST_F(CaptureHooks, AStreamFirstSeenWhileCapturingIsNotAskedForItsFlags) {
  // Created behind streampool's back (straight from the driver): streampool meets it first inside
  // the capture, where cuStreamGetFlags would invalidate it.
  using StreamCreate = CUresult (*)(CUstream*, unsigned int);
  auto create = reinterpret_cast<StreamCreate>(dlsym(hooks_test::fake_driver(), "cuStreamCreate"));
  ASSERT_NE(create, nullptr);
  CUstream unseen = nullptr;
  ASSERT_EQ(create(&unseen, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  EXPECT_EQ(fork_join_capture(unseen), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuStreamDestroy_v2)(unseen), CUDA_SUCCESS);
}

TEST_F(CaptureHooks, AnAllocationWhileAGlobalCaptureRunsQueriesNoMarker) {
  CUmemoryPool pool = create_device_pool();
  std::uint64_t keep_everything = ~std::uint64_t{0};
  ASSERT_EQ(SP(cuMemPoolSetAttribute)(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep_everything), CUDA_SUCCESS);
  // A free on `stream` pending behind a host function; `other` grows past it and leaves a marker
  // on `stream` whose answer a later allocation would ask for.
  std::atomic<int> done{0};
  CUdeviceptr pending = 0;
  ASSERT_EQ(SP(cuMemAllocFromPoolAsync)(&pending, 32 << 20, pool, stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuLaunchHostFunc)(stream, sleep_briefly, &done), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemFreeAsync)(pending, stream), CUDA_SUCCESS);
  CUdeviceptr grown = 0;
  ASSERT_EQ(SP(cuMemAllocFromPoolAsync)(&grown, 32 << 20, pool, other), CUDA_SUCCESS);

  CUstream capturing = nullptr;
  ASSERT_EQ(SP(cuStreamCreate)(&capturing, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuStreamBeginCapture_v2)(capturing, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  CUdeviceptr during = 0;
  EXPECT_EQ(SP(cuMemAllocFromPoolAsync)(&during, 32 << 20, pool, other), CUDA_SUCCESS);
  EXPECT_NE(during, pending);  // nothing proves the pending free complete: no marker was asked
  CUgraph graph = nullptr;
  EXPECT_EQ(SP(cuStreamEndCapture)(capturing, &graph), CUDA_SUCCESS);
  if (graph != nullptr) SP(cuGraphDestroy)(graph);

  EXPECT_EQ(SP(cuMemFreeAsync)(during, other), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuMemFreeAsync)(grown, other), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuStreamSynchronize)(other), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuStreamDestroy_v2)(capturing), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuMemPoolDestroy)(pool), CUDA_SUCCESS);
}

TEST_F(CaptureHooks, TheFakeDriverInvalidatesAGlobalCaptureOnAnEventQueryAsNvidiasDoes) {
  // The rule the tests above rely on, shown directly.
  ASSERT_EQ(SP(cuStreamBeginCapture_v2)(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuEventQuery)(fork), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  CUgraph graph = nullptr;
  EXPECT_EQ(SP(cuStreamEndCapture)(stream, &graph), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
}

}  // namespace
