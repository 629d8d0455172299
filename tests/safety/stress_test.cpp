// Stress versions of the reuse-safety classes: several threads, each with its own streams, loop for
// a bounded time over allocate / work that uses the block / free, mixed with the calls of one
// class (records the driver rejects, records racing queries and waits, graph records, context
// synchronizes, cuMemFree, the legacy stream's implicit order, streams created while others are
// destroyed), all sharing one pool. The ownership ledger (ownership_ledger.hpp) counts every time an
// owner's work ran, or a synchronize of its stream returned, while an earlier owner's work on the
// same memory still ran. Violation: any such count. The loops are random but the verdict is not:
// with safe reuse the count is 0 on every run.
#include <functional>
#include <initializer_list>
#include <random>
#include <thread>
#include <vector>

#include "ownership_ledger.hpp"
#include "safety_support.hpp"

namespace safety {
namespace {

constexpr auto kStressDuration = std::chrono::milliseconds(1500);
constexpr std::size_t kStressBlockBytes = std::size_t{64} << 10;
constexpr int kThreads = 4;
constexpr int kEvents = 4;
constexpr unsigned kUnknownRecordFlag = 0x4;

class Stress : public SafetyTest {
 protected:
  void TearDown() override {
    clear_delays();
    SP(cuCtxSetCurrent)(primary);
    SP(cuCtxSynchronize)();
    for (CUevent event : events) {
      if (event != nullptr) SP(cuEventDestroy_v2)(event);
    }
    SafetyTest::TearDown();
  }

