// Reuse semantics: driver-behaviour.md, "Reuse semantics" (threshold = max in every scenario).
#include "engine_fixture.hpp"

namespace streampool::testing {
namespace {

using core::PoolAttribute;
using core::Status;
using core::StreamKind;

class Reuse : public EngineTest {
 protected:
  core::Pool* pool_with_max_threshold(core::PoolProps props = {}) {
    core::Pool* pool = make_pool(props);
    EXPECT_EQ(set_attribute<std::uint64_t>(pool, PoolAttribute::release_threshold, UINT64_MAX), Status::success);
    return pool;
  }
  // A free on s1 still pending behind a long kernel.
  std::uintptr_t pending_free_on_stream1(core::Pool* pool, std::size_t bytes) {
    const std::uintptr_t block = alloc(pool, bytes, kStream1);
    ordering.enqueue_work(kStream1);
    free(block, kStream1);
    return block;
  }
};

TEST_F(Reuse, FreedBlockIsReusedOnTheSameStreamAtOnce) {
  core::Pool* pool = pool_with_max_threshold();
  const std::uintptr_t block = pending_free_on_stream1(pool, 1 * MiB);
  EXPECT_EQ(alloc(pool, 1 * MiB, kStream1), block);
}

TEST_F(Reuse, SameStreamReuseRecordsNoMarkerAndQueriesNothing) {
  core::Pool* pool = pool_with_max_threshold();
  for (int i = 0; i < 100; ++i) free(alloc(pool, 1 * MiB, kStream1), kStream1);
  EXPECT_EQ(ordering.records(), 0u);
  EXPECT_EQ(ordering.queries(), 0u);
}

TEST_F(Reuse, ASmallRequestIsCarvedFromTheStartOfALargerFreedBlock) {
  core::Pool* pool = pool_with_max_threshold();
  const std::uintptr_t big = pending_free_on_stream1(pool, 32 * MiB);
  EXPECT_EQ(alloc(pool, 1 * MiB, kStream1), big);
}

TEST_F(Reuse, AdjacentFreesCoalesce) {
  core::Pool* pool = pool_with_max_threshold();
  const std::uintptr_t first = alloc(pool, 1 * MiB, kStream1);
  const std::uintptr_t second = alloc(pool, 1 * MiB, kStream1);
  ASSERT_EQ(second, first + 1 * MiB);
  alloc(pool, 30 * MiB, kStream1);  // the rest of the chunk stays live
  free(first, kStream1);
  free(second, kStream1);
  EXPECT_EQ(alloc(pool, 2 * MiB, kStream1), first);
  EXPECT_EQ(reserved(pool), 32 * MiB);
}

TEST_F(Reuse, APendingFreeOnAnotherStreamIsNotReusedWhileThePoolCanGrow) {
  core::Pool* pool = pool_with_max_threshold();
  const std::uintptr_t block = pending_free_on_stream1(pool, 32 * MiB);
  EXPECT_NE(alloc(pool, 32 * MiB, kStream2), block);
  EXPECT_EQ(ordering.waits(), 0u);  // no dependency inserted while growing is possible
}

TEST_F(Reuse, AnEventWaitLetsAnotherStreamReuse) {
  core::Pool* pool = pool_with_max_threshold();
  const std::uintptr_t block = pending_free_on_stream1(pool, 32 * MiB);
  event_wait(kStream1, kStream2);
  EXPECT_EQ(alloc(pool, 32 * MiB, kStream2), block);
  EXPECT_EQ(ordering.waits(), 0u);
}

TEST_F(Reuse, AnEventRecordedBeforeTheFreeDoesNotCoverIt) {
  core::Pool* pool = pool_with_max_threshold();
  const std::uintptr_t block = alloc(pool, 32 * MiB, kStream1);
  ordering.enqueue_work(kStream1);
  engine.event_recorded(0xE1, kStream1);
  free(block, kStream1);
  engine.stream_waited(kStream2, 0xE1);
  EXPECT_NE(alloc(pool, 32 * MiB, kStream2), block);
}

TEST_F(Reuse, EventOrderIsTransitive) {
  core::Pool* pool = pool_with_max_threshold();
  const std::uintptr_t block = pending_free_on_stream1(pool, 32 * MiB);
  event_wait(kStream1, kStream2, 0xE1);
  event_wait(kStream2, kStream3, 0xE2);
  EXPECT_EQ(alloc(pool, 32 * MiB, kStream3), block);
}

TEST_F(Reuse, WithoutFollowEventDependenciesAnEventDoesNotAllowReuse) {
  core::Pool* pool = pool_with_max_threshold();
  ASSERT_EQ(set_attribute<int>(pool, PoolAttribute::reuse_follow_event_dependencies, 0), Status::success);
  const std::uintptr_t block = pending_free_on_stream1(pool, 32 * MiB);
  event_wait(kStream1, kStream2);
  EXPECT_NE(alloc(pool, 32 * MiB, kStream2), block);
}

TEST_F(Reuse, AHostSynchronizedFreeIsReusedByAnotherStream) {
  core::Pool* pool = pool_with_max_threshold();
  const std::uintptr_t block = pending_free_on_stream1(pool, 32 * MiB);
  synchronize(kStream1);
  EXPECT_EQ(alloc(pool, 32 * MiB, kStream2), block);
}

TEST_F(Reuse, AHostSynchronizedFreeIsReusedEvenWithoutOpportunisticReuse) {
  core::Pool* pool = pool_with_max_threshold();
  ASSERT_EQ(set_attribute<int>(pool, PoolAttribute::reuse_allow_opportunistic, 0), Status::success);
  const std::uintptr_t block = pending_free_on_stream1(pool, 32 * MiB);
  synchronize(kStream1);
  EXPECT_EQ(alloc(pool, 32 * MiB, kStream2), block);
}

TEST_F(Reuse, ASuccessfulQueryOrdersTheFreeBeforeLaterWork) {
  core::Pool* pool = pool_with_max_threshold();
  ordering.set_kind(kStream1, core::StreamKind::non_blocking);  // no implicit order (see Tracking)
  const std::uintptr_t block = pending_free_on_stream1(pool, 32 * MiB);
  auto ticket = engine.ticket_for_stream(kStream1, /*releases=*/false);
  ordering.complete(kStream1);
  engine.commit(ticket);
  EXPECT_EQ(alloc(pool, 32 * MiB, kStream2), block);
}

TEST_F(Reuse, ACompletedFreeIsReusedOpportunisticallyThroughOneMarker) {
  core::Pool* pool = pool_with_max_threshold();
  const std::uintptr_t block = pending_free_on_stream1(pool, 32 * MiB);
  EXPECT_NE(alloc(pool, 32 * MiB, kStream2), block);  // pending: grows, records a marker on s1
  EXPECT_EQ(ordering.records(), 1u);
  ordering.complete(kStream1);                         // the kernel ends; nobody synchronises
  EXPECT_EQ(alloc(pool, 32 * MiB, kStream2), block);   // the marker says the free is done
  EXPECT_EQ(ordering.waits(), 0u);
}

TEST_F(Reuse, WithoutOpportunisticReuseACompletedFreeIsNotReused) {
  core::Pool* pool = pool_with_max_threshold();
  ASSERT_EQ(set_attribute<int>(pool, PoolAttribute::reuse_allow_opportunistic, 0), Status::success);
  const std::uintptr_t block = pending_free_on_stream1(pool, 32 * MiB);
  alloc(pool, 32 * MiB, kStream2);
  ordering.complete(kStream1);
  EXPECT_NE(alloc(pool, 32 * MiB, kStream2), block);
}

// A destroyed stream can gain no other ordering: once the marker recorded at its destroy
// completed, its frees are as good as synchronised, opportunistic reuse or not.
TEST_F(Reuse, WithoutOpportunisticReuseADestroyedStreamsFreeIsReusedOnceItsLastMarkerCompleted) {
  core::Pool* pool = pool_with_max_threshold();
  ASSERT_EQ(set_attribute<int>(pool, PoolAttribute::reuse_allow_opportunistic, 0), Status::success);
  engine.ticket_for_stream(kStream2, false);  // s2 exists already: no new slot reads s1's marker
  const std::uintptr_t block = pending_free_on_stream1(pool, 32 * MiB);
  engine.stream_destroyed(kStream1);  // records its last marker
  ordering.complete(kStream1);
  EXPECT_EQ(alloc(pool, 32 * MiB, kStream2), block);
}

TEST_F(Reuse, OneMarkerCoversManyFrees) {
  core::Pool* pool = pool_with_max_threshold();
  std::vector<std::uintptr_t> blocks;
  for (int i = 0; i < 64; ++i) blocks.push_back(alloc(pool, 256 * KiB, kStream1));
  ordering.enqueue_work(kStream1);
  for (std::uintptr_t block : blocks) free(block, kStream1);
  for (int i = 0; i < 64; ++i) alloc(pool, 256 * KiB, kStream2);
  EXPECT_LE(ordering.records(), 1u);
}

TEST_F(Reuse, ACappedPoolInsertsADependencyRatherThanFailing) {
  core::PoolProps props;
  props.max_size = 32 * MiB;
  core::Pool* pool = pool_with_max_threshold(props);
  const std::uintptr_t block = pending_free_on_stream1(pool, 32 * MiB);
  EXPECT_EQ(alloc(pool, 32 * MiB, kStream2), block);
  EXPECT_EQ(ordering.waits_by(kStream2), 1u);
  EXPECT_FALSE(ordering.idle(kStream2));  // s2 now waits for s1's kernel (cudaErrorNotReady)
}

// One marker serves every dependency it covers: a second stream reusing a later free of the same
// stream waits on the marker the first dependency recorded, which already covers that free.
TEST_F(Reuse, ACappedPoolsSecondDependencyOnAStreamWaitsOnTheMarkerThatCoversItsFree) {
  core::PoolProps props;
  props.max_size = 32 * MiB;
  core::Pool* pool = pool_with_max_threshold(props);
  const std::uintptr_t first = alloc(pool, 16 * MiB, kStream1);
  const std::uintptr_t second = alloc(pool, 16 * MiB, kStream1);
  ordering.enqueue_work(kStream1);
  free(first, kStream1);
  free(second, kStream1);

  EXPECT_EQ(alloc(pool, 16 * MiB, kStream2), first);
  EXPECT_EQ(ordering.records(), 1u);  // a marker after both frees
  EXPECT_EQ(alloc(pool, 16 * MiB, kStream3), second);
  EXPECT_EQ(ordering.records(), 1u);  // the same marker
  EXPECT_EQ(ordering.waits_by(kStream2), 1u);
  EXPECT_EQ(ordering.waits_by(kStream3), 1u);
}

// FOLLOW_EVENT_DEPENDENCIES governs the program's own events only: the wait streampool inserted
// is a real order in s2 whatever that flag says.
TEST_F(Reuse, ACappedPoolWithoutFollowEventDependenciesStillReusesBehindItsOwnWait) {
  core::PoolProps props;
  props.max_size = 32 * MiB;
  core::Pool* pool = pool_with_max_threshold(props);
  ASSERT_EQ(set_attribute<int>(pool, PoolAttribute::reuse_follow_event_dependencies, 0), Status::success);
  const std::uintptr_t block = pending_free_on_stream1(pool, 32 * MiB);
  std::uintptr_t address = 0;
  EXPECT_EQ(try_alloc(pool, 32 * MiB, kStream2, &address), Status::success);
  EXPECT_EQ(address, block);
  EXPECT_EQ(ordering.waits_by(kStream2), 1u);
}

TEST_F(Reuse, ACappedPoolWithoutInternalDependenciesFails) {
  core::PoolProps props;
  props.max_size = 32 * MiB;
  core::Pool* pool = pool_with_max_threshold(props);
  ASSERT_EQ(set_attribute<int>(pool, PoolAttribute::reuse_allow_internal_dependencies, 0), Status::success);
  pending_free_on_stream1(pool, 32 * MiB);
  std::uintptr_t address = 0;
  EXPECT_EQ(try_alloc(pool, 32 * MiB, kStream2, &address), Status::out_of_memory);
  EXPECT_EQ(ordering.waits(), 0u);
}

TEST_F(Reuse, AFreedBlockBelongsToTheFreeingStream) {
  core::Pool* pool = pool_with_max_threshold();
  const std::uintptr_t block = alloc(pool, 32 * MiB, kStream1);
  ordering.enqueue_work(kStream2);
  free(block, kStream2);
  EXPECT_NE(alloc(pool, 32 * MiB, kStream1), block);
  EXPECT_EQ(alloc(pool, 32 * MiB, kStream2), block);
}

TEST_F(Reuse, TheLegacyStreamReusesWhatBlockingStreamsFreed) {
  core::Pool* pool = pool_with_max_threshold();
  ordering.set_kind(kLegacy, StreamKind::legacy_default);
  const std::uintptr_t block = pending_free_on_stream1(pool, 32 * MiB);
  EXPECT_EQ(alloc(pool, 32 * MiB, kLegacy), block);
}

TEST_F(Reuse, ABlockingStreamReusesWhatTheLegacyStreamFreed) {
  core::Pool* pool = pool_with_max_threshold();
  ordering.set_kind(kLegacy, StreamKind::legacy_default);
  const std::uintptr_t block = alloc(pool, 32 * MiB, kLegacy);
  ordering.enqueue_work(kLegacy);
  free(block, kLegacy);
  EXPECT_EQ(alloc(pool, 32 * MiB, kStream1), block);
}

TEST_F(Reuse, ANonBlockingStreamDoesNotSynchroniseWithTheLegacyStream) {
  core::Pool* pool = pool_with_max_threshold();
  ordering.set_kind(kLegacy, StreamKind::legacy_default);
  ordering.set_kind(kStream3, StreamKind::non_blocking);
  const std::uintptr_t block = alloc(pool, 32 * MiB, kLegacy);
  ordering.enqueue_work(kLegacy);
  free(block, kLegacy);
  EXPECT_NE(alloc(pool, 32 * MiB, kStream3), block);
}

TEST_F(Reuse, TheLegacyStreamOfAnotherGroupDoesNotSynchronise) {
  core::Pool* pool = pool_with_max_threshold();
  ordering.set_kind(kLegacy, StreamKind::legacy_default, /*group=*/1);
  const std::uintptr_t block = pending_free_on_stream1(pool, 32 * MiB);  // s1 is in group 0
  EXPECT_NE(alloc(pool, 32 * MiB, kLegacy), block);
}

TEST_F(Reuse, ADestroyedStreamsFreesAreReusedOnceItsLastWorkEnds) {
  core::Pool* pool = pool_with_max_threshold();
  ASSERT_EQ(set_attribute<int>(pool, PoolAttribute::reuse_allow_opportunistic, 0), Status::success);
  const std::uintptr_t block = pending_free_on_stream1(pool, 32 * MiB);
  engine.stream_destroyed(kStream1);
  ordering.complete(kStream1);
  EXPECT_EQ(alloc(pool, 32 * MiB, kStream2), block);
}

TEST_F(Reuse, AFreeAfterTheHostObservedCompletionIsReusableByAnyStream) {
  core::Pool* pool = pool_with_max_threshold();
  const std::uintptr_t block = alloc(pool, 32 * MiB, kStream1);
  ASSERT_EQ(engine.free_completed(reinterpret_cast<void*>(block)), Status::success);
  EXPECT_EQ(alloc(pool, 32 * MiB, kStream2), block);
  EXPECT_EQ(used(pool), 32 * MiB);
}

TEST_F(Reuse, AStreamKeyReusedAfterDestructionIsANewStream) {
  core::Pool* pool = pool_with_max_threshold();
  const std::uintptr_t block = pending_free_on_stream1(pool, 32 * MiB);
  engine.stream_destroyed(kStream1);
  // A new stream gets the old handle value; the old stream's kernel is still running.
  EXPECT_NE(alloc(pool, 32 * MiB, kStream1), block);
}

}  // namespace
}  // namespace streampool::testing

namespace streampool::testing {
namespace {

// The pattern of a producer stream handing each buffer to a consumer stream that frees it:
// the consumer's frees come back to the producer once a synchronisation or a marker shows
// them complete, so the pool stays small instead of growing every iteration.
TEST_F(Reuse, AProducerConsumerLoopStaysBoundedOnceFreesComplete) {
  core::Pool* pool = make_pool();
  ASSERT_EQ(set_attribute<std::uint64_t>(pool, PoolAttribute::release_threshold, UINT64_MAX), Status::success);
  for (int i = 0; i < 1000; ++i) {
    const std::uintptr_t block = alloc(pool, 1 * MiB, kStream1);
    event_wait(kStream1, kStream2, 0xE0 + static_cast<core::EventKey>(i % 4));
    free(block, kStream2);
    if (i % 64 == 63) synchronize(kStream2);
    ordering.complete_all();  // the GPU keeps up: markers answer "done" on the next query
  }
  EXPECT_LE(reserved(pool), 64 * MiB);
}

}  // namespace
}  // namespace streampool::testing
