// An event's query or synchronize races with records of the same event on other threads: its
// ticket counts only for the record it was about (core/happens_before.hpp). These are the
// interleavings the model check reaches only rarely: a record of the event that covers a
// pending free, a ticket, another record on another stream, the driver's answer about that one.
#include <chrono>
#include <future>

#include "engine_fixture.hpp"

namespace streampool::testing {
namespace {

using core::PoolAttribute;
using core::Status;
using core::StreamKind;

class EventTicketRace : public EngineTest {
 protected:
  static constexpr core::EventKey kEvent = 0xE10;

  void SetUp() override {
    ordering.set_kind(kStream1, StreamKind::non_blocking);
    ordering.set_kind(kStream2, StreamKind::non_blocking);
    ordering.set_kind(kStream3, StreamKind::non_blocking);
    pool = make_pool();
    EXPECT_EQ(set_attribute<std::uint64_t>(pool, PoolAttribute::release_threshold, UINT64_MAX), Status::success);
  }
  // A block freed on stream 1 while a kernel using it still runs, and a record of the event
  // after the free: the event's tracking covers the free.
  std::uintptr_t free_covered_by_the_event() {
    const std::uintptr_t block = alloc(pool, 1 * MiB, kStream1);
    ordering.enqueue_work(kStream1);
    free(block, kStream1);
    engine.event_recorded(kEvent, kStream1);
    return block;
  }

  core::Pool* pool = nullptr;
};

TEST_F(EventTicketRace, ASynchronizeAnsweringAboutALaterRecordOnAnotherStreamProvesNothing) {
  const std::uintptr_t block = free_covered_by_the_event();
  const core::SyncTicket ticket = engine.ticket_for_event(kEvent, true);  // cuEventSynchronize begins

  engine.event_recorded(kEvent, kStream2);  // another thread records the event on stream 2
  ordering.complete(kStream2);              // the driver's synchronize waits for that record only
  engine.commit(ticket);

  EXPECT_NE(alloc(pool, 1 * MiB, kStream3), block) << "reused while the kernel on stream 1 may still run";
}

// The record's real call has happened (the driver now answers about it) but its tracking has
// not: a commit made then must wait for the tracking, and then count for nothing.
TEST_F(EventTicketRace, ACommitWhileARecordIsInTheDriverWaitsForItsTracking) {
  const std::uintptr_t block = free_covered_by_the_event();
  const core::SyncTicket ticket = engine.ticket_for_event(kEvent, true);
  std::promise<void> in_driver;
  std::promise<void> release;
  std::shared_future<void> let_go = release.get_future().share();
  auto recorder = std::async(std::launch::async, [&] {
    engine.record_event(kEvent, kStream2, [&] {
      in_driver.set_value();  // the driver has recorded the event on stream 2
      let_go.wait();
      return true;
    });
  });
  in_driver.get_future().wait();

  auto committer = std::async(std::launch::async, [&] {
    ordering.complete(kStream2);  // the synchronize returns: it waited for the new record
    engine.commit(ticket);
  });
  const bool committed_during_the_record =
      committer.wait_for(std::chrono::milliseconds(200)) == std::future_status::ready;
  release.set_value();
  recorder.get();
  committer.get();

  EXPECT_FALSE(committed_during_the_record) << "the commit did not wait for the event's lock";
  EXPECT_NE(alloc(pool, 1 * MiB, kStream3), block) << "reused while the kernel on stream 1 may still run";
}

}  // namespace
}  // namespace streampool::testing
