// The tracking's rules against the driver's own order of calls (core/happens_before.hpp): a record
// counts only once the real call succeeded, a query or synchronize counts only for the record it
// was about, implicit legacy-stream order becomes a real wait, events recorded out of sight prove
// nothing, and a stream that ended unseen leaves nothing behind under its key.
#include "engine_fixture.hpp"

namespace streampool::testing {
namespace {

using core::PoolAttribute;
using core::Status;
using core::StreamKind;

class Tracking : public EngineTest {
 protected:
  static constexpr core::EventKey kEvent = 0xE10;

  core::Pool* pool_with_max_threshold() {
    core::Pool* pool = make_pool();
    EXPECT_EQ(set_attribute<std::uint64_t>(pool, PoolAttribute::release_threshold, UINT64_MAX), Status::success);
    return pool;
  }
  std::uintptr_t pending_free(core::Pool* pool, std::size_t bytes, core::StreamKey stream) {
    const std::uintptr_t block = alloc(pool, bytes, stream);
    ordering.enqueue_work(stream);
    free(block, stream);
    return block;
  }
  // A block whose last use (a kernel on the blocking stream s1) precedes its free on the legacy
  // stream only through the implicit order; s2 is non-blocking.
  std::uintptr_t legacy_free_after_blocking_use(core::Pool* pool) {
    ordering.set_kind(kLegacy, StreamKind::legacy_default);
    ordering.set_kind(kStream2, StreamKind::non_blocking);
    const std::uintptr_t block = alloc(pool, 32 * MiB, kLegacy);
    ordering.enqueue_work(kStream1);
    free(block, kLegacy);
    return block;
  }
  // `event` was recorded on `stream` before anything pending there, and that record completed.
  void old_completed_record(core::EventKey event, core::StreamKey stream) {
    engine.event_recorded(event, stream);
    engine.commit(engine.ticket_for_event(event, false));
  }
};

TEST_F(Tracking, ARecordTheDriverRejectedLeavesTheEventAsItWas) {
  core::Pool* pool = pool_with_max_threshold();
  old_completed_record(kEvent, kStream1);
  const std::uintptr_t block = pending_free(pool, 32 * MiB, kStream1);
  EXPECT_FALSE(engine.record_event(kEvent, kStream1, [] { return false; }));
  engine.stream_waited(kStream2, kEvent);                  // orders s2 after the old record only
  engine.commit(engine.ticket_for_event(kEvent, true));    // the old record is complete
  EXPECT_NE(alloc(pool, 32 * MiB, kStream2), block);
}

TEST_F(Tracking, AQueryThatARecordOvertookProvesNothing) {
  core::Pool* pool = pool_with_max_threshold();
  old_completed_record(kEvent, kStream1);
  const std::uintptr_t block = pending_free(pool, 32 * MiB, kStream1);
  core::SyncTicket query = engine.ticket_for_event(kEvent, false);  // a query begins
  engine.event_recorded(kEvent, kStream1);                          // another thread records
  engine.commit(query);  // the driver said "complete": about which record is unknown
  EXPECT_NE(alloc(pool, 32 * MiB, kStream2), block);
}

TEST_F(Tracking, AQueryAboutTheSameRecordStillCounts) {
  core::Pool* pool = pool_with_max_threshold();
  const std::uintptr_t block = pending_free(pool, 32 * MiB, kStream1);
  engine.event_recorded(kEvent, kStream1);
  core::SyncTicket query = engine.ticket_for_event(kEvent, false);
  ordering.complete(kStream1);
  engine.commit(query);
  EXPECT_EQ(alloc(pool, 32 * MiB, kStream2), block);
}

TEST_F(Tracking, AWaitTheDriverRejectedOrdersNothing) {
  core::Pool* pool = pool_with_max_threshold();
  const std::uintptr_t block = pending_free(pool, 32 * MiB, kStream1);
  engine.event_recorded(kEvent, kStream1);
  EXPECT_FALSE(engine.wait_event(kStream2, kEvent, [] { return false; }));
  EXPECT_NE(alloc(pool, 32 * MiB, kStream2), block);
}

TEST_F(Tracking, AnEventRecordedOutOfSightProvesNothingUntilItIsCreatedAgain) {
  core::Pool* pool = pool_with_max_threshold();
  const std::uintptr_t block = pending_free(pool, 32 * MiB, kStream1);
  engine.event_recorded(kEvent, kStream1);
  engine.event_untracked(kEvent);   // e.g. a graph's event-record node names it
  engine.event_recorded(kEvent, kStream1);  // a later record the hooks see does not restore it
  engine.stream_waited(kStream2, kEvent);
  engine.commit(engine.ticket_for_event(kEvent, false));
  EXPECT_NE(alloc(pool, 32 * MiB, kStream2), block);
  engine.event_created(kEvent);  // the handle now names a new event
  engine.event_recorded(kEvent, kStream1);
  engine.stream_waited(kStream2, kEvent);
  EXPECT_EQ(alloc(pool, 32 * MiB, kStream2), block);
}

TEST_F(Tracking, ReuseThroughTheLegacyStreamsImplicitOrderPutsARealWaitIntoTheAllocatingStream) {
  core::Pool* pool = pool_with_max_threshold();
  ordering.set_kind(kLegacy, StreamKind::legacy_default);
  const std::uintptr_t block = pending_free(pool, 32 * MiB, kLegacy);
  EXPECT_EQ(alloc(pool, 32 * MiB, kStream1), block);
  EXPECT_EQ(ordering.waits_by(kStream1), 1u);  // so a synchronize of s1 waits for the legacy kernel
}

// The implicit order reaches one level further, through what its partner waited for: a blocking
// stream's later work follows everything the legacy stream's queued work follows, its waits on
// other streams included, and the other way round. The reuse still becomes one real wait, on a
// marker of the partner.
// `waiter` waits for a free on a non-blocking stream; `allocator`, its partner in the legacy
// stream's implicit order, reuses the block behind one real wait of its own.
class ImplicitOrderPartners : public Tracking {
 protected:
  void expect_reuse_through_partner(core::StreamKey waiter, core::StreamKey allocator) {
    core::Pool* pool = pool_with_max_threshold();
    ordering.set_kind(kLegacy, StreamKind::legacy_default);
    ordering.set_kind(kStream2, StreamKind::non_blocking);
    const std::uintptr_t block = pending_free(pool, 32 * MiB, kStream2);
    engine.event_recorded(kEvent, kStream2);
    engine.stream_waited(waiter, kEvent);
    EXPECT_EQ(alloc(pool, 32 * MiB, allocator), block);
    EXPECT_EQ(ordering.waits_by(allocator), 1u);
  }
};

TEST_F(ImplicitOrderPartners, ABlockingStreamReusesAFreeTheLegacyStreamWaitedFor) {
  expect_reuse_through_partner(kLegacy, kStream1);
}

TEST_F(ImplicitOrderPartners, TheLegacyStreamReusesAFreeABlockingStreamWaitedFor) {
  expect_reuse_through_partner(kStream1, kLegacy);
}

// The legacy stream stays its group's partner when another of the group's streams ends.
TEST_F(Tracking, AfterABlockingStreamEndsAnotherStillReusesALegacyFreeThroughTheImplicitOrder) {
  core::Pool* pool = pool_with_max_threshold();
  ordering.set_kind(kLegacy, StreamKind::legacy_default);
  ordering.set_kind(kStream3, StreamKind::blocking);
  engine.ticket_for_stream(kStream3, false);  // the engine knows the stream that ends
  const std::uintptr_t block = pending_free(pool, 32 * MiB, kLegacy);
  engine.stream_destroyed(kStream3);
  EXPECT_EQ(alloc(pool, 32 * MiB, kStream1), block);
  EXPECT_EQ(ordering.waits_by(kStream1), 1u);
}

TEST_F(Tracking, TheLegacyStreamReusingABlockingStreamsFreeWaitsForIt) {
  core::Pool* pool = pool_with_max_threshold();
  ordering.set_kind(kLegacy, StreamKind::legacy_default);
  const std::uintptr_t block = pending_free(pool, 32 * MiB, kStream1);
  EXPECT_EQ(alloc(pool, 32 * MiB, kLegacy), block);
  EXPECT_EQ(ordering.waits_by(kLegacy), 1u);
}

// A block the legacy stream allocated, freed on a blocking stream, is ordered after the legacy
// stream's earlier frees only while they may still run: once a context synchronize proved them
// complete, the free needs no wait.
TEST_F(Tracking, ABlockingStreamsFreeOfALegacyBlockWaitsForNothingOnceTheLegacyFreesAreKnownComplete) {
  core::Pool* pool = pool_with_max_threshold();
  ordering.set_kind(kLegacy, StreamKind::legacy_default);
  const std::uintptr_t block = alloc(pool, 1 * MiB, kLegacy);
  free(alloc(pool, 1 * MiB, kLegacy), kLegacy);  // a legacy free that no marker follows
  const core::SyncTicket context = engine.ticket_for_group(0, true);
  ordering.complete_all();
  engine.commit(context);

  free(block, kStream1);
  EXPECT_EQ(ordering.waits_by(kStream1), 0u);
  EXPECT_EQ(ordering.records(), 0u);
}

TEST_F(Tracking, ImplicitOrderThatCannotBeMadeRealIsNotUsed) {
  core::Pool* pool = pool_with_max_threshold();
  ordering.set_kind(kLegacy, StreamKind::legacy_default);
  ordering.fail_records_on(kLegacy);  // no marker can be recorded there
  const std::uintptr_t block = pending_free(pool, 32 * MiB, kLegacy);
  EXPECT_NE(alloc(pool, 32 * MiB, kStream1), block);
  EXPECT_EQ(ordering.waits_by(kStream1), 0u);
}

// A free on the legacy stream follows a blocking stream's kernel only through the implicit order:
// the legacy stream's synchronize proves it only if something in the legacy stream waits for
// that kernel, which streampool's marker does (a marker, like any legacy-stream work, waits for
// the blocking streams' earlier work).
TEST_F(Tracking, ASynchronizeOfTheLegacyStreamProvesItsImplicitlyOrderedFreeThroughAMarkerInIt) {
  core::Pool* pool = pool_with_max_threshold();
  const std::uintptr_t block = legacy_free_after_blocking_use(pool);
  const std::size_t records = ordering.records();
  synchronize(kLegacy);
  EXPECT_EQ(ordering.records(), records + 1);  // the marker the synchronize waited for
  EXPECT_EQ(alloc(pool, 32 * MiB, kStream2), block);
}

TEST_F(Tracking, AQueryOfTheLegacyStreamDoesNotProveAnImplicitlyOrderedFree) {
  core::Pool* pool = pool_with_max_threshold();
  const std::uintptr_t block = legacy_free_after_blocking_use(pool);
  const std::size_t records = ordering.records();
  core::SyncTicket query = engine.ticket_for_stream(kLegacy, /*releases=*/false);
  ordering.complete(kLegacy);  // the legacy stream has nothing queued: the query says complete
  engine.commit(query);
  EXPECT_EQ(ordering.records(), records);  // a query enqueues nothing
  EXPECT_NE(alloc(pool, 32 * MiB, kStream2), block);
}

TEST_F(Tracking, ASynchronizeOfABlockingStreamProvesItsFreeThroughAMarkerInIt) {
  core::Pool* pool = pool_with_max_threshold();
  ordering.set_kind(kStream2, StreamKind::non_blocking);
  const std::uintptr_t block = alloc(pool, 32 * MiB, kStream1);  // the legacy stream may use it unseen
  free(block, kStream1);
  const std::size_t records = ordering.records();
  synchronize(kStream1);
  EXPECT_EQ(ordering.records(), records + 1);
  EXPECT_EQ(alloc(pool, 32 * MiB, kStream2), block);
}

TEST_F(Tracking, ANonBlockingStreamsSynchronizeNeedsNoMarker) {
  core::Pool* pool = pool_with_max_threshold();
  ordering.set_kind(kStream1, StreamKind::non_blocking);
  ordering.set_kind(kStream2, StreamKind::non_blocking);
  const std::uintptr_t block = pending_free(pool, 32 * MiB, kStream1);
  const std::size_t records = ordering.records();
  synchronize(kStream1);
  EXPECT_EQ(ordering.records(), records);
  EXPECT_EQ(alloc(pool, 32 * MiB, kStream2), block);
}

TEST_F(Tracking, AnExplicitEventOrderNeedsNoWaitOfStreampools) {
  core::Pool* pool = pool_with_max_threshold();
  const std::uintptr_t block = pending_free(pool, 32 * MiB, kStream1);
  event_wait(kStream1, kStream2);
  EXPECT_EQ(alloc(pool, 32 * MiB, kStream2), block);
  EXPECT_EQ(ordering.waits(), 0u);
}

TEST_F(Tracking, StrictReuseAddsAWaitEvenWhereTheProgramsEventOrdersTheFree) {
  engine.set_strict_reuse(true);
  core::Pool* pool = pool_with_max_threshold();
  const std::uintptr_t block = pending_free(pool, 32 * MiB, kStream1);
  event_wait(kStream1, kStream2);
  EXPECT_EQ(alloc(pool, 32 * MiB, kStream2), block);
  EXPECT_EQ(ordering.waits_by(kStream2), 1u);
}

TEST_F(Tracking, StrictReuseNeedsNoWaitForAFreeTheHostSawComplete) {
  engine.set_strict_reuse(true);
  core::Pool* pool = pool_with_max_threshold();
  const std::uintptr_t block = pending_free(pool, 32 * MiB, kStream1);
  synchronize(kStream1);
  EXPECT_EQ(alloc(pool, 32 * MiB, kStream2), block);
  EXPECT_EQ(ordering.waits(), 0u);
}

TEST_F(Tracking, AStreamCreatedUnderTheKeyOfOneThatEndedUnseenStartsFresh) {
  core::Pool* pool = pool_with_max_threshold();
  engine.event_recorded(kEvent, kStream1);
  engine.stream_waited(kStream2, kEvent);  // s2 knows s1 up to here
  engine.stream_ended(kStream2);           // s2 ended where the hooks could not see it
  const std::uintptr_t block = pending_free(pool, 32 * MiB, kStream1);
  engine.event_recorded(0xE11, kStream1);
  engine.stream_waited(kStream3, 0xE11);
  // The new stream under s2's key knows nothing of s1: it must not reuse s1's pending free.
  EXPECT_NE(alloc(pool, 32 * MiB, kStream2), block);
}

TEST_F(Tracking, AContextSynchronizeCoversOnlyItsOwnStreams) {
  core::Pool* pool = pool_with_max_threshold();
  ordering.set_kind(kStream1, StreamKind::blocking, /*group=*/2);
  ordering.set_kind(kStream2, StreamKind::blocking, /*group=*/2);
  ordering.set_kind(kStream3, StreamKind::blocking, /*group=*/1);
  const std::uintptr_t block = pending_free(pool, 32 * MiB, kStream1);
  engine.commit(engine.ticket_for_group(1, true));  // the other context synchronised
  EXPECT_NE(alloc(pool, 32 * MiB, kStream2), block);
  core::SyncTicket own = engine.ticket_for_group(2, true);
  ordering.complete(kStream1);
  engine.commit(own);
  EXPECT_EQ(alloc(pool, 32 * MiB, kStream2), block);
}

// A context's synchronize completes its streams and so everything they waited for, in other
// contexts too: a free on another context's stream that one of them waited for is then reusable.
TEST_F(Tracking, AContextSynchronizeCompletesWhatItsStreamsWaitedForInAnotherContext) {
  core::Pool* pool = pool_with_max_threshold();
  ordering.set_kind(kStream1, StreamKind::non_blocking, /*group=*/1);
  ordering.set_kind(kStream2, StreamKind::non_blocking, /*group=*/2);
  ordering.set_kind(kStream3, StreamKind::non_blocking, /*group=*/2);
  const std::uintptr_t block = pending_free(pool, 32 * MiB, kStream1);
  engine.event_recorded(kEvent, kStream1);
  engine.stream_waited(kStream2, kEvent);  // context 2's stream waits for context 1's free
  core::SyncTicket synchronized = engine.ticket_for_group(2, true);
  ordering.complete(kStream2);
  engine.commit(synchronized);
  EXPECT_EQ(alloc(pool, 32 * MiB, kStream3), block);
  EXPECT_EQ(ordering.waits_by(kStream3), 0u);
}

}  // namespace
}  // namespace streampool::testing

