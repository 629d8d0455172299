// Every context path works under streampool as on the driver alone, and the tracking follows
// contexts that end: created contexts (cuCtxCreate v2/v3/v4, NULL params), destroy, push/pop,
// primary retain / release / reset, and use after a reset.
#include <atomic>
#include <cstdint>
#include <chrono>
#include <thread>
#include <utility>

#include "hooks_test_api.hpp"

namespace {

// cuCtxCreate_v2, which cuda.h of CUDA 13 no longer declares (cuCtxCreate is the v4 form now).
using CtxCreateV2 = CUresult (*)(CUcontext*, unsigned int, CUdevice);
CUresult create_context_v2(CUcontext* context, CUdevice device) {
  auto create = reinterpret_cast<CtxCreateV2>(hooks_test::streampool_symbol("cuCtxCreate_v2"));
  return create == nullptr ? CUDA_ERROR_NOT_FOUND : create(context, 0, device);
}

class ContextHooks : public hooks_test::DriverTest {
 protected:
  // One allocation and free on `on`, from the device's current pool; the address.
  CUdeviceptr alloc_free(CUstream on, size_t bytes = 1 << 20) {
    CUdeviceptr pointer = 0;
    EXPECT_EQ(SP(cuMemAllocAsync)(&pointer, bytes, on), CUDA_SUCCESS);
    EXPECT_EQ(SP(cuMemFreeAsync)(pointer, on), CUDA_SUCCESS);
    return pointer;
  }
};

TEST_F(ContextHooks, ACreatedContextWithNullParamsAllocatesAndIsDestroyed) {
  CUcontext created = nullptr;
  ASSERT_EQ(SP(cuCtxCreate_v4)(&created, nullptr, 0, device), CUDA_SUCCESS);
  CUstream in_created = nullptr;
  ASSERT_EQ(SP(cuStreamCreate)(&in_created, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  EXPECT_NE(alloc_free(in_created), 0u);
  EXPECT_EQ(SP(cuStreamSynchronize)(in_created), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuStreamDestroy_v2)(in_created), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuCtxDestroy_v2)(created), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuCtxSetCurrent)(context), CUDA_SUCCESS);
  EXPECT_NE(alloc_free(stream), 0u);  // the primary context's streams are unaffected
}

TEST_F(ContextHooks, ManyCreatedContextsComeAndGoWithAllocationsInEach) {
  for (int round = 0; round < 50; ++round) {
    CUcontext created = nullptr;
    ASSERT_EQ(round % 2 == 0 ? create_context_v2(&created, device) : SP(cuCtxCreate_v4)(&created, nullptr, 0, device),
              CUDA_SUCCESS);
    EXPECT_NE(alloc_free(CU_STREAM_LEGACY), 0u);  // the created context's legacy stream
    ASSERT_EQ(round % 2 == 0 ? SP(cuCtxDestroy)(created) : SP(cuCtxDestroy_v2)(created), CUDA_SUCCESS);
  }
  ASSERT_EQ(SP(cuCtxSetCurrent)(context), CUDA_SUCCESS);
  EXPECT_NE(alloc_free(stream), 0u);
}

