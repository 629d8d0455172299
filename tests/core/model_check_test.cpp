// The randomized model check of the engine.
//
// Thousands of random programs (model/program.hpp) drive a fresh engine each, as the
// interposer's hooks would: allocations in every mapping-unit regime (below 64 MiB, to 1 GiB,
// beyond) from pools with random REUSE_* flags, release thresholds and caps; frees on any
// stream; cuMemFree of pool pointers; event records and waits through the engine's callables,
// which the driver may refuse, and which may stop between the hook's tracking and the driver's
// action while other workers' steps run (blocking on the event's lock where they need it);
// records streampool does not see (graph nodes and launches, launch attributes, captures);
// host synchronisations and queries of streams, events, contexts and the device in three
// phases (ticket, driver call, commit) that other steps may separate; trims, attributes; stream
// destruction and key reuse, seen or not; several contexts with legacy, per-thread and created
// streams, contexts ending (seen or not) and new ones under old handles; events ending unseen
// and new ones under old handles; each step on one of four host threads.
//
// The oracle knows nothing of the engine's clocks: model/gpu_model.hpp builds the
// happens-before relation of a legal GPU execution from CUDA's rules and from the
// dependencies the engine itself inserted (logged by model/model_ordering.hpp). After every
// step it checks (a) no block handed out may overlap in time an earlier block on the same
// bytes: every use and the free of the earlier one are ordered before it (model/reuse_oracle.hpp),
// and a host synchronisation of the allocating stream proves them complete, (b) the four
// statistics are exact: used = the live bytes asked for, its high = their peak since the last
// reset, reserved = what the backing has mapped, its high = the mapped peak since the last reset
// (model/watched_backing.hpp), with no backing contract errors and every live block in mapped
// memory, and (c) the engine kept the Ordering's contract (no marker used after recycling, no
// record on a stream it was told had ended).
//
// Environment: STREAMPOOL_MODEL_PROGRAMS (default 10000), STREAMPOOL_MODEL_SEED (first seed,
// default 1; program k runs seed + k). A failure prints the seed to replay with
// STREAMPOOL_MODEL_PROGRAMS=1. STREAMPOOL_MODEL_IMPLICIT_FREES=0 makes every free wait for its
// block's uses explicitly (by default a free may rely on the legacy stream's implicit order).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "core/happens_before.hpp"
#include "engine_fixture.hpp"
#include "model/gpu_model.hpp"
#include "model/random_program.hpp"
#include "model/reuse_oracle.hpp"
#include "model/step_workers.hpp"