namespace streampool::testing {
namespace {

class StreamLifetimes : public EngineTest {};

TEST_F(StreamLifetimes, EndedStreamsWhoseFreesCompletedLeaveNoSlotBehind) {
  core::Pool* pool = make_pool();
  for (core::StreamKey key = 0x10000; key < 0x10000 + 1000 * 0x10; key += 0x10) {
    free(alloc(pool, 1 * MiB, key), key);
    engine.stream_destroyed(key);  // a marker covers its frees
    ordering.complete_all();       // its work ends
  }
  EXPECT_LE(engine.stream_slots(), 2u);
}

// A context's end: one ticket for its streams, taken before the end and committed once the driver
// destroyed the context, then its streams end with no marker.
TEST_F(StreamLifetimes, StreamsEndedWithTheirContextAfterItsTicketLeaveNoSlotBehind) {
  core::Pool* pool = make_pool();
  for (core::StreamKey key = 0x10000; key < 0x10000 + 100 * 0x10; key += 0x10) {
    ordering.set_kind(key, StreamKind::blocking, /*group=*/key);
    free(alloc(pool, 1 * MiB, key), key);
    const core::SyncTicket context_end = engine.ticket_for_group(key, true);
    ordering.complete_all();  // the destroy waited for the context's work
    engine.commit(context_end);
    engine.stream_ended(key);
  }
  EXPECT_LE(engine.stream_slots(), 2u);
}

// A stream that ends unseen (its context ended, its handle was reused) takes its marker's answer
// with it: read as it ends, it proves the frees it covers; a marker still pending is given back.
TEST_F(StreamLifetimes, AStreamEndedUnseenAfterItsMarkerCompletedLeavesItsFreeReusable) {
  core::Pool* pool = make_pool();
  ASSERT_EQ(set_attribute<std::uint64_t>(pool, PoolAttribute::release_threshold, UINT64_MAX), Status::success);
  const std::uintptr_t block = alloc(pool, 32 * MiB, kStream1);
  ordering.enqueue_work(kStream1);
  free(block, kStream1);
  EXPECT_NE(alloc(pool, 32 * MiB, kStream2), block);  // pending: grows, records a marker on s1
  ASSERT_EQ(ordering.records(), 1u);
  ordering.complete(kStream1);
  engine.stream_ended(kStream1);
  EXPECT_EQ(alloc(pool, 32 * MiB, kStream2), block);
}

TEST_F(StreamLifetimes, AStreamEndedUnseenGivesBackItsPendingMarker) {
  core::Pool* pool = make_pool();
  const std::uintptr_t block = alloc(pool, 32 * MiB, kStream1);
  ordering.enqueue_work(kStream1);
  free(block, kStream1);
  EXPECT_NE(alloc(pool, 32 * MiB, kStream2), block);  // records a marker on s1
  ASSERT_EQ(ordering.live_markers(), 1u);
  engine.stream_ended(kStream1);
  EXPECT_EQ(ordering.live_markers(), 0u);
}

TEST_F(StreamLifetimes, AnEndedStreamWithPendingFreesKeepsItsSlotUntilTheyComplete) {
  core::Pool* pool = make_pool();
  const std::uintptr_t block = alloc(pool, 32 * MiB, kStream1);
  ordering.enqueue_work(kStream1);
  free(block, kStream1);
  engine.stream_destroyed(kStream1);
  (void)alloc(pool, 1 * MiB, kStream2);  // a new stream while s1's free is pending
  EXPECT_EQ(engine.stream_slots(), 2u);
  EXPECT_NE(alloc(pool, 32 * MiB, kStream2), block);  // and s1's free is still not s2's
}

TEST_F(StreamLifetimes, AReclaimedSlotsNewStreamsFreesAreNotTakenForTheOldOnes) {
  core::Pool* pool = make_pool();
  free(alloc(pool, 1 * MiB, kStream1), kStream1);
  engine.stream_destroyed(kStream1);
  ordering.complete_all();
  const std::uintptr_t block = alloc(pool, 32 * MiB, kStream2);  // s2 takes s1's slot
  ASSERT_EQ(engine.stream_slots(), 1u);
  ordering.enqueue_work(kStream2);
  free(block, kStream2);
  EXPECT_NE(alloc(pool, 32 * MiB, kStream3), block);  // s2's free is pending: not complete
}

}  // namespace

// The driver answers a query of a blocking stream from the stream's own work, even while an event
// record in it still waits for the legacy stream (measured on driver 580); so a query of a blocking
// stream that freed records a marker and is not ready until the marker is (the hook answers
// CUDA_ERROR_NOT_READY meanwhile). A non-blocking stream's query needs neither.
TEST_F(Tracking, AQueryOfABlockingStreamThatFreedIsNotReadyUntilItsMarkerCompletes) {
  core::Pool* pool = pool_with_max_threshold();
  ordering.set_kind(kStream1, StreamKind::blocking);
  ordering.set_kind(kStream2, StreamKind::non_blocking);
  pending_free(pool, 1 * MiB, kStream1);
  pending_free(pool, 1 * MiB, kStream2);
  const std::size_t records = ordering.records();

  engine.ticket_for_stream(kStream1, /*releases=*/false);
  engine.ticket_for_stream(kStream2, /*releases=*/false);

  EXPECT_EQ(ordering.records(), records + 1) << "one marker, in the blocking stream";
  EXPECT_TRUE(engine.marker_pending(kStream1));
  EXPECT_FALSE(engine.marker_pending(kStream2));
  ordering.complete(kStream1);
  EXPECT_FALSE(engine.marker_pending(kStream1));
}

}  // namespace streampool::testing
