// Class 2: a record of an event racing a query, a synchronize, a wait or another record of it on
// another thread.
//
// The event E was recorded on stream A long ago and completed. Stream A frees a block behind work
// that still uses it; then one thread records E on A while another thread queries E, synchronizes
// E, or makes B wait for E, and B allocates the same size. The fake driver holds the racing call
// open (a delay inside the entry point: before the record acts, or after the wait acted), so the
// interleaving is the same on every run. Until the driver's record acted, the driver's answer is
// about the old, completed record; it proves nothing about A's free, and a wait made before the
// record acted does not order B after it. Violation: B gets A's block and B's work runs while A's
// work on it still runs (tracking moved E to the new record before the driver did, or a wait
// merged what E meant after the wait had already acted on the old record).
#include <thread>

#include "safety_support.hpp"

namespace safety {
namespace {

constexpr unsigned kWindowUs = 60000;  // how long the fake driver holds the racing call
constexpr int kSettleMs = 5;           // for a call held after it acted: time to act first

class RecordRace : public SafetyTest {
 protected:
  void SetUp() override {
    SafetyTest::SetUp();
    ASSERT_EQ(SP(cuEventCreate)(&event, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuEventRecord)(event, a), CUDA_SUCCESS);  // the old record
    ASSERT_EQ(SP(cuEventSynchronize)(event), CUDA_SUCCESS);
  }
  void TearDown() override {
    clear_delays();
    SP(cuCtxSynchronize)();
    if (event != nullptr) SP(cuEventDestroy_v2)(event);
    SafetyTest::TearDown();
  }

  // Runs `racing` on another thread; once that call is inside the fake driver's entry point
  // `held` (which holds it open), runs `inside` on this thread; then waits for the racing call.
  template <class Racing, class Inside>
  void race(const char* held, Racing racing, Inside inside) {
    const unsigned long long calls_before = fake_calls(held);
    std::thread other([&] {
      SP(cuCtxSetCurrent)(primary);
      racing();
    });
    wait_for_call(held, calls_before);
    sleep_ms(kSettleMs);
    inside();
    other.join();
    clear_delays();
  }

  CUevent event = nullptr;
};

TEST_F(RecordRace, QueriesDuringARecordProveNothingAboutTheNewRecord) {
  ASSERT_NO_FATAL_FAILURE(give_up_block(old_owner, pool, a));
  set_delay_before("cuEventRecord", kWindowUs);

  race("cuEventRecord", [&] { SP(cuEventRecord)(event, a); }, [&] { SP(cuEventQuery)(event); });  // the old record's answer
  ASSERT_NO_FATAL_FAILURE(take_block(new_owner, old_owner, pool, b));

  expect_safe(a, b);
}

TEST_F(RecordRace, SpinningQueriesAcrossARecordProveNothingAboutTheNewRecord) {
  ASSERT_NO_FATAL_FAILURE(give_up_block(old_owner, pool, a));
  set_delay_before("cuEventRecord", kWindowUs);
  std::atomic<bool> recorded{false};

  std::thread recorder([&] {
    SP(cuCtxSetCurrent)(primary);
    SP(cuEventRecord)(event, a);
    recorded = true;
  });
  while (!recorded.load()) {
    SP(cuEventQuery)(event);
  }
  recorder.join();
  clear_delays();
  ASSERT_NO_FATAL_FAILURE(take_block(new_owner, old_owner, pool, b));

  expect_safe(a, b);
}

TEST_F(RecordRace, SynchronizeDuringARecordProvesNothingAboutTheNewRecord) {
  ASSERT_NO_FATAL_FAILURE(give_up_block(old_owner, pool, a));
  set_delay_before("cuEventRecord", kWindowUs);

  race("cuEventRecord", [&] { SP(cuEventRecord)(event, a); }, [&] { SP(cuEventSynchronize)(event); });
  ASSERT_NO_FATAL_FAILURE(take_block(new_owner, old_owner, pool, b));

  expect_safe(a, b);
}

TEST_F(RecordRace, AWaitMadeBeforeTheRecordActedDoesNotOrderTheWaiterAfterTheFree) {
  ASSERT_NO_FATAL_FAILURE(give_up_block(old_owner, pool, a));
  set_delay_before("cuEventRecord", kWindowUs);

  race("cuEventRecord", [&] { SP(cuEventRecord)(event, a); },
       [&] {
         ASSERT_EQ(SP(cuStreamWaitEvent)(b, event, 0), CUDA_SUCCESS);  // on the old record
         take_block(new_owner, old_owner, pool, b);
       });

  expect_safe(a, b);
}

// The wait acts on the old record, then the record happens (entirely) before the wait returns.
TEST_F(RecordRace, ARecordMadeWhileAWaitReturnsDoesNotOrderTheWaiterAfterTheFree) {
  ASSERT_NO_FATAL_FAILURE(give_up_block(old_owner, pool, a));
  set_delay_after("cuStreamWaitEvent", kWindowUs);

  race("cuStreamWaitEvent", [&] { SP(cuStreamWaitEvent)(b, event, 0); }, [&] { SP(cuEventRecord)(event, a); });
  ASSERT_NO_FATAL_FAILURE(take_block(new_owner, old_owner, pool, b));

  expect_safe(a, b);
}

// Two records of one event at once: the one on an idle stream C starts first and acts last, the
// one on A (behind the free) starts later and acts first. The driver's E ends as C's record.
TEST_F(RecordRace, TwoRecordsOfOneEventAtOnceLeaveTheTrackingOfTheRecordThatActedLast) {
  CUstream idle = nullptr;
  ASSERT_EQ(SP(cuStreamCreate)(&idle, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(give_up_block(old_owner, pool, a));
  set_delay_before("cuEventRecordWithFlags", kWindowUs);

  race("cuEventRecordWithFlags", [&] { SP(cuEventRecordWithFlags)(event, idle, CU_EVENT_RECORD_DEFAULT); },
       [&] { SP(cuEventRecord)(event, a); });
  ASSERT_EQ(SP(cuStreamSynchronize)(idle), CUDA_SUCCESS);
  SP(cuEventQuery)(event);  // the driver answers about whichever record acted last
  ASSERT_NO_FATAL_FAILURE(take_block(new_owner, old_owner, pool, b));

  expect_safe(a, b);
  SP(cuStreamDestroy_v2)(idle);
}

}  // namespace
}  // namespace safety