// A context's end ends its streams in the tracking, so their slots serve later streams: a program
// that creates and destroys contexts with streams in them for as long as it runs holds as many
// slots as it has streams at once. The created stream is not destroyed: it goes with its context.
TEST_F(ContextHooks, ContextsEndingWithTheirStreamsHoldAConstantNumberOfStreamSlots) {
  auto stream_slots = reinterpret_cast<int (*)(size_t*)>(hooks_test::streampool_symbol("streampool_debug_stream_slots"));
  ASSERT_NE(stream_slots, nullptr);
  const auto one_round = [&] {
    CUcontext created = nullptr;
    ASSERT_EQ(SP(cuCtxCreate_v4)(&created, nullptr, 0, device), CUDA_SUCCESS);
    CUstream in_created = nullptr;
    ASSERT_EQ(SP(cuStreamCreate)(&in_created, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    EXPECT_NE(alloc_free(in_created), 0u);
    EXPECT_NE(alloc_free(CU_STREAM_LEGACY), 0u);
    ASSERT_EQ(SP(cuCtxDestroy_v2)(created), CUDA_SUCCESS);
  };
  ASSERT_NO_FATAL_FAILURE(one_round());
  size_t after_first_round = 0;
  ASSERT_EQ(stream_slots(&after_first_round), CUDA_SUCCESS);

  for (int round = 0; round < 20; ++round) ASSERT_NO_FATAL_FAILURE(one_round());
  size_t after_many_rounds = 0;
  ASSERT_EQ(stream_slots(&after_many_rounds), CUDA_SUCCESS);

  EXPECT_EQ(after_many_rounds, after_first_round);
  ASSERT_EQ(SP(cuCtxSetCurrent)(context), CUDA_SUCCESS);
}

// A thread's per-thread default stream ends with the thread: threads that come and go, each
// allocating on its own per-thread stream, hold no slots once they are gone.
TEST_F(ContextHooks, ThreadsThatUsedTheirPerThreadStreamLeaveNoStreamSlotsBehind) {
  auto stream_slots = reinterpret_cast<int (*)(size_t*)>(hooks_test::streampool_symbol("streampool_debug_stream_slots"));
  ASSERT_NE(stream_slots, nullptr);
  const auto one_thread = [&] {
    std::thread worker([&] {
      ASSERT_EQ(SP(cuCtxSetCurrent)(context), CUDA_SUCCESS);
      EXPECT_NE(alloc_free(CU_STREAM_PER_THREAD), 0u);
      EXPECT_EQ(SP(cuStreamSynchronize)(CU_STREAM_PER_THREAD), CUDA_SUCCESS);
    });
    worker.join();
  };
  one_thread();
  size_t after_first = 0;
  ASSERT_EQ(stream_slots(&after_first), CUDA_SUCCESS);
  for (int round = 0; round < 20; ++round) one_thread();
  size_t after_many = 0;
  ASSERT_EQ(stream_slots(&after_many), CUDA_SUCCESS);
  // An ended stream's slot serves the next stream once its marker is known complete: one more
  // slot while the last thread's marker is still out.
  EXPECT_LE(after_many, after_first + 1);
}

// A thread that exits ends its per-thread stream in the tracking, though that stream's work may
// still run: a later thread whose per-thread stream gets the same key (its thread-local storage
// at the same address) is another stream, and does not take the first one's pending free as
// its own.
TEST_F(ContextHooks, AnExitedThreadsPendingPerThreadFreeIsNotTheNextThreadsOwn) {
  std::atomic<bool> gate{false};
  std::thread opener([&] {  // a broken rule must fail the test, not hang it
    std::this_thread::sleep_for(std::chrono::seconds(3));
    gate.store(true);
  });
  std::uintptr_t first_key = 0;
  CUdeviceptr pending = 0;
  std::thread first([&] {
    ASSERT_EQ(SP(cuCtxSetCurrent)(context), CUDA_SUCCESS);
    first_key = hooks_test::stream_key(CU_STREAM_PER_THREAD, false);
    ASSERT_EQ(SP(cuMemAllocAsync)(&pending, 1 << 20, CU_STREAM_PER_THREAD), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuLaunchHostFunc)(CU_STREAM_PER_THREAD, [](void* data) {
      auto* open = static_cast<std::atomic<bool>*>(data);
      while (!open->load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }, &gate), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuMemFreeAsync)(pending, CU_STREAM_PER_THREAD), CUDA_SUCCESS);
  });
  first.join();
  bool same_key_seen = false;
  for (int attempt = 0; attempt < 8 && !same_key_seen; ++attempt) {
    std::thread next([&] {
      ASSERT_EQ(SP(cuCtxSetCurrent)(context), CUDA_SUCCESS);
      if (hooks_test::stream_key(CU_STREAM_PER_THREAD, false) != first_key) return;
      same_key_seen = true;
      CUdeviceptr taken = 0;
      ASSERT_EQ(SP(cuMemAllocAsync)(&taken, 1 << 20, CU_STREAM_PER_THREAD), CUDA_SUCCESS);
      EXPECT_NE(taken, pending) << "the exited thread's free, its work still running, was taken as this stream's";
      EXPECT_FALSE(gate.load()) << "the allocation waited for the other stream's work";
      EXPECT_EQ(SP(cuMemFreeAsync)(taken, CU_STREAM_PER_THREAD), CUDA_SUCCESS);
      EXPECT_EQ(SP(cuStreamSynchronize)(CU_STREAM_PER_THREAD), CUDA_SUCCESS);
    });
    next.join();
  }
  opener.join();
  EXPECT_TRUE(same_key_seen) << "no later thread's per-thread stream had the exited one's key";
  EXPECT_EQ(SP(cuCtxSynchronize)(), CUDA_SUCCESS);
}

TEST_F(ContextHooks, PushAndPopNameTheRightDefaultStream) {
  CUcontext created = nullptr;
  ASSERT_EQ(SP(cuCtxCreate_v4)(&created, nullptr, 0, device), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuCtxPushCurrent_v2)(context), CUDA_SUCCESS);  // primary on top of the created one
  CUdeviceptr pointer = 0;
  ASSERT_EQ(SP(cuMemAllocAsync)(&pointer, 1 << 20, CU_STREAM_LEGACY), CUDA_SUCCESS);
  CUcontext popped = nullptr;
  ASSERT_EQ(SP(cuCtxPopCurrent_v2)(&popped), CUDA_SUCCESS);
  EXPECT_EQ(popped, context);
  // Freed on the created context's legacy stream: a pool pointer may be freed on any stream.
  EXPECT_EQ(SP(cuMemFreeAsync)(pointer, CU_STREAM_LEGACY), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuCtxSynchronize)(), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuCtxDestroy_v2)(created), CUDA_SUCCESS);
}

