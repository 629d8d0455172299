// Class 1: a record the driver rejected must leave the event's tracking as it was.
//
// Each test: the event E had an older record that completed (so the driver answers a query, a
// synchronize or a wait about that old record at once). Stream A frees a block behind work that
// still uses it, then the program tries to record E on A and the driver rejects the record (bad
// flags, an event of another context, a destroyed event). The driver's E still means the old
// record. Then the program waits B on E, queries E or synchronizes E, and B allocates the same size.
// Violation: B gets A's block and B's work runs while A's work on it still runs: the rejected
// record was taken as covering A's free, and the driver's answer about the old record as proof.
// (A bad stream handle is not among the rejections: streampool answers an unknown handle itself,
// before any tracking, and a stale one that it still knows is class 6's subject.)
#include "safety_support.hpp"

namespace safety {
namespace {

constexpr unsigned kUnknownRecordFlag = 0x4;  // not CU_EVENT_RECORD_DEFAULT or _EXTERNAL

enum class Rejection { bad_flags, bad_flags_per_thread, event_of_another_context, destroyed_event };
enum class Consumer { wait, query, synchronize };

class RejectedRecord : public SafetyTest {
 protected:
  void TearDown() override {
    if (event != nullptr) SP(cuEventDestroy_v2)(event);
    if (other_context != nullptr) {
      SP(cuCtxPushCurrent_v2)(other_context);
      SP(cuCtxSynchronize)();
      SP(cuStreamDestroy_v2)(other_stream);
      SP(cuCtxDestroy_v2)(other_context);
    }
    SafetyTest::TearDown();
  }

  // E, with an older record that completed (none for a destroyed event: its handle comes back
  // as a new, never-recorded event, which the driver also reports complete).
  void arrange_event(Rejection rejection) {
    if (rejection == Rejection::event_of_another_context) {
      ASSERT_EQ(SP(cuCtxCreate_v4)(&other_context, nullptr, 0, device), CUDA_SUCCESS);  // now current
      ASSERT_EQ(SP(cuStreamCreate)(&other_stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
      ASSERT_EQ(SP(cuEventCreate)(&event, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
      ASSERT_EQ(SP(cuEventRecord)(event, other_stream), CUDA_SUCCESS);
      ASSERT_EQ(SP(cuEventSynchronize)(event), CUDA_SUCCESS);
      CUcontext popped = nullptr;
      ASSERT_EQ(SP(cuCtxPopCurrent_v2)(&popped), CUDA_SUCCESS);
      return;
    }
    ASSERT_EQ(SP(cuEventCreate)(&event, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
    if (rejection == Rejection::destroyed_event) return;
    ASSERT_EQ(SP(cuEventRecord)(event, a), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuEventSynchronize)(event), CUDA_SUCCESS);
  }

  void reject_record(Rejection rejection) {
    switch (rejection) {
      case Rejection::bad_flags:
        ASSERT_EQ(SP(cuEventRecordWithFlags)(event, a, kUnknownRecordFlag), CUDA_ERROR_INVALID_VALUE);
        break;
      case Rejection::bad_flags_per_thread:
        ASSERT_EQ(SP_AS(cuEventRecordWithFlags_ptsz, cuEventRecordWithFlags)(event, a, kUnknownRecordFlag),
                  CUDA_ERROR_INVALID_VALUE);
        break;
      case Rejection::event_of_another_context:
        ASSERT_EQ(SP(cuEventRecord)(event, a), CUDA_ERROR_INVALID_HANDLE);
        break;
      case Rejection::destroyed_event: {
        CUevent destroyed = event;
        ASSERT_EQ(SP(cuEventDestroy_v2)(destroyed), CUDA_SUCCESS);
        event = nullptr;
        ASSERT_EQ(SP(cuEventRecord)(destroyed, a), CUDA_ERROR_INVALID_HANDLE);
        ASSERT_EQ(SP(cuEventCreate)(&event, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
        ASSERT_EQ(event, destroyed) << "the fake driver hands the destroyed handle out again";
        break;
      }
    }
  }

  void consume(Consumer consumer) {
    switch (consumer) {
      case Consumer::wait:
        ASSERT_EQ(SP(cuStreamWaitEvent)(b, event, 0), CUDA_SUCCESS);
        break;
      case Consumer::query:
        ASSERT_EQ(SP(cuEventQuery)(event), CUDA_SUCCESS);  // about the old record: complete
        break;
      case Consumer::synchronize:
        ASSERT_EQ(SP(cuEventSynchronize)(event), CUDA_SUCCESS);
        break;
    }
  }

  void run(Rejection rejection, Consumer consumer) {
    ASSERT_NO_FATAL_FAILURE(arrange_event(rejection));
    ASSERT_NO_FATAL_FAILURE(give_up_block(old_owner, pool, a));

    ASSERT_NO_FATAL_FAILURE(reject_record(rejection));
    ASSERT_NO_FATAL_FAILURE(consume(consumer));
    ASSERT_NO_FATAL_FAILURE(take_block(new_owner, old_owner, pool, b));

    expect_safe(a, b);
  }

  CUevent event = nullptr;
  CUcontext other_context = nullptr;
  CUstream other_stream = nullptr;
};

TEST_F(RejectedRecord, BadFlagsThenWaitDoNotOrderTheWaiterAfterTheFree) { run(Rejection::bad_flags, Consumer::wait); }
TEST_F(RejectedRecord, BadFlagsThenQueryDoNotCompleteTheFree) { run(Rejection::bad_flags, Consumer::query); }
TEST_F(RejectedRecord, BadFlagsThenSynchronizeDoNotCompleteTheFree) {
  run(Rejection::bad_flags, Consumer::synchronize);
}

TEST_F(RejectedRecord, PerThreadBadFlagsThenWaitDoNotOrderTheWaiterAfterTheFree) {
  run(Rejection::bad_flags_per_thread, Consumer::wait);
}
TEST_F(RejectedRecord, PerThreadBadFlagsThenQueryDoNotCompleteTheFree) {
  run(Rejection::bad_flags_per_thread, Consumer::query);
}

TEST_F(RejectedRecord, EventOfAnotherContextThenWaitDoNotOrderTheWaiterAfterTheFree) {
  run(Rejection::event_of_another_context, Consumer::wait);
}
TEST_F(RejectedRecord, EventOfAnotherContextThenQueryDoNotCompleteTheFree) {
  run(Rejection::event_of_another_context, Consumer::query);
}
TEST_F(RejectedRecord, EventOfAnotherContextThenSynchronizeDoNotCompleteTheFree) {
  run(Rejection::event_of_another_context, Consumer::synchronize);
}

// The destroyed event's handle comes back as a new event that was never recorded: waiting on it
// is a no-op and it is complete, whatever the rejected record was taken to mean.
TEST_F(RejectedRecord, DestroyedEventThenWaitOnItsReusedHandleDoNotOrderTheWaiterAfterTheFree) {
  run(Rejection::destroyed_event, Consumer::wait);
}
TEST_F(RejectedRecord, DestroyedEventThenQueryOfItsReusedHandleDoNotCompleteTheFree) {
  run(Rejection::destroyed_event, Consumer::query);
}
TEST_F(RejectedRecord, DestroyedEventThenSynchronizeOfItsReusedHandleDoNotCompleteTheFree) {
  run(Rejection::destroyed_event, Consumer::synchronize);
}

}  // namespace
}  // namespace safety