namespace streampool::testing {
namespace {

using core::StreamKind;
using model::BlockRecord;
using model::GpuModel;
using model::OpRef;
using model::ReuseOracle;

std::uint64_t env_number(const char* name, std::uint64_t fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  return std::strtoull(text, nullptr, 10);
}

TEST(ModelCheck, RandomProgramsNeverOverlapLiveMemoryAndKeepExactStatistics) {
  const std::uint64_t programs = env_number("STREAMPOOL_MODEL_PROGRAMS", 10000);
  const std::uint64_t first_seed = env_number("STREAMPOOL_MODEL_SEED", 1);
  ASSERT_GT(programs, 0u) << "STREAMPOOL_MODEL_PROGRAMS=0 would check nothing";
  model::StepWorkers workers(4);
  model::Coverage coverage;
  const auto start = std::chrono::steady_clock::now();
  for (std::uint64_t k = 0; k < programs; ++k) {
    model::ProgramOptions options;
    options.implicit_frees = env_number("STREAMPOOL_MODEL_IMPLICIT_FREES", 1) != 0;
    const std::string failure = model::run_random_program(first_seed + k, workers, options, &coverage);
    ASSERT_TRUE(failure.empty()) << failure;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("streampool: model check: %s, in %.1f s\n", coverage.summary().c_str(), seconds);
  // A model check that never reaches the interesting paths proves little: with enough
  // programs, each of them must have been taken.
  if (programs >= 200) {
    const std::pair<std::size_t, const char*> taken[] = {
        {coverage.reuses_across_streams, "reuse across streams"},
        {coverage.reuses_through_inserted_waits, "reuse ordered only by inserted waits"},
        {coverage.syncs_proving_reuse, "host sync of a stream whose block needed an inserted wait"},
        {coverage.inserted_waits, "inserted waits"},
        {coverage.refused_markers, "marker records or waits the driver refused"},
        {coverage.capture_refusals, "marker calls refused during a capture"},
        {coverage.out_of_memory, "out of memory"},
        {coverage.parked_commits, "commits after other steps"},
        {coverage.parked_driver_calls, "driver calls after other steps"},
        {coverage.event_tickets_overtaken, "event tickets overtaken by a record"},
        {coverage.successful_queries, "successful queries"},
        {coverage.streams_destroyed, "streams destroyed"},
        {coverage.unseen_stream_ends, "streams ending unseen"},
        {coverage.host_frees, "cuMemFree"},
        {coverage.legacy_steps, "legacy-stream allocations and frees"},
        {coverage.per_thread_steps, "per-thread-stream allocations and frees"},
        {coverage.failed_records, "refused event records"},
        {coverage.failed_waits, "refused stream waits"},
        {coverage.failed_host_calls, "failed synchronizes"},
        {coverage.untracked_records, "untracked records"},
        {coverage.graph_launch_records, "graph-launch records"},
        {coverage.events_recreated, "events created under an old handle"},
        {coverage.paused_driver_calls, "driver calls paused"},
        {coverage.interleaved_steps, "steps interleaved with a paused call"},
        {coverage.blocked_interleavings, "steps blocked by a paused call's event lock"},
        {coverage.multi_context_programs, "programs with several contexts"},
        {coverage.context_syncs, "context synchronizes"},
        {coverage.contexts_ended, "contexts ended"},
        {coverage.contexts_ended_unseen, "contexts ended unseen"},
        {coverage.context_handles_reused, "context handles reused"},
        {coverage.medium_allocations, "allocations of 64 MiB to 1 GiB"},
        {coverage.large_allocations, "allocations of 1 GiB and more"},
        {coverage.medium_unit_maps, "32 MiB mapping units mapped"},
        {coverage.large_unit_maps, "256 MiB mapping units mapped"},
        {coverage.medium_unit_unmaps, "32 MiB mapping units given back"},
        {coverage.large_unit_unmaps, "256 MiB mapping units given back"},
    };
    for (const auto& [count, what] : taken) EXPECT_GT(count, 0u) << "never reached: " << what;
  }
}

// --- the oracle itself must be able to fail ----------------------------------------------------

class ModelCheckOracle : public ::testing::Test {
 protected:
  // A block of 1 MiB at 0x100000 of pool 0, allocated by op `alloc`.
  BlockRecord block_at(const OpRef& alloc) {
    BlockRecord block;
    block.address = 0x100000;
    block.bytes = 1 << 20;
    block.alloc = alloc;
    block.alloc_clock = gpu.clock_of(alloc);
    return block;
  }

  GpuModel gpu;
  ReuseOracle oracle;
  std::string violation;
};

TEST_F(ModelCheckOracle, FlagsReuseAcrossStreamsWithoutOrdering) {
  const int s1 = gpu.open_stream(0x1000, StreamKind::non_blocking);
  const int s2 = gpu.open_stream(0x2000, StreamKind::non_blocking);
  const std::size_t first = oracle.hand_out(block_at(gpu.issue(s1)), &violation);
  oracle.freed_on_stream(first, gpu.issue(s1));

  // A wrong history: the same bytes handed out on s2, which nothing orders after the free.
  oracle.hand_out(block_at(gpu.issue(s2)), &violation);

  EXPECT_NE(violation.find("freed at stream instance 0"), std::string::npos) << violation;
}

TEST_F(ModelCheckOracle, FlagsOverlapWithABlockStillLive) {
  const int s1 = gpu.open_stream(0x1000, StreamKind::blocking);
  oracle.hand_out(block_at(gpu.issue(s1)), &violation);
  BlockRecord inside = block_at(gpu.issue(s1));
  inside.address += 4096;  // a partial overlap
  oracle.hand_out(inside, &violation);
  EXPECT_NE(violation.find("still live"), std::string::npos) << violation;
}

TEST_F(ModelCheckOracle, AcceptsReuseOrderedByAnEventWait) {
  const int s1 = gpu.open_stream(0x1000, StreamKind::non_blocking);
  const int s2 = gpu.open_stream(0x2000, StreamKind::non_blocking);
  const std::size_t first = oracle.hand_out(block_at(gpu.issue(s1)), &violation);
  oracle.freed_on_stream(first, gpu.issue(s1));
  gpu.record_event(0xE0, s1);
  ASSERT_TRUE(gpu.wait_event(s2, 0xE0));
  oracle.hand_out(block_at(gpu.issue(s2)), &violation);
  EXPECT_EQ(violation, "");
  EXPECT_TRUE(oracle.last_reused_from_other_instance());
}

TEST_F(ModelCheckOracle, FlagsReuseWhenTheEventWasRecordedBeforeTheFree) {
  const int s1 = gpu.open_stream(0x1000, StreamKind::non_blocking);
  const int s2 = gpu.open_stream(0x2000, StreamKind::non_blocking);
  const std::size_t first = oracle.hand_out(block_at(gpu.issue(s1)), &violation);
  gpu.record_event(0xE0, s1);  // too early: it does not cover the free
  oracle.freed_on_stream(first, gpu.issue(s1));
  ASSERT_TRUE(gpu.wait_event(s2, 0xE0));
  oracle.hand_out(block_at(gpu.issue(s2)), &violation);
  EXPECT_FALSE(violation.empty());
}

TEST_F(ModelCheckOracle, AcceptsReuseOfABlockFreedByTheHost) {
  const int s1 = gpu.open_stream(0x1000, StreamKind::non_blocking);
  const int s2 = gpu.open_stream(0x2000, StreamKind::non_blocking);
  const std::size_t first = oracle.hand_out(block_at(gpu.issue(s1)), &violation);
  oracle.freed_by_host(first);
  oracle.hand_out(block_at(gpu.issue(s2)), &violation);
  EXPECT_EQ(violation, "");
}

TEST_F(ModelCheckOracle, GpuProgressOrdersLaterWorkAfterWhatCompleted) {
  const int s1 = gpu.open_stream(0x1000, StreamKind::non_blocking);
  const int s2 = gpu.open_stream(0x2000, StreamKind::non_blocking);
  const std::size_t first = oracle.hand_out(block_at(gpu.issue(s1)), &violation);
  const OpRef free_op = gpu.issue(s1);
  oracle.freed_on_stream(first, free_op);
  const OpRef before_completion = gpu.issue(s2);
  gpu.complete_instance(s1);
  const OpRef after_completion = gpu.issue(s2);
  EXPECT_FALSE(model::ordered_before(free_op, gpu.clock_of(before_completion)));
  EXPECT_TRUE(model::ordered_before(free_op, gpu.clock_of(after_completion)));
}

TEST_F(ModelCheckOracle, LegacyStreamOrdersBlockingStreamsButNotNonBlockingOnes) {
  const int legacy = gpu.open_stream(0x10, StreamKind::legacy_default);
  const int blocking = gpu.open_stream(0x1000, StreamKind::blocking);
  const int other_blocking = gpu.open_stream(0x2000, StreamKind::blocking);
  const int non_blocking = gpu.open_stream(0x3000, StreamKind::non_blocking);
  const OpRef on_blocking = gpu.issue(blocking);
  const OpRef on_non_blocking = gpu.issue(non_blocking);
  const OpRef on_legacy = gpu.issue(legacy);
  EXPECT_TRUE(model::ordered_before(on_blocking, gpu.clock_of(on_legacy)));
  EXPECT_FALSE(model::ordered_before(on_non_blocking, gpu.clock_of(on_legacy)));
  // Through the legacy stream, the other blocking stream follows the first one's earlier work.
  const OpRef later = gpu.issue(other_blocking);
  EXPECT_TRUE(model::ordered_before(on_legacy, gpu.clock_of(later)));
  EXPECT_TRUE(model::ordered_before(on_blocking, gpu.clock_of(later)));
  EXPECT_FALSE(model::ordered_before(on_legacy, gpu.clock_of(gpu.issue(non_blocking))));
}

TEST_F(ModelCheckOracle, LegacyWorkIssuedAfterABlockingStreamsLastOpIsNotBeforeIt) {
  const int legacy = gpu.open_stream(0x10, StreamKind::legacy_default);
  const int blocking = gpu.open_stream(0x1000, StreamKind::blocking);
  gpu.issue(blocking);
  const OpRef legacy_later = gpu.issue(legacy);
  // Synchronising the blocking stream waits for its own last op only.
  gpu.complete_instance(blocking);
  EXPECT_FALSE(gpu.is_complete(legacy_later));
}

TEST_F(ModelCheckOracle, FlagsReuseWhileAKernelOfTheEarlierBlockMayStillRun) {
  const int s1 = gpu.open_stream(0x1000, StreamKind::non_blocking);
  const int s2 = gpu.open_stream(0x2000, StreamKind::non_blocking);
  const int s3 = gpu.open_stream(0x3000, StreamKind::non_blocking);
  const std::size_t first = oracle.hand_out(block_at(gpu.issue(s1)), &violation);
  oracle.used(first, gpu.issue(s3));  // a kernel on s3 that nothing orders before the free
  oracle.freed_on_stream(first, gpu.issue(s1));
  gpu.record_event(0xE0, s1);
  ASSERT_TRUE(gpu.wait_event(s2, 0xE0));

  oracle.hand_out(block_at(gpu.issue(s2)), &violation);

  EXPECT_NE(violation.find("whose use at stream instance 2"), std::string::npos) << violation;
}

TEST_F(ModelCheckOracle, FlagsAHostSyncOfTheAllocatingStreamThatLeavesThePreviousOwnerRunning) {
  const int legacy = gpu.open_stream(0x10, StreamKind::legacy_default);
  const int blocking = gpu.open_stream(0x1000, StreamKind::blocking);
  const std::size_t first = oracle.hand_out(block_at(gpu.issue(legacy)), &violation);
  oracle.used(first, gpu.issue(legacy));
  oracle.freed_on_stream(first, gpu.issue(legacy, nullptr, /*implicit=*/false));
  // Reused on the blocking stream through the implicit order alone: the allocation enqueues
  // nothing, so its place carries no edge to the legacy stream's kernel.
  BlockRecord second = block_at(gpu.issue(blocking, nullptr, /*implicit=*/false));
  second.alloc_clock = gpu.next_clock(blocking);
  const std::size_t id = oracle.hand_out(second, &violation);
  ASSERT_EQ(violation, "") << "later work on the blocking stream follows the legacy kernel";

  gpu.complete_instance(blocking);  // cuStreamSynchronize of the blocking stream

  EXPECT_NE(oracle.previous_owners_done(id, gpu).find("may still be in use"), std::string::npos);
}

TEST_F(ModelCheckOracle, AcceptsAHostSyncOfAStreamThatReallyWaitedForThePreviousOwner) {
  const int legacy = gpu.open_stream(0x10, StreamKind::legacy_default);
  const int blocking = gpu.open_stream(0x1000, StreamKind::blocking);
  const std::size_t first = oracle.hand_out(block_at(gpu.issue(legacy)), &violation);
  oracle.used(first, gpu.issue(legacy));
  oracle.freed_on_stream(first, gpu.issue(legacy, nullptr, /*implicit=*/false));
  const model::VectorClock marker = gpu.clock_of(gpu.issue(legacy));  // the engine's marker, and its wait
  gpu.issue(blocking, &marker);
  const std::size_t id = oracle.hand_out(block_at(gpu.issue(blocking, nullptr, /*implicit=*/false)), &violation);
  ASSERT_EQ(violation, "");

  gpu.complete_instance(blocking);

  EXPECT_EQ(oracle.previous_owners_done(id, gpu), "");
}

TEST_F(ModelCheckOracle, ImplicitOrderStaysInsideItsContext) {
  const int legacy_a = gpu.open_stream(0x10, StreamKind::legacy_default, /*group=*/0xA);
  const int blocking_a = gpu.open_stream(0x1000, StreamKind::blocking, 0xA);
  const int blocking_b = gpu.open_stream(0x2000, StreamKind::blocking, 0xB);
  const OpRef on_legacy = gpu.issue(legacy_a);
  EXPECT_TRUE(model::ordered_before(on_legacy, gpu.clock_of(gpu.issue(blocking_a))));
  EXPECT_FALSE(model::ordered_before(on_legacy, gpu.clock_of(gpu.issue(blocking_b))));
}

TEST_F(ModelCheckOracle, AContextSynchronizeCompletesItsOwnStreamsOnly) {
  const int a = gpu.open_stream(0x1000, StreamKind::non_blocking, 0xA);
  const int b = gpu.open_stream(0x2000, StreamKind::non_blocking, 0xB);
  const OpRef on_a = gpu.issue(a);
  const OpRef on_b = gpu.issue(b);
  gpu.complete_up_to(gpu.group_issued(0xA));
  EXPECT_TRUE(gpu.is_complete(on_a));
  EXPECT_FALSE(gpu.is_complete(on_b));
}

// The interleaving's own machinery must be able to tell a blocked worker from a running one.
TEST(ModelCheckWorkers, SettleTellsAStepBlockedOnALockFromOneThatFinishes) {
  model::StepWorkers workers(2);
  std::mutex lock;
  const std::function<void()> take_lock = [&] {
    workers.checkpoint();  // what may block follows
    std::lock_guard guard(lock);
  };
  std::unique_lock held(lock);

  workers.post(1, take_lock);
  const model::StepWorkers::Settled while_held = workers.settle(1, /*detect_blocking=*/true);
  held.unlock();
  workers.wait_finished(1);
  workers.post(1, take_lock);
  const model::StepWorkers::Settled when_free = workers.settle(1, /*detect_blocking=*/true);

  EXPECT_EQ(while_held, model::StepWorkers::Settled::blocked);
  EXPECT_EQ(when_free, model::StepWorkers::Settled::finished);
}

TEST(ModelCheckWorkers, SettleReportsAStepPausedInADriverCall) {
  model::StepWorkers workers(2);
  bool resumed = false;
  const std::function<void()> pausing = [&] {
    workers.pause();
    resumed = true;
  };
  workers.post(0, pausing);
  const model::StepWorkers::Settled settled = workers.settle(0, /*detect_blocking=*/false);
  const bool resumed_while_paused = resumed;
  workers.resume(0);
  workers.wait_finished(0);
  EXPECT_EQ(settled, model::StepWorkers::Settled::paused);
  EXPECT_FALSE(resumed_while_paused);
  EXPECT_TRUE(resumed);
}

// --- engine bugs the model check found, as minimal deterministic tests ----------------------------

class ModelCheckFindings : public EngineTest {
 protected:
  void SetUp() override {
    ordering.set_kind(kLegacy, core::StreamKind::legacy_default);
    ordering.set_kind(kStream1, core::StreamKind::blocking);
    ordering.set_kind(kStream2, core::StreamKind::non_blocking);
    pool = make_pool();
    const std::uint64_t max = UINT64_MAX;
    EXPECT_EQ(engine.set_attribute(pool, core::PoolAttribute::release_threshold, &max), core::Status::success);
  }
  core::Pool* pool = nullptr;
};

// Found by the model check (seed 4 against commit fff3297: a successful query of the legacy
// stream completed a later free on a blocking stream). cuStreamSynchronize of
// a blocking stream waits for that stream's own work, which waited for legacy work issued
// *before* it, never for legacy work issued after its last operation.
TEST_F(ModelCheckFindings, SynchronizingABlockingStreamDoesNotCompleteLaterLegacyWork) {
  engine.ticket_for_stream(kStream1, false);  // the engine knows the blocking stream
  const std::uintptr_t block = alloc(pool, 1 * MiB, kLegacy);
  ordering.enqueue_work(kLegacy);  // a long kernel on the legacy stream uses the block
  free(block, kLegacy);

  synchronize(kStream1);  // the blocking stream has nothing queued: returns at once

  EXPECT_NE(alloc(pool, 1 * MiB, kStream2), block) << "reused while the legacy kernel may still run";
}

// The same through a successful stream query, which the adapters commit the same way.
TEST_F(ModelCheckFindings, AQueryOfABlockingStreamDoesNotCompleteLaterLegacyWork) {
  engine.ticket_for_stream(kStream1, false);
  const std::uintptr_t block = alloc(pool, 1 * MiB, kLegacy);
  ordering.enqueue_work(kLegacy);
  free(block, kLegacy);

  engine.commit(engine.ticket_for_stream(kStream1, /*releases=*/false));  // the query says idle

  EXPECT_NE(alloc(pool, 1 * MiB, kStream2), block) << "reused while the legacy kernel may still run";
}

// And the mirror image: synchronizing the legacy stream does not wait for blocking-stream work
// issued after the legacy stream's last operation.
TEST_F(ModelCheckFindings, SynchronizingTheLegacyStreamDoesNotCompleteLaterBlockingWork) {
  engine.ticket_for_stream(kLegacy, false);
  const std::uintptr_t block = alloc(pool, 1 * MiB, kStream1);
  ordering.enqueue_work(kStream1);
  free(block, kStream1);

  synchronize(kLegacy);

  EXPECT_NE(alloc(pool, 1 * MiB, kStream2), block) << "reused while the blocking stream's kernel may still run";
}


// Found by the model check (seed 2500, once the check judged every use of a block as well as its
// hand-out; seed 41426 before it, through a free): a block freed on the legacy stream after a
// blocking stream's kernel used it is safe for the legacy stream's later work only (its implicit
// order binds work queued from then on). Handed out again on the legacy stream, it may be used on a
// second blocking stream, which the same implicit order puts after the allocation: on NVIDIA's
// driver the free and the allocation are stream operations, so that use follows the kernel; under
// streampool they enqueue nothing, and the use followed only the legacy stream's earlier work. The
// legacy stream now takes a marker (which follows the kernel) before it hands such memory out.
TEST_F(ModelCheckFindings, TheLegacyStreamReusesItsOwnFreeOnlyBehindAMarkerThatFollowsTheFirstOwner) {
  // A pool of one block: the legacy stream can only take its free again, so it marks it first.
  core::PoolProps props;
  props.max_size = 32 * MiB;
  core::Pool* capped = make_pool(props);
  const std::uintptr_t first = alloc(capped, 32 * MiB, kLegacy);
  ordering.enqueue_work(kStream1);  // a long kernel on a blocking stream uses it
  free(first, kLegacy);             // ordered after the kernel by the legacy stream's implicit order
  const std::size_t records_before = ordering.records();
  const std::uintptr_t second = alloc(capped, 32 * MiB, kLegacy);
  ASSERT_EQ(second, first) << "the legacy stream reuses its own free";
  EXPECT_EQ(ordering.records(), records_before + 1)
      << "handed out again with no real operation of the legacy stream after the kernel";
  free(second, kLegacy);
}

// Found by the model check (seed 23913): a stream slot that ended with its frees complete serves
// the next stream seen, with its shares of pools. A legacy stream that took over a non-blocking
// stream's slot must still mark its frees before it takes them again.
TEST_F(ModelCheckFindings, ALegacyStreamOnAReclaimedSlotStillMarksItsFreesBeforeReusingThem) {
  core::PoolProps props;
  props.max_size = 32 * MiB;
  core::Pool* capped = make_pool(props);
  free(alloc(capped, 32 * MiB, kStream2), kStream2);  // the non-blocking stream's share of the pool
  engine.stream_destroyed(kStream2);
  engine.commit(engine.ticket_for_all(true));  // its frees complete: its slot may be reclaimed
  const std::uintptr_t first = alloc(capped, 32 * MiB, kLegacy);  // the legacy stream, seen now
  ordering.enqueue_work(kStream1);
  free(first, kLegacy);
  const std::size_t records_before = ordering.records();
  const std::uintptr_t second = alloc(capped, 32 * MiB, kLegacy);
  ASSERT_EQ(second, first);
  EXPECT_EQ(ordering.records(), records_before + 1) << "taken again with no marker after the kernel";
  free(second, kLegacy);
}

// Where the pool may grow, the legacy stream takes other memory until a batch of its frees waits
// for a marker, then marks them all at once: a loop of pairs, each block used by a blocking
// stream's kernel, takes one marker per batch, holds a batch of blocks, and never hands out a free
// that no marker recorded after it covers.
TEST_F(ModelCheckFindings, TheLegacyStreamMarksItsFreesInBatchesAndReusesOnlyMarkedOnes) {
  constexpr int kPairs = 64;
  std::map<std::uintptr_t, std::size_t> records_at_free;  // the records made before each block's last free
  std::set<std::uintptr_t> blocks;
  const std::size_t records_before = ordering.records();
  for (int i = 0; i < kPairs; ++i) {
    const std::uintptr_t block = alloc(pool, 1 * MiB, kLegacy);
    blocks.insert(block);
    if (auto it = records_at_free.find(block); it != records_at_free.end()) {
      EXPECT_GT(ordering.records(), it->second) << "pair " << i << ": reused with no marker after its free";
    }
    ordering.enqueue_work(kStream1);  // the block's use
    free(block, kLegacy);
    records_at_free[block] = ordering.records();
  }
  const std::size_t markers = ordering.records() - records_before;
  EXPECT_GE(markers, 1u);
  EXPECT_LE(markers, kPairs / core::HappensBefore::kAnchorBatchMisses + 1);
  EXPECT_LE(blocks.size(), core::HappensBefore::kAnchorBatchMisses + 1);
}

// The batch's exact size: with blocks too small for the bytes to count, the legacy stream takes
// other memory kAnchorBatchMisses times after its first pair, and the next allocation records the
// marker (and takes a marked block): one marker every kAnchorBatchMisses + 1 pairs; with 4 MiB
// blocks two misses reach kAnchorBatchBytes, so a marker comes every third pair.
class LegacyBatches : public ModelCheckFindings {
 protected:
  // The records made after each of `pairs` pairs on the legacy stream, each block used by a
  // blocking stream's kernel; `blocks`: the distinct blocks handed out.
  std::vector<std::size_t> records_after_each_pair(int pairs, std::size_t bytes, std::size_t* blocks) {
    std::vector<std::size_t> records;
    std::set<std::uintptr_t> seen;
    for (int i = 0; i < pairs; ++i) {
      const std::uintptr_t block = alloc(pool, bytes, kLegacy);
      seen.insert(block);
      ordering.enqueue_work(kStream1);
      free(block, kLegacy);
      records.push_back(ordering.records());
    }
    *blocks = seen.size();
    return records;
  }
};

TEST_F(LegacyBatches, SmallFreesAreMarkedOnceTheBatchHasItsMisses) {
  constexpr std::size_t kMisses = core::HappensBefore::kAnchorBatchMisses;
  std::size_t blocks = 0;
  const std::vector<std::size_t> records = records_after_each_pair(2 * (kMisses + 1), 64 * KiB, &blocks);
  for (std::size_t i = 0; i < records.size(); ++i) {
    EXPECT_EQ(records[i], i / (kMisses + 1)) << "pair " << i;
  }
  EXPECT_EQ(blocks, kMisses + 1);
}

TEST_F(LegacyBatches, LargeFreesAreMarkedOnceTheBatchHasItsBytes) {
  constexpr std::size_t kBlock = 4 * MiB;
  constexpr std::size_t kMissesToFill = core::HappensBefore::kAnchorBatchBytes / kBlock;  // 2
  std::size_t blocks = 0;
  const std::vector<std::size_t> records = records_after_each_pair(8 * (kMissesToFill + 1), kBlock, &blocks);
  for (std::size_t i = 0; i < records.size(); ++i) {
    EXPECT_EQ(records[i], i / (kMissesToFill + 1)) << "pair " << i;
  }
  EXPECT_EQ(blocks, kMissesToFill + 1);
}

// A marker that completed before the legacy stream's next batch is read before a new one replaces
// it: the frees it covers are known complete, and another stream takes them with no wait, though
// the new marker still waits behind a kernel. (Replaced unread, that answer would come only with
// the new marker.)
TEST_F(LegacyBatches, AMarkerReplacedByTheNextBatchIsReadFirst) {
  ordering.enqueue_work(kLegacy);  // the first marker waits behind this kernel
  std::set<std::uintptr_t> small_blocks;
  while (ordering.records() == 0) {
    const std::uintptr_t block = alloc(pool, 64 * KiB, kLegacy);
    small_blocks.insert(block);
    free(block, kLegacy);
  }
  // Large pairs miss until their bytes fill the next batch; the first marker is still pending
  // at each of their reads.
  constexpr std::size_t kBlock = 4 * MiB;
  for (std::uint64_t i = 0; i < core::HappensBefore::kAnchorBatchBytes / kBlock; ++i) {
    free(alloc(pool, kBlock, kLegacy), kLegacy);
  }
  ASSERT_EQ(ordering.records(), 1u);
  ordering.complete(kLegacy);      // the first marker has completed, unread
  ordering.enqueue_work(kLegacy);  // the next one will wait behind this kernel
  const std::uintptr_t large = alloc(pool, kBlock, kLegacy);  // the full batch takes a marker
  ASSERT_EQ(ordering.records(), 2u);

  const std::uintptr_t taken = alloc(pool, 64 * KiB, kStream2);
  EXPECT_EQ(small_blocks.count(taken), 1u) << "a free the completed marker covers was not taken";
  EXPECT_EQ(ordering.waits_by(kStream2), 0u) << "waited for the pending marker";
  free(taken, kStream2);
  free(large, kLegacy);
}

// A block the legacy stream took again behind its marker carries no debt: freed on a blocking
// stream, it needs no wait (that stream's later work follows the marker by the implicit order).
TEST_F(ModelCheckFindings, AMarkedLegacyReuseFreedOnABlockingStreamNeedsNoWait) {
  ordering.set_kind(kStream3, core::StreamKind::blocking);
  core::PoolProps props;
  props.max_size = 32 * MiB;
  core::Pool* capped = make_pool(props);
  const std::uintptr_t first = alloc(capped, 32 * MiB, kLegacy);
  ordering.enqueue_work(kStream1);  // the marker stays pending behind this kernel
  free(first, kLegacy);
  const std::uintptr_t second = alloc(capped, 32 * MiB, kLegacy);  // marked: the pool has nothing else
  ASSERT_EQ(second, first);
  free(second, kStream3);
  EXPECT_EQ(ordering.waits_by(kStream3), 0u);
}

// Where no blocking stream can exist (none created, no per-thread default stream seen), the legacy
// stream's implicit order binds nothing: its pairs take no marker.
TEST_F(ModelCheckFindings, WithoutBlockingStreamsTheLegacyStreamReusesItsFreesWithNoMarker) {
  ordering.set_implicit_partners(false);
  const std::uintptr_t first = alloc(pool, 1 * MiB, kLegacy);
  free(first, kLegacy);
  const std::size_t records_before = ordering.records();
  for (int i = 0; i < 3; ++i) {
    const std::uintptr_t again = alloc(pool, 1 * MiB, kLegacy);
    EXPECT_EQ(again, first);
    free(again, kLegacy);
  }
  EXPECT_EQ(ordering.records(), records_before);
}

// Where the legacy stream takes no marker (records refused there, as during a capture that may
// involve it), it does not hand out its own frees that no marker follows: other memory serves it.
TEST_F(ModelCheckFindings, ALegacyStreamThatCannotTakeAMarkerDoesNotReuseItsUnanchoredFrees) {
  const std::uintptr_t first = alloc(pool, 1 * MiB, kLegacy);
  ordering.enqueue_work(kStream1);
  free(first, kLegacy);
  ordering.fail_records_on(kLegacy);
  const std::uintptr_t second = alloc(pool, 1 * MiB, kLegacy);
  EXPECT_NE(second, 0u);
  EXPECT_NE(second, first) << "handed out again with nothing ordering its next users after the kernel";
}

// Found by the model check (seed 4253, with growths after a release mapped as one unit), before the
// legacy stream anchored its reuse: where the engine saw no blocking stream when the legacy stream
// took its free again (one used only for kernels, unseen without the preload), a second blocking
// stream seen later may free the block, unused (legal: the implicit order puts it after the
// allocation), and reuse it at once. It must wait for the legacy stream's work (a marker) first.
TEST_F(ModelCheckFindings, MemoryPassedFromTheLegacyStreamToABlockingStreamStaysOrderedAfterItsFirstOwner) {
  ordering.set_kind(kStream3, core::StreamKind::blocking);
  ordering.set_implicit_partners(false);
  const std::uintptr_t first = alloc(pool, 1 * MiB, kStream1);
  ordering.enqueue_work(kStream1);  // a long kernel on the first blocking stream uses it
  free(first, kLegacy);             // ordered after the kernel by the legacy stream's implicit order
  const std::uintptr_t second = alloc(pool, 1 * MiB, kLegacy);
  ASSERT_EQ(second, first) << "the legacy stream reuses its own free";
  ordering.set_implicit_partners(true);  // the second blocking stream comes into sight
  const std::size_t waits_before = ordering.waits_by(kStream3);
  free(second, kStream3);  // never used: ordered after the legacy allocation implicitly
  const std::uintptr_t third = alloc(pool, 1 * MiB, kStream3);
  if (third == first) {
    EXPECT_GT(ordering.waits_by(kStream3), waits_before)
        << "the second blocking stream reused the memory while the first one's kernel may still run";
  }
}

// The same where the legacy stream takes no marker: the free counts as the legacy stream's, whose
// later work the implicit order binds; the blocking stream cannot make the order real, so it does
// not reuse the memory.
TEST_F(ModelCheckFindings, AFreeThatCannotWaitForTheLegacyStreamCountsAsTheLegacyStreams) {
  ordering.set_kind(kStream3, core::StreamKind::blocking);
  ordering.set_implicit_partners(false);
  const std::uintptr_t first = alloc(pool, 1 * MiB, kStream1);
  ordering.enqueue_work(kStream1);
  free(first, kLegacy);
  const std::uintptr_t second = alloc(pool, 1 * MiB, kLegacy);
  ASSERT_EQ(second, first);
  ordering.set_implicit_partners(true);
  ordering.fail_records_on(kLegacy);
  free(second, kStream3);
  EXPECT_EQ(ordering.waits_by(kStream3), 0u);
  EXPECT_NE(alloc(pool, 1 * MiB, kStream3), first) << "reused while the first blocking stream's kernel may still run";
}

}  // namespace
}  // namespace streampool::testing