// A reset of the primary context gives the device's pools' memory back, the memory a pool keeps
// under its release threshold included.
TEST_F(ContextHooks, APrimaryContextResetGivesTheDevicesPoolMemoryBack) {
  CUmemoryPool pool = nullptr;
  ASSERT_EQ(SP(cuDeviceGetMemPool)(&pool, device), CUDA_SUCCESS);
  std::uint64_t keep_everything = ~std::uint64_t{0};
  ASSERT_EQ(SP(cuMemPoolSetAttribute)(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep_everything), CUDA_SUCCESS);
  ASSERT_NE(alloc_free(stream, 8 << 20), 0u);
  ASSERT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
  ASSERT_GT(pool_attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 0u);
  ASSERT_EQ(SP(cuStreamDestroy_v2)(stream), CUDA_SUCCESS);
  stream = nullptr;

  ASSERT_EQ(SP(cuDevicePrimaryCtxReset_v2)(device), CUDA_SUCCESS);

  EXPECT_EQ(pool_attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 0u);
  std::uint64_t zero = 0;
  EXPECT_EQ(SP(cuMemPoolSetAttribute)(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &zero), CUDA_SUCCESS);
  CUcontext primary = nullptr;
  ASSERT_EQ(SP(cuDevicePrimaryCtxRetain)(&primary, device), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuCtxSetCurrent)(primary), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuStreamCreate)(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
}

TEST_F(ContextHooks, APrimaryContextIsUsableAfterAReset) {
  ASSERT_NE(alloc_free(stream), 0u);
  ASSERT_EQ(SP(cuStreamDestroy_v2)(stream), CUDA_SUCCESS);
  stream = nullptr;
  ASSERT_EQ(SP(cuDevicePrimaryCtxReset_v2)(device), CUDA_SUCCESS);
  CUcontext primary = nullptr;
  ASSERT_EQ(SP(cuDevicePrimaryCtxRetain)(&primary, device), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuCtxSetCurrent)(primary), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuStreamCreate)(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  EXPECT_NE(alloc_free(stream), 0u);
  EXPECT_NE(alloc_free(CU_STREAM_LEGACY), 0u);
  EXPECT_EQ(SP(cuCtxSynchronize)(), CUDA_SUCCESS);
}

