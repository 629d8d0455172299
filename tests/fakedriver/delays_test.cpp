// Test delays inside entry points (entry_delay.hpp): set at run time before or after an entry
// point acts, or from STREAMPOOL_FAKE_DELAY; only the named entry point is delayed.
#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "fake_test_support.hpp"

extern "C" void streampool_fake_set_delay(const char* name, unsigned before_usec);
extern "C" void streampool_fake_set_delay_after(const char* name, unsigned after_usec);
extern "C" void streampool_fake_clear_delays();
extern "C" CUresult cuStreamQuery_ptsz(CUstream hStream);

namespace fake_test {
namespace {

class DelaysTest : public FakeDriverTest {
 protected:
  void TearDown() override {
    streampool_fake_clear_delays();
    FakeDriverTest::TearDown();
  }
};

std::chrono::milliseconds since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
}

TEST_F(DelaysTest, DelayBeforeActingHoldsTheCallBackBeforeItChangesAnything) {
  CUstream stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  CUevent event = nullptr;
  ASSERT_EQ(cuEventCreate(&event, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  int sleep_for = 200;
  ASSERT_EQ(cuLaunchHostFunc(stream, sleep_ms, &sleep_for), CUDA_SUCCESS);
  streampool_fake_set_delay("cuEventRecord", 100000);

  const auto start = std::chrono::steady_clock::now();
  std::thread recorder([&] { cuEventRecord(event, stream); });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  const CUresult during = cuEventQuery(event);  // the record has not acted yet: never recorded
  recorder.join();
  const auto took = since(start);
  const CUresult after = cuEventQuery(event);

  EXPECT_GE(took.count(), 100);
  EXPECT_EQ(during, CUDA_SUCCESS);
  EXPECT_EQ(after, CUDA_ERROR_NOT_READY);
  cuStreamSynchronize(stream);
  cuEventDestroy(event);
  cuStreamDestroy(stream);
}

TEST_F(DelaysTest, DelayAfterActingHoldsTheCallBackAfterItsEffect) {
  CUstream stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  CUevent event = nullptr;
  ASSERT_EQ(cuEventCreate(&event, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  int sleep_for = 300;
  ASSERT_EQ(cuLaunchHostFunc(stream, sleep_ms, &sleep_for), CUDA_SUCCESS);
  streampool_fake_set_delay_after("cuEventRecord", 100000);

  std::atomic<bool> returned{false};
  std::thread recorder([&] {
    cuEventRecord(event, stream);
    returned = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  const CUresult during = cuEventQuery(event);  // already recorded, not yet returned
  const bool returned_during = returned.load();
  recorder.join();

  EXPECT_EQ(during, CUDA_ERROR_NOT_READY);
  EXPECT_FALSE(returned_during);
  cuStreamSynchronize(stream);
  cuEventDestroy(event);
  cuStreamDestroy(stream);
}

TEST_F(DelaysTest, OnlyTheNamedEntryPointIsDelayedAndClearingEndsIt) {
  CUstream stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  streampool_fake_set_delay("cuStreamQuery_ptsz", 200000);

  auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(cuStreamQuery(stream), CUDA_SUCCESS);
  const auto other_variant = since(start);
  start = std::chrono::steady_clock::now();
  ASSERT_EQ(cuStreamQuery_ptsz(stream), CUDA_SUCCESS);
  const auto named = since(start);
  streampool_fake_clear_delays();
  start = std::chrono::steady_clock::now();
  ASSERT_EQ(cuStreamQuery_ptsz(stream), CUDA_SUCCESS);
  const auto cleared = since(start);

  EXPECT_LT(other_variant.count(), 100);
  EXPECT_GE(named.count(), 200);
  EXPECT_LT(cleared.count(), 100);
  cuStreamDestroy(stream);
}

TEST(FakeDelayEnvironmentTest, EnvironmentNamesEntryPointsAndMicroseconds) {
  const std::string delayed =
      run_self_with_environment("STREAMPOOL_FAKE_DELAY=cuMemAlloc_v2:5,cuDriverGetVersion:150000", "--report-fake-delay");
  const std::string after_only =
      run_self_with_environment("STREAMPOOL_FAKE_DELAY=cuDriverGetVersion:0:150000", "--report-fake-delay");
  const std::string malformed =
      run_self_with_environment("STREAMPOOL_FAKE_DELAY=cuDriverGetVersion:lots,:5", "--report-fake-delay");

  auto took_us = [](const std::string& report) {
    const auto at = report.find("took_us=");
    return at == std::string::npos ? -1LL : std::stoll(report.substr(at + 8));
  };
  EXPECT_GE(took_us(delayed), 150000);
  EXPECT_GE(took_us(after_only), 150000);
  EXPECT_GE(took_us(malformed), 0);
  EXPECT_LT(took_us(malformed), 100000);
}

}  // namespace
}  // namespace fake_test
