// The fake's failure switch (fault_injection.hpp): the Nth call of a named entry point returns the
// chosen error instead of running, and nothing else changes.
#include "fake_test_support.hpp"

extern "C" {
void streampool_fake_fail_call(const char* name, unsigned long long nth, int error);
void streampool_fake_fail_calls(const char* name, unsigned long long nth, unsigned long long count, int error);
void streampool_fake_clear_failures();
unsigned long long streampool_fake_failures_injected(const char* name);
void streampool_fake_on_call(const char* name, unsigned long long nth, void (*action)(void*), void* argument);
}

namespace fake_test {
namespace {

class FaultInjectionTest : public FakeDriverTest {
 protected:
  void TearDown() override {
    streampool_fake_clear_failures();
    FakeDriverTest::TearDown();
  }
  CUresult create_and_destroy_event() {
    CUevent event = nullptr;
    const CUresult result = cuEventCreate(&event, CU_EVENT_DEFAULT);
    if (result == CUDA_SUCCESS) cuEventDestroy(event);
    return result;
  }
};

TEST_F(FaultInjectionTest, TheNthCallFailsOnceWithTheChosenError) {
  const auto injected_before = streampool_fake_failures_injected("cuEventCreate");
  streampool_fake_fail_call("cuEventCreate", 3, CUDA_ERROR_OUT_OF_MEMORY);

  EXPECT_EQ(create_and_destroy_event(), CUDA_SUCCESS);
  EXPECT_EQ(create_and_destroy_event(), CUDA_SUCCESS);
  EXPECT_EQ(create_and_destroy_event(), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(create_and_destroy_event(), CUDA_SUCCESS);
  EXPECT_EQ(streampool_fake_failures_injected("cuEventCreate"), injected_before + 1);
}

// An action on a call runs once, on the nth call, before the call, which then runs as usual.
TEST_F(FaultInjectionTest, AnActionRunsBeforeTheNthCallWhichThenSucceeds) {
  struct Seen {
    int runs = 0;
  } seen;
  CUevent first = nullptr;
  ASSERT_EQ(cuEventCreate(&first, CU_EVENT_DEFAULT), CUDA_SUCCESS);
  streampool_fake_on_call("cuEventQuery", 2, [](void* data) { ++static_cast<Seen*>(data)->runs; }, &seen);

  EXPECT_EQ(cuEventQuery(first), CUDA_SUCCESS);
  EXPECT_EQ(seen.runs, 0);
  EXPECT_EQ(cuEventQuery(first), CUDA_SUCCESS);
  EXPECT_EQ(seen.runs, 1);
  EXPECT_EQ(cuEventQuery(first), CUDA_SUCCESS);
  EXPECT_EQ(seen.runs, 1);
  EXPECT_EQ(streampool_fake_failures_injected("cuEventQuery"), 0u);
  cuEventDestroy(first);
}

TEST_F(FaultInjectionTest, AFailingCallHasNoEffect) {
  CUevent event = nullptr;
  streampool_fake_fail_call("cuEventCreate", 1, CUDA_ERROR_UNKNOWN);

  EXPECT_EQ(cuEventCreate(&event, CU_EVENT_DEFAULT), CUDA_ERROR_UNKNOWN);

  EXPECT_EQ(event, nullptr);
}

TEST_F(FaultInjectionTest, ACountOfCallsFailsInARow) {
  streampool_fake_fail_calls("cuEventCreate", 2, 2, CUDA_ERROR_NOT_SUPPORTED);

  EXPECT_EQ(create_and_destroy_event(), CUDA_SUCCESS);
  EXPECT_EQ(create_and_destroy_event(), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(create_and_destroy_event(), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(create_and_destroy_event(), CUDA_SUCCESS);
}

TEST_F(FaultInjectionTest, CountZeroFailsEveryCallUntilCleared) {
  streampool_fake_fail_calls("cuEventCreate", 1, 0, CUDA_ERROR_OUT_OF_MEMORY);

  for (int call = 0; call < 5; ++call) EXPECT_EQ(create_and_destroy_event(), CUDA_ERROR_OUT_OF_MEMORY);
  streampool_fake_clear_failures();
  EXPECT_EQ(create_and_destroy_event(), CUDA_SUCCESS);
}

TEST_F(FaultInjectionTest, OnlyTheNamedEntryPointFails) {
  streampool_fake_fail_call("cuEventCreate", 1, CUDA_ERROR_OUT_OF_MEMORY);
  CUstream stream = nullptr;

  ASSERT_EQ(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamDestroy(stream), CUDA_SUCCESS);
  EXPECT_EQ(create_and_destroy_event(), CUDA_ERROR_OUT_OF_MEMORY);
}

}  // namespace
}  // namespace fake_test