TEST_F(ContextHooks, APrimaryContextReleasedToZeroEndsItsStreamsInTheTracking) {
  ASSERT_NE(alloc_free(stream), 0u);
  ASSERT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuStreamDestroy_v2)(stream), CUDA_SUCCESS);
  stream = nullptr;
  // Release every reference the test holds: the fixture's, and the one taken here to count them.
  unsigned flags = 0;
  int active = 1;
  while (active != 0) {
    ASSERT_EQ(SP(cuDevicePrimaryCtxRelease_v2)(device), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuDevicePrimaryCtxGetState)(device, &flags, &active), CUDA_SUCCESS);
  }
  const unsigned long long resets = hooks_test::fake_calls("cuDevicePrimaryCtxRelease_v2");
  EXPECT_GE(resets, 1u);
  // A new primary context: the old one's legacy stream key must not carry over its state.
  CUcontext primary = nullptr;
  ASSERT_EQ(SP(cuDevicePrimaryCtxRetain)(&primary, device), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuCtxSetCurrent)(primary), CUDA_SUCCESS);
  EXPECT_NE(alloc_free(CU_STREAM_LEGACY), 0u);
  ASSERT_EQ(SP(cuStreamCreate)(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  EXPECT_NE(alloc_free(stream), 0u);
  EXPECT_EQ(SP(cuCtxSynchronize)(), CUDA_SUCCESS);
}

// The device a pool pointer belongs to, as streampool answers it.
int device_of(CUdeviceptr pointer) {
  int ordinal = -1;
  EXPECT_EQ(SP(cuPointerGetAttribute)(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, pointer), CUDA_SUCCESS);
  return ordinal;
}

// NVIDIA's contexts are heap objects: a context created after another was destroyed may get its
// handle, on another device. streampool must answer for the new context: its device's pool on its
// legacy, per-thread and created streams, nothing cached for the old one. The fake reuses context
// handles only when asked (STREAMPOOL_FAKE_REUSE_CONTEXTS=1, two devices), hence a child.
TEST_F(ContextHooks, DISABLED_AContextHandleReusedOnAnotherDeviceServesThatDevice) {
  CUcontext old_context = nullptr;
  ASSERT_EQ(SP(cuCtxCreate_v4)(&old_context, nullptr, 0, 0), CUDA_SUCCESS);  // now current
  CUstream old_stream = nullptr;
  ASSERT_EQ(SP(cuStreamCreate)(&old_stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  EXPECT_EQ(device_of(alloc_free(CU_STREAM_LEGACY)), 0);
  EXPECT_EQ(device_of(alloc_free(CU_STREAM_PER_THREAD)), 0);
  EXPECT_EQ(device_of(alloc_free(old_stream)), 0);
  ASSERT_EQ(SP(cuCtxSynchronize)(), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuCtxDestroy_v2)(old_context), CUDA_SUCCESS);

  CUcontext reborn = nullptr;
  ASSERT_EQ(SP(cuCtxCreate_v4)(&reborn, nullptr, 0, 1), CUDA_SUCCESS);
  ASSERT_EQ(reborn, old_context) << "the fake did not reuse the context handle";
  // Before any stream is created in it (a creation makes every cached route stale by itself).
  EXPECT_EQ(device_of(alloc_free(CU_STREAM_LEGACY)), 1) << "the legacy stream served from the old context's device";
  EXPECT_EQ(device_of(alloc_free(CU_STREAM_PER_THREAD)), 1) << "the per-thread stream served from the old device";
  CUstream new_stream = nullptr;
  ASSERT_EQ(SP(cuStreamCreate)(&new_stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  EXPECT_EQ(new_stream, old_stream) << "the fake did not reuse the stream handle";
  EXPECT_EQ(device_of(alloc_free(new_stream)), 1) << "the created stream served from the old device";
  EXPECT_EQ(SP(cuCtxSynchronize)(), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuCtxDestroy_v2)(reborn), CUDA_SUCCESS);
}

TEST_F(ContextHooks, AContextHandleReusedOnAnotherDeviceServesThatDevice) {
  EXPECT_EQ(hooks_test::run_child_test("ContextHooks.DISABLED_AContextHandleReusedOnAnotherDeviceServesThatDevice",
                                       {"STREAMPOOL_FAKE_DEVICES=2", "STREAMPOOL_FAKE_REUSE_CONTEXTS=1"}),
            0);
}

// A stream's work held back until `gate` opens (a host function), so its frees stay pending.
void hold_until(CUstream on, std::atomic<bool>* gate) {
  ASSERT_EQ(SP(cuLaunchHostFunc)(on, [](void* data) {
    auto* open = static_cast<std::atomic<bool>*>(data);
    while (!open->load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }, gate), CUDA_SUCCESS);
}

// A context's end takes streampool's marker events with it: the driver destroyed them, and hands
// their handles to the program's next events. A context created under the old handle must get
// markers of its own: a marker event kept from the old context would now be the program's event,
// and streampool would record it. Two streams, one held: the second's allocation of the size the
// first freed grows the pool and records a marker on the first (as a marker on a held stream it
// stays pending). Needs reused context and event handles (STREAMPOOL_FAKE_REUSE_CONTEXTS=1).
TEST_F(ContextHooks, DISABLED_AContextsMarkerEventsEndWithItAndNeverBecomeTheProgramsEvents) {
  constexpr size_t kChunk = size_t{32} << 20;  // a pool's first growth: a second one must grow again
  const auto marker_round = [&](std::atomic<bool>* gate, CUstream* held, CUstream* other) {
    ASSERT_EQ(SP(cuStreamCreate)(held, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuStreamCreate)(other, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    ASSERT_NO_FATAL_FAILURE(hold_until(*held, gate));
    CUdeviceptr freed = 0;
    CUdeviceptr grown = 0;
    ASSERT_EQ(SP(cuMemAllocAsync)(&freed, kChunk, *held), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuMemFreeAsync)(freed, *held), CUDA_SUCCESS);
    const unsigned long long records = hooks_test::fake_calls("cuEventRecord");
    ASSERT_EQ(SP(cuMemAllocAsync)(&grown, kChunk, *other), CUDA_SUCCESS);
    EXPECT_NE(grown, freed);
    EXPECT_GT(hooks_test::fake_calls("cuEventRecord"), records) << "no marker recorded on the held stream";
    ASSERT_EQ(SP(cuMemFreeAsync)(grown, *other), CUDA_SUCCESS);
  };
  CUcontext old_context = nullptr;
  ASSERT_EQ(SP(cuCtxCreate_v4)(&old_context, nullptr, 0, 0), CUDA_SUCCESS);  // now current
  std::atomic<bool> first_gate{false};
  CUstream held = nullptr;
  CUstream other = nullptr;
  ASSERT_NO_FATAL_FAILURE(marker_round(&first_gate, &held, &other));
  first_gate.store(true);
  ASSERT_EQ(SP(cuCtxSynchronize)(), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuCtxDestroy_v2)(old_context), CUDA_SUCCESS);

  CUcontext reborn = nullptr;
  ASSERT_EQ(SP(cuCtxCreate_v4)(&reborn, nullptr, 0, 0), CUDA_SUCCESS);
  ASSERT_EQ(reborn, old_context) << "the fake did not reuse the context handle";
  CUevent programs = nullptr;  // takes the handle of the old context's (streampool's) event
  ASSERT_EQ(SP(cuEventCreate)(&programs, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  std::atomic<bool> second_gate{false};
  ASSERT_NO_FATAL_FAILURE(marker_round(&second_gate, &held, &other));
  EXPECT_EQ(SP(cuEventQuery)(programs), CUDA_SUCCESS) << "streampool recorded the program's event as its marker";
  second_gate.store(true);
  EXPECT_EQ(SP(cuCtxSynchronize)(), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuEventDestroy_v2)(programs), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuCtxDestroy_v2)(reborn), CUDA_SUCCESS);
}

TEST_F(ContextHooks, AContextsMarkerEventsEndWithItAndNeverBecomeTheProgramsEvents) {
  EXPECT_EQ(hooks_test::run_child_test("ContextHooks.DISABLED_AContextsMarkerEventsEndWithItAndNeverBecomeTheProgramsEvents",
                                       {"STREAMPOOL_FAKE_REUSE_CONTEXTS=1"}),
            0);
}

// A context's end ends its own streams in the tracking and no other's: another context's stream
// and per-thread stream keep their identity, and each takes back its own pending free at once;
// the ended context's stream handle is no longer one streampool routes.
TEST_F(ContextHooks, AContextsEndLeavesAnotherContextsStreamsTheirOwnPendingFrees) {
  CUcontext doomed = nullptr;
  ASSERT_EQ(SP(cuCtxCreate_v4)(&doomed, nullptr, 0, device), CUDA_SUCCESS);  // now current
  CUstream in_doomed = nullptr;
  ASSERT_EQ(SP(cuStreamCreate)(&in_doomed, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  EXPECT_NE(alloc_free(in_doomed), 0u);
  ASSERT_EQ(SP(cuStreamSynchronize)(in_doomed), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuCtxSetCurrent)(context), CUDA_SUCCESS);
  std::atomic<bool> gate{false};
  CUdeviceptr own = 0;
  CUdeviceptr per_thread = 0;
  ASSERT_EQ(SP(cuMemAllocAsync)(&own, 1 << 20, stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemAllocAsync)(&per_thread, 1 << 20, CU_STREAM_PER_THREAD), CUDA_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(hold_until(stream, &gate));
  ASSERT_NO_FATAL_FAILURE(hold_until(CU_STREAM_PER_THREAD, &gate));
  ASSERT_EQ(SP(cuMemFreeAsync)(own, stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemFreeAsync)(per_thread, CU_STREAM_PER_THREAD), CUDA_SUCCESS);

  ASSERT_EQ(SP(cuCtxDestroy_v2)(doomed), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuCtxSetCurrent)(context), CUDA_SUCCESS);

  CUdeviceptr again = 0;
  EXPECT_EQ(SP(cuMemAllocAsync)(&again, 1 << 20, stream), CUDA_SUCCESS);
  EXPECT_EQ(again, own) << "the stream lost its identity when another context ended";
  CUdeviceptr per_thread_again = 0;
  EXPECT_EQ(SP(cuMemAllocAsync)(&per_thread_again, 1 << 20, CU_STREAM_PER_THREAD), CUDA_SUCCESS);
  EXPECT_EQ(per_thread_again, per_thread) << "the per-thread stream lost its identity";
  CUdeviceptr stale = 0;
  EXPECT_NE(SP(cuMemAllocAsync)(&stale, 1 << 20, in_doomed), CUDA_SUCCESS) << "a stream of an ended context";
  gate.store(true);
  EXPECT_EQ(SP(cuMemFreeAsync)(again, stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuMemFreeAsync)(per_thread_again, CU_STREAM_PER_THREAD), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuCtxSynchronize)(), CUDA_SUCCESS);
}

// What streampool holds for the contexts it has met (hooks_test_api.hpp's debug exports).
struct HeldForContexts {
  size_t registry_contexts = 0;
  size_t registry_streams = 0;
  size_t marker_events = 0;
};
HeldForContexts held_for_contexts() {
  using Count = int (*)(size_t*);
  HeldForContexts held;
  for (auto [name, out] : {std::pair{"streampool_debug_registry_contexts", &held.registry_contexts},
                           std::pair{"streampool_debug_registry_streams", &held.registry_streams},
                           std::pair{"streampool_debug_marker_events", &held.marker_events}}) {
    auto count = reinterpret_cast<Count>(hooks_test::streampool_symbol(name));
    EXPECT_NE(count, nullptr) << name;
    if (count != nullptr) {
      EXPECT_EQ(count(out), CUDA_SUCCESS) << name;
    }
  }
  return held;
}

// A long-running program whose contexts come and go holds constant memory: an ended context leaves
// neither its entries in the stream registry (the context, its streams) nor its marker events
// behind. In each context a stream is destroyed with a free pending behind its work, which
// records a marker there; another stream is not destroyed but goes with its context.
TEST_F(ContextHooks, ContextsThatComeAndGoLeaveNoRegistryEntriesOrMarkerEventsBehind) {
  size_t markers_while_alive = 0;
  const auto one_round = [&] {
    CUcontext created = nullptr;
    ASSERT_EQ(SP(cuCtxCreate_v4)(&created, nullptr, 0, device), CUDA_SUCCESS);  // now current
    CUstream destroyed = nullptr;
    CUstream kept = nullptr;
    ASSERT_EQ(SP(cuStreamCreate)(&destroyed, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuStreamCreate)(&kept, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    std::atomic<bool> gate{false};
    CUdeviceptr block = 0;
    ASSERT_EQ(SP(cuMemAllocAsync)(&block, 1 << 20, destroyed), CUDA_SUCCESS);
    ASSERT_NO_FATAL_FAILURE(hold_until(destroyed, &gate));
    ASSERT_EQ(SP(cuMemFreeAsync)(block, destroyed), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuStreamDestroy_v2)(destroyed), CUDA_SUCCESS);  // records a marker behind the free
    EXPECT_NE(alloc_free(kept), 0u);
    EXPECT_NE(alloc_free(CU_STREAM_LEGACY), 0u);
    markers_while_alive = held_for_contexts().marker_events;
    gate.store(true);
    ASSERT_EQ(SP(cuCtxDestroy_v2)(created), CUDA_SUCCESS);
  };
  ASSERT_NO_FATAL_FAILURE(one_round());
  ASSERT_EQ(SP(cuCtxSetCurrent)(context), CUDA_SUCCESS);
  const HeldForContexts after_first_round = held_for_contexts();
  EXPECT_GT(markers_while_alive, after_first_round.marker_events) << "no marker was recorded in the context";

  for (int round = 0; round < 20; ++round) ASSERT_NO_FATAL_FAILURE(one_round());
  ASSERT_EQ(SP(cuCtxSetCurrent)(context), CUDA_SUCCESS);
  const HeldForContexts after_many_rounds = held_for_contexts();

  EXPECT_EQ(after_many_rounds.registry_contexts, after_first_round.registry_contexts);
  EXPECT_EQ(after_many_rounds.registry_streams, after_first_round.registry_streams);
  EXPECT_EQ(after_many_rounds.marker_events, after_first_round.marker_events);
}

// streampool holds a reference of its own on a primary context it works in (pool memory is set up
// there when no context of the device is current). A program that releases the primary context
// more often than it retained it ends that reference too; streampool's next use of the context
// takes a new one, so the program's own retains and releases, balanced from then on, leave the
// context (and what streampool set up in it) alive.
TEST_F(ContextHooks, AfterAnOverReleaseStreampoolRetainsThePrimaryContextAgainForItsOwnUse) {
  ASSERT_EQ(SP(cuStreamDestroy_v2)(stream), CUDA_SUCCESS);
  stream = nullptr;
  // Created on a thread with no context current: set up in the primary context.
  const auto pool_made_without_a_current_context = [this] {
    CUmemoryPool pool = nullptr;
    std::thread([&] { pool = create_device_pool(); }).join();
    return pool;
  };
  CUmemoryPool before = pool_made_without_a_current_context();  // streampool retains the context, if not yet
  ASSERT_NE(before, nullptr);
  unsigned flags = 0;
  int active = 1;
  while (active != 0) {  // the fixture's reference, and streampool's
    ASSERT_EQ(SP(cuDevicePrimaryCtxRelease_v2)(device), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuDevicePrimaryCtxGetState)(device, &flags, &active), CUDA_SUCCESS);
  }
  CUcontext primary = nullptr;
  ASSERT_EQ(SP(cuDevicePrimaryCtxRetain)(&primary, device), CUDA_SUCCESS);  // the program's, again
  const unsigned long long retains_before = hooks_test::fake_calls("cuDevicePrimaryCtxRetain");

  CUmemoryPool after = pool_made_without_a_current_context();

  EXPECT_EQ(hooks_test::fake_calls("cuDevicePrimaryCtxRetain"), retains_before + 1)
      << "streampool used the primary context without a reference of its own";
  ASSERT_EQ(SP(cuDevicePrimaryCtxRelease_v2)(device), CUDA_SUCCESS);  // the program's retain above
  ASSERT_EQ(SP(cuDevicePrimaryCtxGetState)(device, &flags, &active), CUDA_SUCCESS);
  EXPECT_EQ(active, 1) << "the program's balanced release ended the primary context streampool works in";
  EXPECT_EQ(SP(cuMemPoolDestroy)(after), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuMemPoolDestroy)(before), CUDA_SUCCESS);
  // The fixture's reference again, for TearDown and the tests after this one.
  ASSERT_EQ(SP(cuDevicePrimaryCtxRetain)(&context, device), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuCtxSetCurrent)(context), CUDA_SUCCESS);
}

// A thread's per-thread default stream of a context ends with the context: a thread that meets
// more contexts over its life than streampool has per-thread slots for (64) allocates on its
// per-thread stream in each, and the registry holds no ended context's per-thread stream.
TEST_F(ContextHooks, AThreadsPerThreadStreamServesItInAsManyContextsAsComeAndGo) {
  const auto one_round = [&](int round) {
    CUcontext created = nullptr;
    ASSERT_EQ(SP(cuCtxCreate_v4)(&created, nullptr, 0, device), CUDA_SUCCESS);  // now current
    CUdeviceptr pointer = 0;
    ASSERT_EQ(SP(cuMemAllocAsync)(&pointer, 1 << 20, CU_STREAM_PER_THREAD), CUDA_SUCCESS) << "context " << round;
    ASSERT_EQ(SP(cuMemFreeAsync)(pointer, CU_STREAM_PER_THREAD), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuCtxDestroy_v2)(created), CUDA_SUCCESS);
  };
  ASSERT_NO_FATAL_FAILURE(one_round(0));
  ASSERT_EQ(SP(cuCtxSetCurrent)(context), CUDA_SUCCESS);
  const HeldForContexts after_first_round = held_for_contexts();

  for (int round = 1; round < 100; ++round) ASSERT_NO_FATAL_FAILURE(one_round(round));
  ASSERT_EQ(SP(cuCtxSetCurrent)(context), CUDA_SUCCESS);
  const HeldForContexts after_many_rounds = held_for_contexts();

  EXPECT_EQ(after_many_rounds.registry_streams, after_first_round.registry_streams);
  EXPECT_EQ(after_many_rounds.registry_contexts, after_first_round.registry_contexts);
  EXPECT_NE(alloc_free(CU_STREAM_PER_THREAD), 0u);  // the primary context's, still there
  EXPECT_EQ(SP(cuStreamSynchronize)(CU_STREAM_PER_THREAD), CUDA_SUCCESS);
}

// A context's end frees its own per-thread slots and no other's: on a thread with per-thread
// streams in three contexts (slots in the order of first use), the middle context's per-thread
// stream keeps its identity when the last one ends, and takes its own pending free back at once.
// (A fresh thread: the test program's main thread holds slots of earlier tests.)
TEST_F(ContextHooks, AContextsEndLeavesALiveContextsPerThreadStreamItsIdentity) {
  std::thread([&] {
    std::atomic<bool> gate{false};
    ASSERT_EQ(SP(cuCtxSetCurrent)(context), CUDA_SUCCESS);
    EXPECT_NE(alloc_free(CU_STREAM_PER_THREAD), 0u);  // the first slot: the primary context's
    CUcontext middle = nullptr;
    ASSERT_EQ(SP(cuCtxCreate_v4)(&middle, nullptr, 0, device), CUDA_SUCCESS);  // now current
    CUdeviceptr pending = 0;
    ASSERT_EQ(SP(cuMemAllocAsync)(&pending, 1 << 20, CU_STREAM_PER_THREAD), CUDA_SUCCESS);  // the second slot
    ASSERT_NO_FATAL_FAILURE(hold_until(CU_STREAM_PER_THREAD, &gate));
    ASSERT_EQ(SP(cuMemFreeAsync)(pending, CU_STREAM_PER_THREAD), CUDA_SUCCESS);
    CUcontext last = nullptr;
    ASSERT_EQ(SP(cuCtxCreate_v4)(&last, nullptr, 0, device), CUDA_SUCCESS);
    EXPECT_NE(alloc_free(CU_STREAM_PER_THREAD), 0u);  // the third slot
    ASSERT_EQ(SP(cuCtxDestroy_v2)(last), CUDA_SUCCESS);

    ASSERT_EQ(SP(cuCtxSetCurrent)(middle), CUDA_SUCCESS);
    CUdeviceptr again = 0;
    EXPECT_EQ(SP(cuMemAllocAsync)(&again, 1 << 20, CU_STREAM_PER_THREAD), CUDA_SUCCESS);
    EXPECT_EQ(again, pending) << "the per-thread stream lost its identity when another context ended";
    gate.store(true);
    EXPECT_EQ(SP(cuMemFreeAsync)(again, CU_STREAM_PER_THREAD), CUDA_SUCCESS);
    EXPECT_EQ(SP(cuCtxSynchronize)(), CUDA_SUCCESS);
    EXPECT_EQ(SP(cuCtxDestroy_v2)(middle), CUDA_SUCCESS);
    EXPECT_EQ(SP(cuCtxSetCurrent)(context), CUDA_SUCCESS);
    EXPECT_EQ(SP(cuStreamSynchronize)(CU_STREAM_PER_THREAD), CUDA_SUCCESS);
  }).join();
}

}  // namespace