  // The shared events, each with an old record (on `on`) that completed.
  void create_events(CUstream on) {
    for (CUevent& event : events) {
      ASSERT_EQ(SP(cuEventCreate)(&event, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
      ASSERT_EQ(SP(cuEventRecord)(event, on), CUDA_SUCCESS);
    }
    ASSERT_EQ(SP(cuStreamSynchronize)(on), CUDA_SUCCESS);
  }

  // The old owner's part: allocates a block on `stream`, queues work on it and frees it behind.
  Use* give_up(CUstream stream, CUmemoryPool from, int work_us, std::size_t bytes = kStressBlockBytes) {
    CUdeviceptr block = 0;
    if (SP(cuMemAllocFromPoolAsync)(&block, bytes, from, stream) != CUDA_SUCCESS) {
      failures.fetch_add(1);
      return nullptr;
    }
    Use* use = ledger.hand_out(block, bytes, work_us);
    if (SP(cuLaunchHostFunc)(stream, use_work, use) != CUDA_SUCCESS) failures.fetch_add(1);
    if (SP(cuMemFreeAsync)(block, stream) != CUDA_SUCCESS) failures.fetch_add(1);
    return use;
  }

  // The new owner's part: allocates on `stream` and queues work on the block, which it keeps until
  // the end (so a stream never simply takes back its own last block: what it gets was freed by
  // another stream).
  Use* take(CUstream stream, CUmemoryPool from, int work_us, int thread_index) {
    CUdeviceptr block = 0;
    if (SP(cuMemAllocFromPoolAsync)(&block, kStressBlockBytes, from, stream) != CUDA_SUCCESS) {
      failures.fetch_add(1);
      return nullptr;
    }
    Use* use = ledger.hand_out(block, kStressBlockBytes, work_us);
    if (SP(cuLaunchHostFunc)(stream, use_work, use) != CUDA_SUCCESS) failures.fetch_add(1);
    kept[static_cast<std::size_t>(thread_index)].push_back({block, stream});
    return use;
  }

  // Frees what take() kept (everything has been synchronized by then).
  void free_kept() {
    for (auto& blocks : kept) {
      for (const auto& [block, stream] : blocks) SP(cuMemFreeAsync)(block, stream);
      blocks.clear();
    }
  }

  // Waits on the host (telling streampool nothing) until the owners' work ran: each thread keeps
  // at most one round of work queued, so the streams never build up a backlog.
  static void wait_for(std::initializer_list<const Use*> uses) {
    for (const Use* use : uses) {
      while (use != nullptr && !use->done.load()) std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }

  // Runs `body(thread_index, random)` on kThreads threads (primary context current) until the
  // stress duration has passed.
  void run_threads(const std::function<void(int, std::mt19937&)>& body) {
    const auto deadline = std::chrono::steady_clock::now() + kStressDuration;
    std::vector<std::thread> threads;
    for (int index = 0; index < kThreads; ++index) {
      threads.emplace_back([&, index] {
        SP(cuCtxSetCurrent)(primary);
        std::mt19937 random(static_cast<unsigned>(index) * 7919u + 17u);
        while (std::chrono::steady_clock::now() < deadline) body(index, random);
      });
    }
    for (std::thread& thread : threads) thread.join();
    clear_delays();
    SP(cuCtxSynchronize)();
  }

  void expect_no_violation() {
    EXPECT_EQ(failures.load(), 0) << "calls that should have succeeded failed";
    EXPECT_GT(ledger.uses(), static_cast<std::size_t>(kThreads));
    EXPECT_EQ(ledger.violations(), 0) << "times an owner's work overlapped an earlier owner's work on the same memory";
  }

  // Per-thread stream pairs: the first frees, the second takes.
  struct StreamPair {
    CUstream freeing = nullptr;
    CUstream taking = nullptr;
  };
  std::vector<StreamPair> create_stream_pairs(unsigned flags) {
    std::vector<StreamPair> pairs(kThreads);
    for (StreamPair& pair : pairs) {
      EXPECT_EQ(SP(cuStreamCreate)(&pair.freeing, flags), CUDA_SUCCESS);
      EXPECT_EQ(SP(cuStreamCreate)(&pair.taking, flags), CUDA_SUCCESS);
    }
    return pairs;
  }
  void destroy_stream_pairs(const std::vector<StreamPair>& pairs) {
    for (const StreamPair& pair : pairs) {
      SP(cuStreamDestroy_v2)(pair.freeing);
      SP(cuStreamDestroy_v2)(pair.taking);
    }
  }

  CUevent random_event(std::mt19937& random) { return events[random() % kEvents]; }
  static int work_us(std::mt19937& random) { return 2000 + static_cast<int>(random() % 8000); }

  CUevent events[kEvents] = {};
  OwnershipLedger ledger;
  std::atomic<int> failures{0};
  std::vector<std::pair<CUdeviceptr, CUstream>> kept[kThreads];
};

// Class 1: records the driver rejects, among valid ones, then waits, queries and synchronizes.
TEST_F(Stress, RejectedRecordsAmongValidOnesNeverLetABlockGoEarly) {
  auto pairs = create_stream_pairs(CU_STREAM_NON_BLOCKING);
  ASSERT_NO_FATAL_FAILURE(create_events(a));

  run_threads([&](int index, std::mt19937& random) {
    const StreamPair& mine = pairs[static_cast<std::size_t>(index)];
    const Use* freed = give_up(mine.freeing, pool, work_us(random));
    CUevent event = random_event(random);
    if (random() % 4 == 0) SP(cuEventRecord)(event, mine.taking);        // a valid record
    SP(cuEventRecordWithFlags)(event, mine.freeing, kUnknownRecordFlag);  // rejected
    switch (random() % 3) {
      case 0: SP(cuStreamWaitEvent)(mine.taking, event, 0); break;
      case 1: SP(cuEventQuery)(event); break;
      default: SP(cuEventSynchronize)(event); break;
    }
    wait_for({freed, take(mine.taking, pool, work_us(random), index)});
  });

  expect_no_violation();
  free_kept();
  destroy_stream_pairs(pairs);
}

// Class 2: records held open by the fake driver while other threads query, synchronize and wait.
TEST_F(Stress, RecordsRacingQueriesAndWaitsOnOtherThreadsNeverLetABlockGoEarly) {
  auto pairs = create_stream_pairs(CU_STREAM_NON_BLOCKING);
  ASSERT_NO_FATAL_FAILURE(create_events(a));
  set_delay_before("cuEventRecord", 2000);
  set_delay_after("cuStreamWaitEvent", 2000);

  run_threads([&](int index, std::mt19937& random) {
    const StreamPair& mine = pairs[static_cast<std::size_t>(index)];
    const Use* freed = give_up(mine.freeing, pool, work_us(random));
    CUevent event = random_event(random);
    switch (random() % 4) {
      case 0: SP(cuEventRecord)(event, mine.freeing); break;
      case 1: SP(cuStreamWaitEvent)(mine.taking, event, 0); break;
      case 2: SP(cuEventQuery)(event); break;
      default: SP(cuEventRecordWithFlags)(event, mine.taking, CU_EVENT_RECORD_DEFAULT); break;
    }
    wait_for({freed, take(mine.taking, pool, work_us(random), index)});
  });

  expect_no_violation();
  free_kept();
  destroy_stream_pairs(pairs);
}

// Class 7: each thread records its event after its free, then a graph re-records the event on an
// idle stream where streampool does not see it, and the thread queries, synchronizes or waits for
// the event; all threads take from one pool.
TEST_F(Stress, GraphRecordsAfterProgramRecordsNeverLetABlockGoEarly) {
  auto pairs = create_stream_pairs(CU_STREAM_NON_BLOCKING);
  ASSERT_NO_FATAL_FAILURE(create_events(a));
  CUgraph graphs[kThreads] = {};
  CUgraphExec execs[kThreads] = {};
  CUstream graph_streams[kThreads] = {};
  for (int i = 0; i < kThreads; ++i) {
    ASSERT_EQ(SP(cuGraphCreate)(&graphs[i], 0), CUDA_SUCCESS);
    CUgraphNode node = nullptr;
    ASSERT_EQ(SP(cuGraphAddEventRecordNode)(&node, graphs[i], nullptr, 0, events[i % kEvents]), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuGraphInstantiateWithFlags)(&execs[i], graphs[i], 0), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuStreamCreate)(&graph_streams[i], CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  }

  run_threads([&](int index, std::mt19937& random) {
    const auto i = static_cast<std::size_t>(index);
    const StreamPair& mine = pairs[i];
    CUevent event = events[i % kEvents];
    const Use* freed = give_up(mine.freeing, pool, work_us(random));
    SP(cuEventRecord)(event, mine.freeing);
    SP(cuGraphLaunch)(execs[i], graph_streams[i]);
    SP(cuStreamSynchronize)(graph_streams[i]);
    switch (random() % 3) {
      case 0: SP(cuEventQuery)(event); break;
      case 1: SP(cuEventSynchronize)(event); break;
      default: SP(cuStreamWaitEvent)(mine.taking, event, 0); break;
    }
    wait_for({freed, take(mine.taking, pool, work_us(random), index)});
  });

  expect_no_violation();
  free_kept();
  for (int i = 0; i < kThreads; ++i) {
    SP(cuGraphExecDestroy)(execs[i]);
    SP(cuGraphDestroy)(graphs[i]);
    SP(cuStreamDestroy_v2)(graph_streams[i]);
  }
  destroy_stream_pairs(pairs);
}

// Class 3: threads free and take in a created context while another thread synchronizes the
// primary context (streampool has met no stream of it).
TEST_F(Stress, PrimaryContextSynchronizesNeverLetACreatedContextsBlockGoEarly) {
  CUcontext created = nullptr;
  ASSERT_EQ(SP(cuCtxCreate_v4)(&created, nullptr, 0, device), CUDA_SUCCESS);
  auto pairs = create_stream_pairs(CU_STREAM_NON_BLOCKING);  // in the created context
  CUcontext popped = nullptr;
  ASSERT_EQ(SP(cuCtxPopCurrent_v2)(&popped), CUDA_SUCCESS);

  run_threads([&](int index, std::mt19937& random) {
    if (index == 0) {
      SP(cuCtxSynchronize)();  // the primary context: nothing of its own to wait for
      return;
    }
    const StreamPair& mine = pairs[static_cast<std::size_t>(index)];
    const Use* freed = give_up(mine.freeing, pool, work_us(random));
    wait_for({freed, take(mine.taking, pool, work_us(random), index)});
  });

  expect_no_violation();
  SP(cuCtxPushCurrent_v2)(created);
  SP(cuCtxSynchronize)();
  free_kept();
  destroy_stream_pairs(pairs);
  SP(cuCtxDestroy_v2)(created);
  SP(cuCtxSetCurrent)(primary);
}

// Class 4: threads free and take on device 1 while another thread frees pool pointers of device 0
// with cuMemFree.
TEST_F(Stress, MemFreeOnOneDeviceNeverLetsAnotherDevicesBlockGoEarly) {
  CUcontext device_one = nullptr;
  ASSERT_EQ(SP(cuDevicePrimaryCtxRetain)(&device_one, 1), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuCtxSetCurrent)(device_one), CUDA_SUCCESS);
  auto pairs = create_stream_pairs(CU_STREAM_NON_BLOCKING);
  CUmemoryPool pool1 = create_pool(1);
  ASSERT_EQ(SP(cuCtxSetCurrent)(primary), CUDA_SUCCESS);

  run_threads([&](int index, std::mt19937& random) {
    if (index == 0) {  // device 0, primary context current
      CUdeviceptr unrelated = 0;
      if (SP(cuMemAllocFromPoolAsync)(&unrelated, 4096, pool, a) == CUDA_SUCCESS) SP(cuMemFree_v2)(unrelated);
      return;
    }
    SP(cuCtxSetCurrent)(device_one);
    const StreamPair& mine = pairs[static_cast<std::size_t>(index)];
    const Use* freed = give_up(mine.freeing, pool1, work_us(random));
    wait_for({freed, take(mine.taking, pool1, work_us(random), index)});
  });

  expect_no_violation();
  SP(cuCtxSetCurrent)(device_one);
  SP(cuCtxSynchronize)();
  free_kept();
  destroy_stream_pairs(pairs);
  SP(cuMemPoolDestroy)(pool1);
  SP(cuCtxSetCurrent)(primary);
  SP(cuDevicePrimaryCtxRelease_v2)(1);
}

// Class 5: threads free on the legacy stream and take on their blocking streams, or the other way
// round, then synchronize the taking stream: by then the earlier owners must have finished.
TEST_F(Stress, LegacyImplicitOrderNeverLetsASynchronizedStreamsBlockBeEarly) {
  auto pairs = create_stream_pairs(CU_STREAM_DEFAULT);  // blocking streams

  run_threads([&](int index, std::mt19937& random) {
    const StreamPair& mine = pairs[static_cast<std::size_t>(index)];
    const bool legacy_frees = random() % 2 == 0;
    CUstream freeing = legacy_frees ? CU_STREAM_LEGACY : mine.freeing;
    CUstream taking = legacy_frees ? mine.taking : CU_STREAM_LEGACY;
    const Use* freed = give_up(freeing, pool, work_us(random));
    CUdeviceptr block = 0;
    if (SP(cuMemAllocFromPoolAsync)(&block, kStressBlockBytes, pool, taking) != CUDA_SUCCESS) {
      failures.fetch_add(1);
      return;
    }
    Use* use = ledger.hand_out(block, kStressBlockBytes, 0);
    if (SP(cuStreamSynchronize)(taking) == CUDA_SUCCESS) ledger.check_after_synchronize(*use);
    SP(cuLaunchHostFunc)(taking, use_work, use);
    SP(cuMemFreeAsync)(block, taking);
    wait_for({freed, use});
  });

  expect_no_violation();
  destroy_stream_pairs(pairs);
}

// Class 6: threads create streams (two threads blocking ones, two non-blocking ones), use and
// destroy them, while the fake driver holds each destroy open after the handle is free, so a
// stream of the other kind is often created on that handle in the meantime; each new stream then
// takes a block the legacy stream freed behind work still running.
TEST_F(Stress, StreamsCreatedWhileOthersAreDestroyedNeverTakeABlockEarly) {
  set_delay_after("cuStreamDestroy_v2", 5000);

  run_threads([&](int index, std::mt19937& random) {
    CUstream stream = nullptr;
    const unsigned flags = index % 2 == 0 ? CU_STREAM_DEFAULT : CU_STREAM_NON_BLOCKING;
    if (SP(cuStreamCreate)(&stream, flags) != CUDA_SUCCESS) {
      failures.fetch_add(1);
      return;
    }
    const Use* met = give_up(stream, pool, 0);                             // streampool meets the stream
    const Use* freed = give_up(CU_STREAM_LEGACY, pool, work_us(random));  // frees behind work
    const Use* taken = give_up(stream, pool, 0);
    SP(cuStreamDestroy_v2)(stream);
    wait_for({met, freed, taken});
  });

  expect_no_violation();
}

// Class 6 across contexts: two threads create, use and destroy streams of the primary context
// (the fake driver holding each destroy open after the handle is free) and synchronize the primary
// context; two threads create streams of a created context C2, often on those handles, free a
// block on each behind work, and take the same size on a stream of C2.
TEST_F(Stress, StreamsOfAnotherContextCreatedWhileOthersAreDestroyedNeverTakeABlockEarly) {
  CUcontext created = nullptr;
  ASSERT_EQ(SP(cuCtxCreate_v4)(&created, nullptr, 0, device), CUDA_SUCCESS);
  CUstream taking[kThreads] = {};
  for (CUstream& stream : taking) ASSERT_EQ(SP(cuStreamCreate)(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  CUcontext popped = nullptr;
  ASSERT_EQ(SP(cuCtxPopCurrent_v2)(&popped), CUDA_SUCCESS);
  set_delay_after("cuStreamDestroy_v2", 5000);

  run_threads([&](int index, std::mt19937& random) {
    const bool in_primary = index < kThreads / 2;
    if (!in_primary) SP(cuCtxSetCurrent)(created);
    CUstream stream = nullptr;
    if (SP(cuStreamCreate)(&stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
      failures.fetch_add(1);
      return;
    }
    if (in_primary) {
      const Use* met = give_up(stream, pool, 0);  // streampool meets the stream
      SP(cuStreamDestroy_v2)(stream);
      SP(cuCtxSynchronize)();
      wait_for({met});
      return;
    }
    const Use* freed = give_up(stream, pool, work_us(random));
    SP(cuStreamDestroy_v2)(stream);
    wait_for({freed, take(taking[index], pool, work_us(random), index)});
  });

  expect_no_violation();
  SP(cuCtxPushCurrent_v2)(created);
  SP(cuCtxSynchronize)();
  free_kept();
  for (CUstream stream : taking) SP(cuStreamDestroy_v2)(stream);
  SP(cuCtxDestroy_v2)(created);
  SP(cuCtxSetCurrent)(primary);
}

// Class 9 (capture_race_test.cpp): one thread loops over captures of its own stream in every mode
// (relaxed, thread-local, global), each begun behind a free still pending there and ended at once,
// the fake driver holding each begin's window open a little; the other threads trim the pool and
// allocate and free chunk-sized blocks across two streams each, so that their allocations keep
// growing and recording markers on the streams whose frees are pending, the capturing one among
// them. Every capture must end cleanly.
TEST_F(Stress, CapturesBegunInEveryModeOnAnotherThreadNeverLetABlockGoEarly) {
  constexpr std::size_t kChunkBytes = std::size_t{32} << 20;  // every allocation that cannot reuse grows
  constexpr int kMaxRounds = 400;
  std::vector<CUstream> taker_streams(2 * (kThreads - 1));
  for (CUstream& stream : taker_streams) ASSERT_EQ(SP(cuStreamCreate)(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  set_delay_after("cuStreamBeginCapture_v2", 5000);
  set_delay_before("cuEventRecord", 100);
  const auto deadline = std::chrono::steady_clock::now() + kStressDuration;
  std::atomic<bool> capturing_done{false};
  std::atomic<int> captures{0};
  std::atomic<int> captures_broken{0};

  std::thread capturer([&] {
    SP(cuCtxSetCurrent)(primary);
    const CUstreamCaptureMode modes[] = {CU_STREAM_CAPTURE_MODE_RELAXED, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
                                         CU_STREAM_CAPTURE_MODE_GLOBAL};
    for (int round = 0; round < kMaxRounds && std::chrono::steady_clock::now() < deadline; ++round) {
      const Use* freed = give_up(a, pool, 6000 + 1000 * (round % 8), kChunkBytes);
      if (SP(cuStreamBeginCapture_v2)(a, modes[round % 3]) != CUDA_SUCCESS) {
        failures.fetch_add(1);
      } else {
        CUgraph graph = nullptr;
        if (SP(cuStreamEndCapture)(a, &graph) != CUDA_SUCCESS) captures_broken.fetch_add(1);
        if (graph != nullptr) SP(cuGraphDestroy)(graph);
        captures.fetch_add(1);
      }
      wait_for({freed});
    }
    capturing_done.store(true);
  });
  std::vector<std::thread> takers;
  for (int index = 0; index < kThreads - 1; ++index) {
    takers.emplace_back([&, index] {
      SP(cuCtxSetCurrent)(primary);
      for (int round = 0; round < kMaxRounds && !capturing_done.load(); ++round) {
        CUstream stream = taker_streams[static_cast<std::size_t>(2 * index + round % 2)];
        // Memory known free goes back, so the allocation grows (and records markers) again.
        SP(cuMemPoolTrimTo)(pool, 0);
        wait_for({give_up(stream, pool, 200 + 100 * (round % 4), kChunkBytes)});
      }
    });
  }
  capturer.join();
  for (std::thread& taker : takers) taker.join();
  clear_delays();
  SP(cuCtxSynchronize)();

  expect_no_violation();
  EXPECT_GT(captures.load(), 10);
  EXPECT_EQ(captures_broken.load(), 0) << "captures that streampool's own calls invalidated";
  for (CUstream stream : taker_streams) SP(cuStreamDestroy_v2)(stream);
}

}  // namespace
}  // namespace safety
