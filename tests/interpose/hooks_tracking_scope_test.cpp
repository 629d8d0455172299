// What the tracking hooks let a host call or a handle stand for, and no more: a context synchronize
// and cuMemFree cover the current context's streams only; a stream or event created under the
// handle of one that ended out of streampool's sight starts fresh; an event handed to a graph's
// event-record node proves nothing afterwards. Each test holds a free pending behind work that
// has not run (a host function waiting for the test) and checks that another stream is not given
// that memory.
#include <atomic>
#include <chrono>
#include <thread>

#include "hooks_test_api.hpp"

namespace {

class TrackingScope : public hooks_test::DriverTest {
 protected:
  void SetUp() override {
    DriverTest::SetUp();
    ASSERT_EQ(SP(cuStreamCreate)(&other, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    pool = create_device_pool();
    std::uint64_t keep_everything = ~std::uint64_t{0};
    ASSERT_EQ(SP(cuMemPoolSetAttribute)(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep_everything), CUDA_SUCCESS);
  }
  void TearDown() override {
    release_work();
    // Streams destroyed out of streampool's sight still run theirs: wait for every host function.
    while (running.load() != 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    SP(cuStreamSynchronize)(stream);
    SP(cuStreamSynchronize)(other);
    SP(cuMemPoolDestroy)(pool);
    SP(cuStreamDestroy_v2)(other);
    DriverTest::TearDown();
  }

  // A block of `pool` used by work on `on` that runs until release_work(), freed behind it.
  CUdeviceptr pending_free(CUstream on) {
    CUdeviceptr block = 0;
    EXPECT_EQ(SP(cuMemAllocFromPoolAsync)(&block, kBytes, pool, on), CUDA_SUCCESS);
    running.fetch_add(1);
    EXPECT_EQ(SP(cuLaunchHostFunc)(on, &wait_for_release, &released), CUDA_SUCCESS);
    EXPECT_EQ(SP(cuMemFreeAsync)(block, on), CUDA_SUCCESS);
    return block;
  }
  CUdeviceptr alloc_on(CUstream on) {
    CUdeviceptr block = 0;
    EXPECT_EQ(SP(cuMemAllocFromPoolAsync)(&block, kBytes, pool, on), CUDA_SUCCESS);
    return block;
  }
  void release_work() { released.store(true); }
  // Whether a block of kBytes at `again` touches the one at `block`.
  static bool overlaps(CUdeviceptr again, CUdeviceptr block) { return again < block + kBytes && block < again + kBytes; }

  // The fake driver's own entry point, which streampool's hooks never see.
  template <class Function>
  Function* unseen(const char* name) {
    return reinterpret_cast<Function*>(dlsym(hooks_test::fake_driver(), name));
  }

  static void wait_for_release(void* flag) {
    while (!static_cast<std::atomic<bool>*>(flag)->load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    running.fetch_sub(1);
  }
  static inline std::atomic<int> running{0};  // host functions launched and not finished

  // A created context (left not current) whose non-blocking stream freed a block its work still
  // uses; the first context current again.
  struct SecondContext {
    CUcontext context = nullptr;
    CUstream stream = nullptr;
    CUdeviceptr pending = 0;
  };
  void open_second_context(SecondContext* second) {
    ASSERT_EQ(SP(cuCtxCreate_v4)(&second->context, nullptr, 0, device), CUDA_SUCCESS);  // now current
    ASSERT_EQ(SP(cuStreamCreate)(&second->stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    second->pending = pending_free(second->stream);
    ASSERT_EQ(SP(cuCtxSetCurrent)(context), CUDA_SUCCESS);
  }
  // Lets the work run, frees `again` and closes the second context.
  void close_second_context(const SecondContext& second, CUdeviceptr again) {
    release_work();
    EXPECT_EQ(SP(cuMemFreeAsync)(again, other), CUDA_SUCCESS);
    EXPECT_EQ(SP(cuStreamSynchronize)(second.stream), CUDA_SUCCESS);
    EXPECT_EQ(SP(cuStreamDestroy_v2)(second.stream), CUDA_SUCCESS);
    EXPECT_EQ(SP(cuCtxDestroy_v2)(second.context), CUDA_SUCCESS);
    EXPECT_EQ(SP(cuCtxSetCurrent)(context), CUDA_SUCCESS);
  }

  static constexpr size_t kBytes = 1 << 20;
  std::atomic<bool> released{false};
  CUstream other = nullptr;
  CUmemoryPool pool = nullptr;
};

TEST_F(TrackingScope, AContextSynchronizeLeavesAnotherContextsPendingFreePending) {
  SecondContext second;
  ASSERT_NO_FATAL_FAILURE(open_second_context(&second));

  ASSERT_EQ(SP(cuCtxSynchronize)(), CUDA_SUCCESS);  // the first context only
  const CUdeviceptr again = alloc_on(other);

  EXPECT_FALSE(overlaps(again, second.pending)) << "reused while the second context's work may still use it";
  close_second_context(second, again);
}

TEST_F(TrackingScope, MemFreeSynchronizesTheCurrentContextOnly) {
  CUdeviceptr host_freed = 0;
  ASSERT_EQ(SP(cuMemAllocFromPoolAsync)(&host_freed, 4096, pool, other), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuStreamSynchronize)(other), CUDA_SUCCESS);
  SecondContext second;
  ASSERT_NO_FATAL_FAILURE(open_second_context(&second));

  ASSERT_EQ(SP(cuMemFree_v2)(host_freed), CUDA_SUCCESS);  // synchronizes the first context
  const CUdeviceptr again = alloc_on(other);

  EXPECT_FALSE(overlaps(again, second.pending)) << "reused while the second context's work may still use it";
  close_second_context(second, again);
}

TEST_F(TrackingScope, AStreamCreatedUnderTheHandleOfOneThatEndedUnseenStartsFresh) {
  CUstream first = nullptr;
  ASSERT_EQ(SP(cuStreamCreate)(&first, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  const CUdeviceptr block = pending_free(first);
  ASSERT_EQ(unseen<decltype(cuStreamDestroy_v2)>("cuStreamDestroy_v2")(first), CUDA_SUCCESS);

  CUstream second = nullptr;
  ASSERT_EQ(SP(cuStreamCreate)(&second, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(second, first) << "the fake driver hands out the handle destroyed last";
  const CUdeviceptr again = alloc_on(second);

  EXPECT_FALSE(overlaps(again, block)) << "the new stream took the old stream's pending free as its own";
  release_work();
  EXPECT_EQ(SP(cuMemFreeAsync)(again, second), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuStreamSynchronize)(second), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuStreamDestroy_v2)(second), CUDA_SUCCESS);
}

TEST_F(TrackingScope, AnEventCreatedUnderTheHandleOfOneThatEndedUnseenOrdersNothing) {
  CUevent event = nullptr;
  ASSERT_EQ(SP(cuEventCreate)(&event, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  const CUdeviceptr block = pending_free(stream);
  ASSERT_EQ(SP(cuEventRecord)(event, stream), CUDA_SUCCESS);  // covers the free
  ASSERT_EQ(unseen<decltype(cuEventDestroy_v2)>("cuEventDestroy_v2")(event), CUDA_SUCCESS);

  CUevent fresh = nullptr;
  ASSERT_EQ(SP(cuEventCreate)(&fresh, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  ASSERT_EQ(fresh, event) << "the fake driver hands out the handle destroyed last";
  ASSERT_EQ(SP(cuStreamWaitEvent)(other, fresh, 0), CUDA_SUCCESS);  // never recorded: orders nothing
  const CUdeviceptr again = alloc_on(other);

  EXPECT_FALSE(overlaps(again, block)) << "the new event carried the old one's record";
  release_work();
  EXPECT_EQ(SP(cuMemFreeAsync)(again, other), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuEventDestroy_v2)(fresh), CUDA_SUCCESS);
}

// A launch of the graph may record the event at any time, anywhere: what its last tracked record
// covered says nothing about what a wait for it will wait for.
TEST_F(TrackingScope, AnEventGivenToAGraphsEventRecordNodeProvesNothing) {
  CUevent event = nullptr;
  ASSERT_EQ(SP(cuEventCreate)(&event, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  const CUdeviceptr block = pending_free(stream);
  ASSERT_EQ(SP(cuEventRecord)(event, stream), CUDA_SUCCESS);
  CUgraph graph = nullptr;
  ASSERT_EQ(SP(cuGraphCreate)(&graph, 0), CUDA_SUCCESS);
  CUgraphNode node = nullptr;
  ASSERT_EQ(SP(cuGraphAddEventRecordNode)(&node, graph, nullptr, 0, event), CUDA_SUCCESS);

  ASSERT_EQ(SP(cuStreamWaitEvent)(other, event, 0), CUDA_SUCCESS);
  const CUdeviceptr again = alloc_on(other);

  EXPECT_FALSE(overlaps(again, block)) << "an event a graph may record was still trusted";
  release_work();
  EXPECT_EQ(SP(cuMemFreeAsync)(again, other), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuGraphDestroy)(graph), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuEventDestroy_v2)(event), CUDA_SUCCESS);
}

}  // namespace
