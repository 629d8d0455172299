// libstreampool_alloc.so's entry points as PyTorch and CuPy call them, in a process whose driver is
// not streampool: the test links the fake driver as a program links NVIDIA's libcuda, makes its
// streams, waits and synchronisations there (streampool never sees them), and the library finds the
// same driver through STREAMPOOL_LIBCUDA. Each test runs in a process of its own (CMakeLists.txt).
#include <cuda.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "streampool/pluggable.h"
#include "streampool/streampool.h"

// The fake driver's count of calls of one of its entry points (src/fakedriver/call_counters.hpp),
// and its failure switch (src/fakedriver/fault_injection.cpp).
extern "C" unsigned long long streampool_fake_counter(const char* entry_point);
extern "C" void streampool_fake_fail_calls(const char* name, unsigned long long nth, unsigned long long count,
                                           int error);
extern "C" void streampool_fake_clear_failures();

namespace {

constexpr ssize_t kBlock = 1 << 20;
// A pool's first growth maps 32 MiB: a second block of this size on another stream must grow the
// pool, which is where the engine records a marker on the stream whose pending free would have fitted.
constexpr ssize_t kChunk = 32 << 20;

// A host function that holds its stream until the test opens it.
struct Gate {
  std::mutex mutex;
  std::condition_variable opened;
  bool open = false;

