// Minimal stream capture, and the fake's call counters.
#include "fake_test_support.hpp"

extern "C" unsigned long long streampool_fake_counter(const char* name);

namespace fake_test {
namespace {

using CaptureTest = FakeDriverTest;

TEST_F(CaptureTest, CaptureStatusIsTrackedPerStream) {
  CUstream captured = nullptr;
  CUstream other = nullptr;
  ASSERT_EQ(cuStreamCreate(&captured, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamBeginCapture(captured, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), CUDA_SUCCESS);
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  CUstreamCaptureStatus other_status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
  cuuint64_t id = 0;
  CUgraph graph_during = nullptr;
  size_t dependencies = 99;

  ASSERT_EQ(cuStreamIsCapturing(captured, &status), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamIsCapturing(other, &other_status), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamGetCaptureInfo(captured, &status, &id, &graph_during, nullptr, nullptr, &dependencies),
            CUDA_SUCCESS);
  CUgraph graph = nullptr;
  ASSERT_EQ(cuStreamEndCapture(captured, &graph), CUDA_SUCCESS);
  CUstreamCaptureStatus after = CU_STREAM_CAPTURE_STATUS_ACTIVE;
  ASSERT_EQ(cuStreamIsCapturing(captured, &after), CUDA_SUCCESS);

  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_ACTIVE);
  EXPECT_EQ(other_status, CU_STREAM_CAPTURE_STATUS_NONE);
  EXPECT_NE(id, 0u);
  EXPECT_EQ(dependencies, 0u);
  EXPECT_EQ(graph, graph_during);
  EXPECT_EQ(after, CU_STREAM_CAPTURE_STATUS_NONE);
  EXPECT_EQ(cuGraphDestroy(graph), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamEndCapture(captured, &graph), CUDA_ERROR_ILLEGAL_STATE);
  cuStreamDestroy(captured);
  cuStreamDestroy(other);
}

TEST_F(CaptureTest, LegacyStreamCannotBeCapturedAndCapturingStreamCannotBeSynchronized) {
  CUstream stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamBeginCapture(nullptr, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  ASSERT_EQ(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);

  EXPECT_EQ(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_ILLEGAL_STATE);
  EXPECT_EQ(cuStreamSynchronize(stream), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_EQ(cuStreamQuery(stream), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  CUgraph graph = nullptr;
  ASSERT_EQ(cuStreamEndCapture(stream, &graph), CUDA_SUCCESS);
  cuGraphDestroy(graph);
  cuStreamDestroy(stream);
}

TEST_F(CaptureTest, AllocationOnCapturingStreamSucceedsAndIsCounted) {
  CUstream stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
  const auto allocs_before = streampool_fake_counter("cuMemAllocAsync");
  const auto frees_before = streampool_fake_counter("cuMemFreeAsync");
  CUdeviceptr buffer = 0;

  ASSERT_EQ(cuMemAllocAsync(&buffer, 1 << 20, stream), CUDA_SUCCESS);
  ASSERT_EQ(cuMemFreeAsync(buffer, stream), CUDA_SUCCESS);

  EXPECT_NE(buffer, 0u);
  EXPECT_EQ(streampool_fake_counter("cuMemAllocAsync"), allocs_before + 1);
  EXPECT_EQ(streampool_fake_counter("cuMemFreeAsync"), frees_before + 1);
  EXPECT_EQ(streampool_fake_counter("cuNeverCalledName"), 0u);
  CUgraph graph = nullptr;
  ASSERT_EQ(cuStreamEndCapture(stream, &graph), CUDA_SUCCESS);
  cuGraphDestroy(graph);
  cuStreamDestroy(stream);
}

TEST_F(CaptureTest, WorkOnACapturingStreamIsNotRun) {
  CUstream stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  std::atomic<bool> ran{false};

  ASSERT_EQ(cuLaunchHostFunc(stream, raise_flag, &ran), CUDA_SUCCESS);
  CUgraph graph = nullptr;
  ASSERT_EQ(cuStreamEndCapture(stream, &graph), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(stream), CUDA_SUCCESS);

  EXPECT_FALSE(ran.load());
  cuGraphDestroy(graph);
  cuStreamDestroy(stream);
}

}  // namespace
}  // namespace fake_test
