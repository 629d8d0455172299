// Class 9: graph capture begun (or ended) on another thread while streampool records, queries or
// waits on a marker of its own.
//
// A record into a capturing stream executes nothing: the marker then looks complete (its event
// was never recorded) while the stream's real work, which its frees wait for, still runs. A query
// of any event while a global-mode capture runs invalidates that capture. So no marker may be
// recorded into, waited for by, or queried while a stream is or may be capturing, whichever way a
// begin on one thread and an allocation on another interleave.
//
// Each test: stream A frees a block behind work that still uses it (old_owner_work). A capture
// begins on a thread of its own while the fake driver holds a window open (the real begin delayed
// before it acts, or after it acted and before it returns, or the marker's own record delayed), and
// the main thread allocates on B meanwhile, where streampool grows (recording a marker on A, whose
// pending free would have fitted), inserts a dependency (a capped pool), or polls an earlier
// marker. Violation: B later gets A's block while A's work on it still runs; or the program's
// cuStreamEndCapture fails because streampool's own call invalidated the capture.
#include <memory>

#include "safety_support.hpp"

namespace safety {
namespace {

constexpr unsigned kWindowUs = 200000;  // how long the fake driver holds a window open
constexpr int kLongOldOwnerMs = 800;    // outlasts the window and everything the test does in it
// The old owner's block fills the pool's first chunk (32 MiB), so that B must grow to allocate as
// much and cannot take the rest of the chunk instead.
constexpr std::size_t kChunkBytes = std::size_t{32} << 20;

CUstreamCaptureStatus fake_capture_status(CUstream stream) {
  auto is_capturing = reinterpret_cast<decltype(&::cuStreamIsCapturing)>(fake_symbol("cuStreamIsCapturing"));
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  if (is_capturing != nullptr) is_capturing(stream, &status);
  return status;
}

void inject_failure(const char* entry_point, CUresult error) {
  auto fail = reinterpret_cast<void (*)(const char*, unsigned long long, int)>(fake_symbol("streampool_fake_fail_call"));
  ASSERT_NE(fail, nullptr);
  fail(entry_point, 1, static_cast<int>(error));
}

// A capture of `stream` begun and ended by a thread of its own (thread-local mode must end on the
// thread that began it); it ends when told to.
class CapturingThread {
 public:
  CapturingThread(CUcontext context, CUstream stream, CUstreamCaptureMode mode)
      : thread_([this, context, stream, mode] {
          SP(cuCtxSetCurrent)(context);
          begin_result = SP(cuStreamBeginCapture_v2)(stream, mode);
          began.store(true);
          while (!end_now.load()) std::this_thread::sleep_for(std::chrono::microseconds(100));
          CUgraph graph = nullptr;
          end_result = SP(cuStreamEndCapture)(stream, &graph);
          if (graph != nullptr) SP(cuGraphDestroy)(graph);
        }) {}
  ~CapturingThread() { finish(); }
  CapturingThread(const CapturingThread&) = delete;
  CapturingThread& operator=(const CapturingThread&) = delete;

  void finish() {
    end_now.store(true);
    if (thread_.joinable()) thread_.join();
  }

  std::atomic<bool> began{false};
  std::atomic<bool> end_now{false};
  CUresult begin_result = CUDA_ERROR_UNKNOWN;
  CUresult end_result = CUDA_ERROR_UNKNOWN;