  static void CUDA_CB hold(void* self) {
    auto* gate = static_cast<Gate*>(self);
    std::unique_lock lock(gate->mutex);
    gate->opened.wait(lock, [gate] { return gate->open; });
  }
  void release() {
    {
      std::lock_guard lock(mutex);
      open = true;
    }
    opened.notify_all();
  }
};

class Pluggable : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
    CUdevice device = 0;
    ASSERT_EQ(cuDeviceGet(&device, 0), CUDA_SUCCESS);
    ASSERT_EQ(cuDevicePrimaryCtxRetain(&context, device), CUDA_SUCCESS);
    ASSERT_EQ(cuCtxSetCurrent(context), CUDA_SUCCESS);
    ASSERT_EQ(cuStreamCreate(&first, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    ASSERT_EQ(cuStreamCreate(&second, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  }
  void TearDown() override {
    gate.release();  // never leave a stream held, whatever failed
    cuCtxSynchronize();
  }

  // A block of `first` freed behind held work; `second`'s allocation of its size grows the pool
  // and records a marker on `first`, which completes (unseen: the program's own synchronize); then
  // a global capture of another stream begins. The block, which only the marker's query frees.
  void* marker_completed_then_capture(CUstream* capturing) {
    void* block = nullptr;
    [&] {
      ASSERT_EQ(cuStreamCreate(capturing, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
      ASSERT_EQ(cuLaunchHostFunc(first, Gate::hold, &gate), CUDA_SUCCESS);
      block = streampool_torch_alloc(kChunk, 0, first);
      ASSERT_NE(block, nullptr);
      streampool_torch_free(block, kChunk, 0, first);
      ASSERT_NE(streampool_torch_alloc(kChunk, 0, second), block);
      gate.release();
      ASSERT_EQ(cuStreamSynchronize(first), CUDA_SUCCESS);
      ASSERT_EQ(cuStreamBeginCapture(*capturing, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    }();
    return block;
  }

  CUcontext context = nullptr;
  CUstream first = nullptr;
  CUstream second = nullptr;
  Gate gate;
};

streampool_stats totals() {
  streampool_stats stats{};
  stats.struct_size = sizeof(stats);
  streampool_get_stats(&stats, nullptr, 0);
  return stats;
}

TEST_F(Pluggable, AllocationIsDeviceMemoryTheProgramCanUse) {
  void* block = streampool_torch_alloc(kBlock, 0, first);
  ASSERT_NE(block, nullptr);
  const auto address = reinterpret_cast<CUdeviceptr>(block);
  ASSERT_EQ(cuMemsetD8Async(address, 0x5a, kBlock, first), CUDA_SUCCESS);
  unsigned char last = 0;
  ASSERT_EQ(cuMemcpyDtoHAsync(&last, address + kBlock - 1, 1, first), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(first), CUDA_SUCCESS);
  EXPECT_EQ(last, 0x5a);
  streampool_torch_free(block, kBlock, 0, first);
}

TEST_F(Pluggable, StatisticsCountTheCallsAndTheBytesInUse) {
  void* block = streampool_torch_alloc(kBlock, 0, first);
  ASSERT_NE(block, nullptr);
  const streampool_stats live = totals();
  EXPECT_EQ(streampool_active(), 1);
  EXPECT_EQ(live.allocation_calls, 1U);
  EXPECT_EQ(live.used_current, static_cast<std::uint64_t>(kBlock));
  EXPECT_GE(live.reserved_current, static_cast<std::uint64_t>(kBlock));
  streampool_torch_free(block, kBlock, 0, first);
  const streampool_stats freed = totals();
  EXPECT_EQ(freed.free_calls, 1U);
  EXPECT_EQ(freed.used_current, 0U);
  EXPECT_EQ(freed.used_high, static_cast<std::uint64_t>(kBlock));
}

TEST_F(Pluggable, FreedBlockIsReusedOnTheSameStreamAtOnce) {
  ASSERT_EQ(cuLaunchHostFunc(first, Gate::hold, &gate), CUDA_SUCCESS);
  void* block = streampool_torch_alloc(kBlock, 0, first);
  ASSERT_NE(block, nullptr);
  streampool_torch_free(block, kBlock, 0, first);  // returns while the stream is held: never blocks
  EXPECT_EQ(streampool_torch_alloc(kBlock, 0, first), block);
}

TEST_F(Pluggable, FreedBlockIsNotReusedOnAnotherStreamBeforeItsFreeRan) {
  ASSERT_EQ(cuLaunchHostFunc(first, Gate::hold, &gate), CUDA_SUCCESS);
  void* block = streampool_torch_alloc(kChunk, 0, first);
  ASSERT_NE(block, nullptr);
  streampool_torch_free(block, kChunk, 0, first);
  // The program's own order, which streampool cannot see, would allow it: it proves nothing here.
  CUevent event = nullptr;
  ASSERT_EQ(cuEventCreate(&event, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(event, first), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamWaitEvent(second, event, 0), CUDA_SUCCESS);
  void* other = streampool_torch_alloc(kChunk, 0, second);
  ASSERT_NE(other, nullptr);
  EXPECT_NE(other, block);
  void* again = streampool_torch_alloc(kChunk, 0, second);  // the marker streampool recorded is pending
  EXPECT_NE(again, block);
  cuEventDestroy(event);
}

TEST_F(Pluggable, FreedBlockIsReusedOnAnotherStreamOnceStreampoolsMarkerCompleted) {
  ASSERT_EQ(cuLaunchHostFunc(first, Gate::hold, &gate), CUDA_SUCCESS);
  void* block = streampool_torch_alloc(kChunk, 0, first);
  ASSERT_NE(block, nullptr);
  streampool_torch_free(block, kChunk, 0, first);
  void* other = streampool_torch_alloc(kChunk, 0, second);  // grows, and records a marker on `first`
  ASSERT_NE(other, block);
  gate.release();
  ASSERT_EQ(cuStreamSynchronize(first), CUDA_SUCCESS);  // the program's: unseen, the marker ran too
  EXPECT_EQ(streampool_torch_alloc(kChunk, 0, second), block);
}

void expect_capture_valid(CUstream capturing) {
  CUgraph graph = nullptr;
  EXPECT_EQ(cuStreamEndCapture(capturing, &graph), CUDA_SUCCESS);
  if (graph != nullptr) cuGraphDestroy(graph);
}

TEST_F(Pluggable, MarkerQueryLeavesAGlobalCaptureOfAnotherStreamValid) {
  CUstream capturing = nullptr;
  void* block = marker_completed_then_capture(&capturing);
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_EQ(streampool_torch_alloc(kChunk, 0, second), block);  // the marker was queried
  expect_capture_valid(capturing);
}

// The marker query during an unseen capture is legal only in relaxed mode; where the driver
// refuses the swap to relaxed, the query is not made at all (the marker counts as pending and the
// allocation grows), rather than made in global mode, which would invalidate the capture.
TEST_F(Pluggable, MarkerQueryWhoseRelaxedModeIsRefusedLeavesAGlobalCaptureValid) {
  CUstream capturing = nullptr;
  void* block = marker_completed_then_capture(&capturing);
  ASSERT_FALSE(HasFatalFailure());
  const unsigned long long queries = streampool_fake_counter("cuEventQuery");
  streampool_fake_fail_calls("cuThreadExchangeStreamCaptureMode", 1, 0, CUDA_ERROR_UNKNOWN);
  void* grown = streampool_torch_alloc(kChunk, 0, second);
  streampool_fake_clear_failures();
  EXPECT_NE(grown, nullptr);
  EXPECT_NE(grown, block) << "the marker read complete without a query";
  EXPECT_EQ(streampool_fake_counter("cuEventQuery"), queries) << "the marker was queried in global mode";
  expect_capture_valid(capturing);
}

TEST_F(Pluggable, AllocationOnACapturingStreamGoesToTheDriver) {
  CUstream capturing = nullptr;
  ASSERT_EQ(cuStreamCreate(&capturing, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamBeginCapture(capturing, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  void* block = streampool_torch_alloc(kBlock, 0, capturing);
  EXPECT_NE(block, nullptr);
  EXPECT_EQ(totals().used_current, 0U);  // graph memory is the driver's
  streampool_torch_free(block, kBlock, 0, capturing);
  CUgraph graph = nullptr;
  EXPECT_EQ(cuStreamEndCapture(capturing, &graph), CUDA_SUCCESS);
  if (graph != nullptr) cuGraphDestroy(graph);
}

TEST_F(Pluggable, BlockAllocatedBeforeACaptureAndFreedInItIsKeptForTheGraph) {
  CUstream capturing = nullptr;
  ASSERT_EQ(cuStreamCreate(&capturing, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  void* block = streampool_torch_alloc(kBlock, 0, capturing);
  ASSERT_NE(block, nullptr);
  const unsigned long long driver_frees = streampool_fake_counter("cuMemFreeAsync");
  ASSERT_EQ(cuStreamBeginCapture(capturing, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  streampool_torch_free(block, kBlock, 0, capturing);
  CUgraph graph = nullptr;
  ASSERT_EQ(cuStreamEndCapture(capturing, &graph), CUDA_SUCCESS);
  if (graph != nullptr) cuGraphDestroy(graph);
  EXPECT_EQ(streampool_fake_counter("cuMemFreeAsync"), driver_frees);  // the driver cannot free it in a graph
  EXPECT_EQ(totals().used_current, static_cast<std::uint64_t>(kBlock));
  EXPECT_NE(streampool_torch_alloc(kBlock, 0, capturing), block);
}

TEST_F(Pluggable, StreamHandleReusedAfterAnUnseenDestroyDoesNotInheritPendingFrees) {
  CUstream doomed = nullptr;
  ASSERT_EQ(cuStreamCreate(&doomed, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  void* block = streampool_torch_alloc(kBlock, 0, doomed);
  ASSERT_NE(block, nullptr);
  streampool_torch_free(block, kBlock, 0, doomed);
  ASSERT_EQ(cuStreamDestroy(doomed), CUDA_SUCCESS);
  CUstream reborn = nullptr;
  ASSERT_EQ(cuStreamCreate(&reborn, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(reborn, doomed);  // the fake, like NVIDIA's driver, hands the handle out again
  EXPECT_NE(streampool_torch_alloc(kBlock, 0, reborn), block);
}

// A flag a host function sets when its stream reaches it.
void CUDA_CB set_flag(void* flag) { static_cast<std::atomic<bool>*>(flag)->store(true); }

TEST_F(Pluggable, FreeOfARecordedBlockMakesItsStreamWaitForTheRecordingStream) {
  void* block = streampool_torch_alloc(kBlock, 0, first);
  ASSERT_NE(block, nullptr);
  ASSERT_EQ(cuLaunchHostFunc(second, Gate::hold, &gate), CUDA_SUCCESS);  // the block's use on `second`
  streampool_torch_record_stream(block, second);
  streampool_torch_free(block, kBlock, 0, first);  // returns at once
  std::atomic<bool> reached{false};
  ASSERT_EQ(cuLaunchHostFunc(first, set_flag, &reached), CUDA_SUCCESS);  // a new owner's work on `first`
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(reached.load());  // `first` now waits for `second`
  gate.release();
  ASSERT_EQ(cuStreamSynchronize(first), CUDA_SUCCESS);
  EXPECT_TRUE(reached.load());
}

TEST_F(Pluggable, ZeroBytesGiveNullAndFreeingNullIsANoOp) {
  EXPECT_EQ(streampool_torch_alloc(0, 0, first), nullptr);
  EXPECT_EQ(streampool_cupy_malloc(0, 0, first), nullptr);
  streampool_torch_free(nullptr, 0, 0, first);
  streampool_cupy_free(nullptr, 0, first);
  EXPECT_EQ(totals().allocation_calls, 0U);
}

TEST_F(Pluggable, BadDeviceGivesNullAndOneLine) {
  ::testing::internal::CaptureStderr();
  void* block = streampool_torch_alloc(kBlock, 7, first);
  void* negative = streampool_cupy_malloc(kBlock, -1, first);
  const std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(block, nullptr);
  EXPECT_EQ(negative, nullptr);
  EXPECT_NE(said.find("streampool: warn: pluggable allocator: device 7 does not exist"), std::string::npos) << said;
  EXPECT_EQ(totals().allocation_calls, 0U);
}

TEST_F(Pluggable, CupyEntryPointsServeTheLegacyStreamOfTheGivenDevice) {
  ASSERT_EQ(cuCtxSetCurrent(nullptr), CUDA_SUCCESS);  // no current context: the device's primary one
  void* block = streampool_cupy_malloc(kBlock, 0, nullptr);
  ASSERT_NE(block, nullptr);
  EXPECT_EQ(totals().used_current, static_cast<std::uint64_t>(kBlock));
  streampool_cupy_free(block, 0, nullptr);
  EXPECT_EQ(streampool_cupy_malloc(kBlock, 0, nullptr), block);  // same stream: at once
  ASSERT_EQ(cuCtxSetCurrent(context), CUDA_SUCCESS);
}

TEST_F(Pluggable, EmptyCacheMakesFreesReusableEverywhereAndReturnsTheMemory) {
  ASSERT_EQ(cuLaunchHostFunc(first, Gate::hold, &gate), CUDA_SUCCESS);
  void* block = streampool_torch_alloc(kBlock, 0, first);
  ASSERT_NE(block, nullptr);
  streampool_torch_free(block, kBlock, 0, first);
  gate.release();
  ASSERT_EQ(streampool_empty_cache(0), 0);
  EXPECT_EQ(totals().reserved_current, 0U);
  EXPECT_EQ(streampool_empty_cache(9), -1);
}

TEST_F(Pluggable, TorchResetFunctionEmptiesTheDevicesInUse) {
  void* block = streampool_torch_alloc(kBlock, 0, first);
  ASSERT_NE(block, nullptr);
  streampool_torch_free(block, kBlock, 0, first);
  ASSERT_GT(totals().reserved_current, 0U);
  streampool_torch_empty_cache();
  EXPECT_EQ(totals().reserved_current, 0U);
}

}  // namespace
