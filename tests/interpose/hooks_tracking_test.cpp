// Ordering the program makes reaches the engine: host syncs and event waits make memory freed on
// one stream reusable on another at once.
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "hooks_test_api.hpp"

namespace {

class TrackingHooks : public hooks_test::DriverTest {
 protected:
  void SetUp() override {
    DriverTest::SetUp();
    ASSERT_EQ(SP(cuStreamCreate)(&other, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    pool = create_device_pool();
    std::uint64_t keep_everything = ~std::uint64_t{0};
    ASSERT_EQ(SP(cuMemPoolSetAttribute)(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep_everything), CUDA_SUCCESS);
  }
  void TearDown() override {
    SP(cuStreamSynchronize)(stream);
    SP(cuStreamSynchronize)(other);
    SP(cuMemPoolDestroy)(pool);
    SP(cuStreamDestroy_v2)(other);
    DriverTest::TearDown();
  }
  CUstream other = nullptr;
  CUmemoryPool pool = nullptr;
};

TEST_F(TrackingHooks, StreamSynchronizeMakesAFreeReusableOnAnotherStream) {
  CUdeviceptr first = 0;
  ASSERT_EQ(SP(cuMemAllocFromPoolAsync)(&first, 1 << 20, pool, stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemFreeAsync)(first, stream), CUDA_SUCCESS);

  ASSERT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
  CUdeviceptr second = 0;
  ASSERT_EQ(SP(cuMemAllocFromPoolAsync)(&second, 1 << 20, pool, other), CUDA_SUCCESS);

  EXPECT_EQ(second, first);
  EXPECT_EQ(SP(cuMemFreeAsync)(second, other), CUDA_SUCCESS);
}

TEST_F(TrackingHooks, EventWaitMakesAFreeReusableOnTheWaitingStream) {
  CUevent event = nullptr;
  ASSERT_EQ(SP(cuEventCreate)(&event, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  CUdeviceptr first = 0;
  ASSERT_EQ(SP(cuMemAllocFromPoolAsync)(&first, 1 << 20, pool, stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemFreeAsync)(first, stream), CUDA_SUCCESS);

  ASSERT_EQ(SP(cuEventRecord)(event, stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuStreamWaitEvent)(other, event, 0), CUDA_SUCCESS);
  CUdeviceptr second = 0;
  ASSERT_EQ(SP(cuMemAllocFromPoolAsync)(&second, 1 << 20, pool, other), CUDA_SUCCESS);

  EXPECT_EQ(second, first);
  EXPECT_EQ(SP(cuMemFreeAsync)(second, other), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuEventDestroy_v2)(event), CUDA_SUCCESS);
}

// Destroyed events leave nothing in the tracking: many events alive at once, recorded and waited
// on, then destroyed, bring the count back to where it was, round after round.
TEST_F(TrackingHooks, DestroyedEventsLeaveNoTrackingBehind) {
  auto tracked_events = reinterpret_cast<int (*)(size_t*)>(hooks_test::streampool_symbol("streampool_debug_tracked_events"));
  ASSERT_NE(tracked_events, nullptr);
  size_t before = 0;
  ASSERT_EQ(tracked_events(&before), CUDA_SUCCESS);
  for (int round = 0; round < 10; ++round) {
    std::vector<CUevent> events(32, nullptr);
    for (CUevent& event : events) {
      ASSERT_EQ(SP(cuEventCreate)(&event, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
      ASSERT_EQ(SP(cuEventRecord)(event, stream), CUDA_SUCCESS);
      ASSERT_EQ(SP(cuStreamWaitEvent)(other, event, 0), CUDA_SUCCESS);
    }
    size_t alive = 0;
    ASSERT_EQ(tracked_events(&alive), CUDA_SUCCESS);
    EXPECT_GE(alive, before + events.size());
    for (CUevent event : events) ASSERT_EQ(SP(cuEventDestroy_v2)(event), CUDA_SUCCESS);
    size_t after = 0;
    ASSERT_EQ(tracked_events(&after), CUDA_SUCCESS);
    EXPECT_EQ(after, before) << "round " << round;
  }
}

TEST_F(TrackingHooks, RecordOnAnInvalidStreamIsAnErrorNotACrash) {
  CUevent event = nullptr;
  ASSERT_EQ(SP(cuEventCreate)(&event, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  auto* bogus = reinterpret_cast<CUstream>(std::uintptr_t{0x12345});

  const unsigned long long forwarded = hooks_test::fake_calls("cuEventRecord") +
                                       hooks_test::fake_calls("cuStreamWaitEvent") + hooks_test::fake_calls("cuStreamQuery");

  EXPECT_EQ(SP(cuEventRecord)(event, bogus), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(SP(cuStreamWaitEvent)(bogus, event, 0), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(SP(cuStreamQuery)(bogus), CUDA_ERROR_INVALID_HANDLE);
  // None of them reached the driver, which would dereference the handle (NVIDIA's crashes).
  EXPECT_EQ(hooks_test::fake_calls("cuEventRecord") + hooks_test::fake_calls("cuStreamWaitEvent") +
                hooks_test::fake_calls("cuStreamQuery"),
            forwarded);
  EXPECT_EQ(SP(cuEventDestroy_v2)(event), CUDA_SUCCESS);
}

TEST_F(TrackingHooks, ADestroyedStreamsHandleIsResolvedAfresh) {
  CUstream temporary = nullptr;
  ASSERT_EQ(SP(cuStreamCreate)(&temporary, CU_STREAM_DEFAULT), CUDA_SUCCESS);
  CUdeviceptr pointer = 0;
  ASSERT_EQ(SP(cuMemAllocFromPoolAsync)(&pointer, 4096, pool, temporary), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemFreeAsync)(pointer, temporary), CUDA_SUCCESS);

  ASSERT_EQ(SP(cuStreamDestroy_v2)(temporary), CUDA_SUCCESS);

  // Its memory is still reusable once the pool learns the destroyed stream's work completed.
  ASSERT_EQ(SP(cuCtxSynchronize)(), CUDA_SUCCESS);
  CUdeviceptr again = 0;
  ASSERT_EQ(SP(cuMemAllocFromPoolAsync)(&again, 4096, pool, stream), CUDA_SUCCESS);
  EXPECT_EQ(again, pointer);
  EXPECT_EQ(SP(cuMemFreeAsync)(again, stream), CUDA_SUCCESS);
}

// A stream destroyed with a free still pending behind its work: once that work has run, the
// memory is reusable on another stream with no synchronize, because the destroy recorded a marker
// behind the free while the stream still existed (after it, nothing can be recorded there).
TEST_F(TrackingHooks, ADestroyedStreamsPendingFreeIsReusableOnceItsWorkRanWithoutASynchronize) {
  CUstream temporary = nullptr;
  ASSERT_EQ(SP(cuStreamCreate)(&temporary, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  CUdeviceptr pointer = 0;
  ASSERT_EQ(SP(cuMemAllocFromPoolAsync)(&pointer, 1 << 20, pool, temporary), CUDA_SUCCESS);
  std::atomic<int> gate{0};  // 0: held, 1: open, 2: the work ran
  ASSERT_EQ(SP(cuLaunchHostFunc)(temporary, [](void* data) {
    auto* state = static_cast<std::atomic<int>*>(data);
    while (state->load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    state->store(2);
  }, &gate), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemFreeAsync)(pointer, temporary), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuStreamDestroy_v2)(temporary), CUDA_SUCCESS);

  CUdeviceptr early = 0;
  ASSERT_EQ(SP(cuMemAllocFromPoolAsync)(&early, 1 << 20, pool, stream), CUDA_SUCCESS);
  EXPECT_NE(early, pointer) << "reused while the destroyed stream's work still held it";
  ASSERT_EQ(SP(cuMemFreeAsync)(early, stream), CUDA_SUCCESS);
  gate.store(1);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (gate.load() != 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(gate.load(), 2);

  bool reused = false;  // the fake's stream finishes its host function's step just after it returns
  while (!reused && std::chrono::steady_clock::now() < deadline) {
    CUdeviceptr again = 0;
    ASSERT_EQ(SP(cuMemAllocFromPoolAsync)(&again, 1 << 20, pool, other), CUDA_SUCCESS);
    reused = again == pointer;
    ASSERT_EQ(SP(cuMemFreeAsync)(again, other), CUDA_SUCCESS);
    if (!reused) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(reused) << "the destroyed stream's free never became reusable";
}

// With several contexts a context synchronize covers its own context's streams, those the engine
// met while that context was still the only one included.
TEST_F(TrackingHooks, ContextSynchronizeAmongSeveralContextsMakesItsStreamsFreesReusable) {
  CUdeviceptr warm = 0;  // the engine meets `stream` while one context exists
  ASSERT_EQ(SP(cuMemAllocFromPoolAsync)(&warm, 1 << 20, pool, stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemFreeAsync)(warm, stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
  CUcontext second_context = nullptr;
  ASSERT_EQ(SP(cuCtxCreate_v4)(&second_context, nullptr, 0, device), CUDA_SUCCESS);  // now current
  CUstream second_stream = nullptr;
  ASSERT_EQ(SP(cuStreamCreate)(&second_stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  CUdeviceptr elsewhere = 0;  // streampool now knows two contexts
  ASSERT_EQ(SP(cuMemAllocFromPoolAsync)(&elsewhere, 512, pool, second_stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemFreeAsync)(elsewhere, second_stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuStreamSynchronize)(second_stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuCtxSetCurrent)(context), CUDA_SUCCESS);
  CUdeviceptr first = 0;
  ASSERT_EQ(SP(cuMemAllocFromPoolAsync)(&first, 1 << 20, pool, stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemFreeAsync)(first, stream), CUDA_SUCCESS);

  ASSERT_EQ(SP(cuCtxSynchronize)(), CUDA_SUCCESS);
  CUdeviceptr second = 0;
  ASSERT_EQ(SP(cuMemAllocFromPoolAsync)(&second, 1 << 20, pool, other), CUDA_SUCCESS);

  EXPECT_EQ(second, first);
  EXPECT_EQ(SP(cuMemFreeAsync)(second, other), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuStreamDestroy_v2)(second_stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuCtxDestroy_v2)(second_context), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuCtxSetCurrent)(context), CUDA_SUCCESS);
}

}  // namespace