 private:
  std::thread thread_;
};

class CaptureRace : public SafetyTest {
 protected:
  void SetUp() override {
    SafetyTest::SetUp();
    ASSERT_EQ(SP(cuStreamCreate)(&c, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    old_owner.sleep_ms = kLongOldOwnerMs;
  }
  void TearDown() override {
    capturer.reset();
    clear_delays();
    if (auto clear = reinterpret_cast<void (*)()>(fake_symbol("streampool_fake_clear_failures"))) clear();
    SP(cuCtxSynchronize)();
    if (filler != 0) SP(cuMemFreeAsync)(filler, b);
    if (capped != nullptr) {
      SP(cuCtxSynchronize)();
      SP(cuMemPoolDestroy)(capped);
    }
    if (c != nullptr) SP(cuStreamDestroy_v2)(c);
    SafetyTest::TearDown();
  }

  // Starts a capture of `stream` on another thread, the fake driver holding the real begin's
  // window (`where`: "before" it acts, or "after" it acted and before it returns) open.
  void start_capture(CUstream stream, CUstreamCaptureMode mode, bool hold_before) {
    if (hold_before) {
      set_delay_before("cuStreamBeginCapture_v2", kWindowUs);
    } else {
      set_delay_after("cuStreamBeginCapture_v2", kWindowUs);
    }
    const unsigned long long calls = fake_calls("cuStreamBeginCapture_v2");
    capturer = std::make_unique<CapturingThread>(primary, stream, mode);
    if (hold_before) {
      wait_for_call("cuStreamBeginCapture_v2", calls);  // the begin is under way, not yet acted
    } else {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      while (fake_capture_status(stream) != CU_STREAM_CAPTURE_STATUS_ACTIVE && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
      ASSERT_EQ(fake_capture_status(stream), CU_STREAM_CAPTURE_STATUS_ACTIVE);  // begun, the hook not returned
    }
  }

  // Ends the other thread's capture; it must have begun and ended cleanly.
  void end_capture() {
    ASSERT_NE(capturer, nullptr);
    capturer->finish();
    EXPECT_EQ(capturer->begin_result, CUDA_SUCCESS);
    EXPECT_EQ(capturer->end_result, CUDA_SUCCESS) << "streampool's own calls invalidated the program's capture";
    clear_delays();
  }

  // B allocates A's size and keeps it: the pool grows, and streampool tries to record a marker on
  // A, whose pending free would have fitted.
  void grow_on_b(CUmemoryPool from) {
    ASSERT_EQ(SP(cuMemAllocFromPoolAsync)(&filler, old_owner.bytes, from, b), CUDA_SUCCESS);
  }

  // The growth case in `mode`: the begin on another thread acted, its hook has not returned, and B
  // grows; after the capture B allocates again and must not get A's block early.
  void growth_marker_during_begin(CUstreamCaptureMode mode) {
    ASSERT_NO_FATAL_FAILURE(give_up_block(old_owner, pool, a, kChunkBytes));
    ASSERT_NO_FATAL_FAILURE(start_capture(a, mode, false));
    ASSERT_NO_FATAL_FAILURE(grow_on_b(pool));
    ASSERT_NO_FATAL_FAILURE(end_capture());

    ASSERT_NO_FATAL_FAILURE(take_block(new_owner, old_owner, pool, b));
    expect_safe(a, b);
  }

  void capped_pool_dependency_during_begin(CUstreamCaptureMode mode);
  void marker_held_before_its_record(CUstreamCaptureMode mode);

  CUstream c = nullptr;
  CUdeviceptr filler = 0;
  CUmemoryPool capped = nullptr;
  std::unique_ptr<CapturingThread> capturer;
};

TEST_F(CaptureRace, AGrowthMarkerIsNotSwallowedByARelaxedCaptureBegunOnAnotherThread) {
  growth_marker_during_begin(CU_STREAM_CAPTURE_MODE_RELAXED);
}

TEST_F(CaptureRace, AGrowthMarkerIsNotSwallowedByAThreadLocalCaptureBegunOnAnotherThread) {
  growth_marker_during_begin(CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
}

TEST_F(CaptureRace, AGrowthMarkerIsNotSwallowedByAGlobalCaptureBegunOnAnotherThread) {
  growth_marker_during_begin(CU_STREAM_CAPTURE_MODE_GLOBAL);
}

// Run with STREAMPOOL_STRICT_REUSE=1 (CMakeLists.txt sets it for the tests named StrictReuse).
TEST_F(CaptureRace, StrictReuseGrowthMarkerIsNotSwallowedByACaptureBegunOnAnotherThread) {
  const char* strict = std::getenv("STREAMPOOL_STRICT_REUSE");
  ASSERT_NE(strict, nullptr);
  ASSERT_STREQ(strict, "1");
  growth_marker_during_begin(CU_STREAM_CAPTURE_MODE_RELAXED);
}

// A marker recorded before the capture is polled by B's allocation while another thread's global
// capture is beginning: a cuEventQuery then would invalidate the program's capture.
TEST_F(CaptureRace, PollingAMarkerWhileAGlobalCaptureBeginsLeavesTheCaptureValid) {
  ASSERT_NO_FATAL_FAILURE(give_up_block(old_owner, pool, a, kChunkBytes));
  ASSERT_NO_FATAL_FAILURE(grow_on_b(pool));  // a real marker on A, still pending
  ASSERT_NO_FATAL_FAILURE(start_capture(c, CU_STREAM_CAPTURE_MODE_GLOBAL, false));

  ASSERT_NO_FATAL_FAILURE(take_block(new_owner, old_owner, pool, b));
  ASSERT_NO_FATAL_FAILURE(end_capture());
  expect_safe(a, b);
}

// A pool capped so it cannot grow: B's request inserts a dependency on a marker of A. Recorded into
// A's capture it would be a wait on nothing. Refusing the request is safe; granting it early is not.
void CaptureRace::capped_pool_dependency_during_begin(CUstreamCaptureMode mode) {
  capped = create_pool(device, kChunkBytes);
  ASSERT_NO_FATAL_FAILURE(give_up_block(old_owner, capped, a, kChunkBytes));
  ASSERT_NO_FATAL_FAILURE(start_capture(a, mode, false));

  new_owner.previous = &old_owner;
  new_owner.bytes = old_owner.bytes;
  const CUresult allocated = SP(cuMemAllocFromPoolAsync)(&new_owner.block, new_owner.bytes, capped, b);
  if (allocated == CUDA_SUCCESS) {
    ASSERT_EQ(SP(cuLaunchHostFunc)(b, new_owner_work, &new_owner), CUDA_SUCCESS);
  } else {
    EXPECT_EQ(allocated, CUDA_ERROR_OUT_OF_MEMORY);
  }
  ASSERT_NO_FATAL_FAILURE(end_capture());
  ASSERT_EQ(SP(cuStreamSynchronize)(a), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuStreamSynchronize)(b), CUDA_SUCCESS);
  if (allocated == CUDA_SUCCESS) {
    EXPECT_EQ(violation(old_owner, new_owner), "");
    SP(cuMemFreeAsync)(new_owner.block, b);
  }
}

TEST_F(CaptureRace, ACappedPoolsInsertedDependencyIsNotOnAMarkerSwallowedByACapture) {
  capped_pool_dependency_during_begin(CU_STREAM_CAPTURE_MODE_RELAXED);
}

TEST_F(CaptureRace, ACappedPoolsInsertedDependencyDuringAGlobalCaptureLeavesTheCaptureValid) {
  capped_pool_dependency_during_begin(CU_STREAM_CAPTURE_MODE_GLOBAL);
}

// Another stream captures already (so streampool asks the driver about A), the driver answers "not
// capturing", and the fake driver holds the marker's record back while another thread begins a
// capture of A: the record must not land in that capture.
void CaptureRace::marker_held_before_its_record(CUstreamCaptureMode mode) {
  ASSERT_EQ(SP(cuStreamBeginCapture_v2)(c, mode), CUDA_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(give_up_block(old_owner, pool, a, kChunkBytes));
  set_delay_before("cuEventRecord", kWindowUs);
  const unsigned long long records = fake_calls("cuEventRecord");
  CUresult grown = CUDA_ERROR_UNKNOWN;
  std::thread grower([&] {
    SP(cuCtxSetCurrent)(primary);
    grown = SP(cuMemAllocFromPoolAsync)(&filler, old_owner.bytes, pool, b);
  });
  wait_for_call("cuEventRecord", records);  // the marker's record has started, not yet acted
  const CUresult began = SP(cuStreamBeginCapture_v2)(a, mode);
  grower.join();
  clear_delays();
  CUgraph graph = nullptr;
  EXPECT_EQ(began, CUDA_SUCCESS);
  EXPECT_EQ(SP(cuStreamEndCapture)(a, &graph), CUDA_SUCCESS);
  if (graph != nullptr) SP(cuGraphDestroy)(graph);
  graph = nullptr;
  EXPECT_EQ(SP(cuStreamEndCapture)(c, &graph), CUDA_SUCCESS);
  if (graph != nullptr) SP(cuGraphDestroy)(graph);
  ASSERT_EQ(grown, CUDA_SUCCESS);

  ASSERT_NO_FATAL_FAILURE(take_block(new_owner, old_owner, pool, b));
  expect_safe(a, b);
}

TEST_F(CaptureRace, AMarkerHeldBetweenTheDriversAnswerAndItsRecordDoesNotLandInACapture) {
  marker_held_before_its_record(CU_STREAM_CAPTURE_MODE_RELAXED);
}

TEST_F(CaptureRace, AMarkerHeldBeforeItsRecordWhileGlobalCapturesBeginLeavesThemValid) {
  marker_held_before_its_record(CU_STREAM_CAPTURE_MODE_GLOBAL);
}

// A capture of A that is simply in progress (counted): B's growth must not record a marker into it.
TEST_F(CaptureRace, AGrowthMarkerIsNotRecordedIntoAStreamThatIsCapturing) {
  ASSERT_NO_FATAL_FAILURE(give_up_block(old_owner, pool, a, kChunkBytes));
  ASSERT_EQ(SP(cuStreamBeginCapture_v2)(a, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(grow_on_b(pool));
  CUgraph graph = nullptr;
  EXPECT_EQ(SP(cuStreamEndCapture)(a, &graph), CUDA_SUCCESS);
  if (graph != nullptr) SP(cuGraphDestroy)(graph);

  ASSERT_NO_FATAL_FAILURE(take_block(new_owner, old_owner, pool, b));
  expect_safe(a, b);
}

// cuStreamEndCapture refused (here the driver's answer to an end from the wrong thread): the capture
// goes on, so streampool must go on treating A as capturing.
TEST_F(CaptureRace, ARefusedEndCaptureLeavesTheStreamCapturingForMarkers) {
  ASSERT_NO_FATAL_FAILURE(give_up_block(old_owner, pool, a, kChunkBytes));
  ASSERT_EQ(SP(cuStreamBeginCapture_v2)(a, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(inject_failure("cuStreamEndCapture", CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD));
  CUgraph graph = nullptr;
  ASSERT_EQ(SP(cuStreamEndCapture)(a, &graph), CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD);
  ASSERT_EQ(fake_capture_status(a), CU_STREAM_CAPTURE_STATUS_ACTIVE);
  ASSERT_NO_FATAL_FAILURE(grow_on_b(pool));
  EXPECT_EQ(SP(cuStreamEndCapture)(a, &graph), CUDA_SUCCESS);
  if (graph != nullptr) SP(cuGraphDestroy)(graph);

  ASSERT_NO_FATAL_FAILURE(take_block(new_owner, old_owner, pool, b));
  expect_safe(a, b);
}

// The program records its own event into A's capture: that record runs only when the graph is
// launched, so it proves nothing about A's free (the event never recorded reads complete).
TEST_F(CaptureRace, AProgramEventRecordedIntoACaptureDoesNotCompleteTheStreamsFree) {
  CUevent event = nullptr;
  ASSERT_EQ(SP(cuEventCreate)(&event, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(give_up_block(old_owner, pool, a, kChunkBytes));
  ASSERT_EQ(SP(cuStreamBeginCapture_v2)(a, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuEventRecord)(event, a), CUDA_SUCCESS);
  CUgraph graph = nullptr;
  EXPECT_EQ(SP(cuStreamEndCapture)(a, &graph), CUDA_SUCCESS);
  if (graph != nullptr) SP(cuGraphDestroy)(graph);
  ASSERT_EQ(SP(cuEventQuery)(event), CUDA_SUCCESS);  // about a record that never ran

  ASSERT_NO_FATAL_FAILURE(take_block(new_owner, old_owner, pool, b));
  expect_safe(a, b);
  SP(cuEventDestroy_v2)(event);
}

// The free side of the legacy stream's implicit order (a blocking stream frees after the legacy
// stream's use): a synchronize of the freeing stream proves the free only through a marker. While
// another thread's begin is under way the marker is refused, and the synchronize must then prove
// nothing beyond the stream's last real marker.
TEST_F(CaptureRace, ARefusedMarkerDoesNotLetASynchronizeProveAnImplicitlyOrderedFree) {
  CUstream blocking = nullptr;
  ASSERT_EQ(SP(cuStreamCreate)(&blocking, CU_STREAM_DEFAULT), CUDA_SUCCESS);
  old_owner.bytes = kChunkBytes;
  ASSERT_EQ(SP(cuMemAllocFromPoolAsync)(&old_owner.block, old_owner.bytes, pool, blocking), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuStreamSynchronize)(blocking), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuLaunchHostFunc)(CU_STREAM_LEGACY, old_owner_work, &old_owner), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemFreeAsync)(old_owner.block, blocking), CUDA_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(start_capture(c, CU_STREAM_CAPTURE_MODE_RELAXED, true));

  ASSERT_EQ(SP(cuStreamSynchronize)(blocking), CUDA_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(end_capture());
  ASSERT_NO_FATAL_FAILURE(take_block(new_owner, old_owner, pool, b));
  ASSERT_EQ(SP(cuStreamSynchronize)(CU_STREAM_LEGACY), CUDA_SUCCESS);
  expect_safe(blocking, b);
  SP(cuCtxSynchronize)();
  SP(cuStreamDestroy_v2)(blocking);
}

// An event-record node added through the generic cuGraphAddNode: a launch of the graph records the
// event where streampool does not see it, so the event must stop proving A's free.
TEST_F(CaptureRace, AnEventRecordNodeAddedThroughTheGenericEntryPointUntracksTheEvent) {
  CUevent event = nullptr;
  ASSERT_EQ(SP(cuEventCreate)(&event, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  CUgraph graph = nullptr;
  ASSERT_EQ(SP(cuGraphCreate)(&graph, 0), CUDA_SUCCESS);
  CUgraphNodeParams params{};
  params.type = CU_GRAPH_NODE_TYPE_EVENT_RECORD;
  params.eventRecord.event = event;
  CUgraphNode node = nullptr;
  using AddNode = CUresult (*)(CUgraphNode*, CUgraph, const CUgraphNode*, size_t, CUgraphNodeParams*);
  auto add_node = reinterpret_cast<AddNode>(streampool_symbol("cuGraphAddNode"));
  ASSERT_NE(add_node, nullptr);
  ASSERT_EQ(add_node(&node, graph, nullptr, 0, &params), CUDA_SUCCESS);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(SP(cuGraphInstantiateWithFlags)(&exec, graph, 0), CUDA_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(give_up_block(old_owner, pool, a, kChunkBytes));
  ASSERT_EQ(SP(cuEventRecord)(event, a), CUDA_SUCCESS);

  ASSERT_EQ(SP(cuGraphLaunch)(exec, c), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuStreamSynchronize)(c), CUDA_SUCCESS);  // the graph's record has completed
  ASSERT_EQ(SP(cuEventQuery)(event), CUDA_SUCCESS);      // about the graph's record
  ASSERT_NO_FATAL_FAILURE(take_block(new_owner, old_owner, pool, b));

  expect_safe(a, b);
  SP(cuGraphExecDestroy)(exec);
  SP(cuGraphDestroy)(graph);
  SP(cuEventDestroy_v2)(event);
}

}  // namespace
}  // namespace safety
