// Shared pieces of the fake driver's tests: the configuration test_main.cpp fixes for the process,
// a fixture that makes device 0's primary context current, and host functions that sleep or flag.
#pragma once

#include <cuda.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

namespace fake_test {

inline constexpr int kDevices = 3;
inline constexpr std::uint64_t kMemoryPerDevice = std::uint64_t{1} << 30;
inline constexpr std::size_t kGranularity = std::size_t{2} << 20;

class FakeDriverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
    ASSERT_EQ(cuDevicePrimaryCtxRetain(&context_, 0), CUDA_SUCCESS);
    ASSERT_EQ(cuCtxSetCurrent(context_), CUDA_SUCCESS);
  }
  void TearDown() override {
    cuCtxSynchronize();
    cuDevicePrimaryCtxRelease(0);
  }
  CUcontext context_ = nullptr;
};

// Host function: sleeps the number of milliseconds pointed to.
inline void CUDA_CB sleep_ms(void* milliseconds) {
  std::this_thread::sleep_for(std::chrono::milliseconds(*static_cast<int*>(milliseconds)));
}

// Host function: sets the flag pointed to.
inline void CUDA_CB raise_flag(void* flag) { static_cast<std::atomic<bool>*>(flag)->store(true); }

// What a host function saw of another flag when it ran.
struct FlagObservation {
  const std::atomic<bool>* watched = nullptr;
  std::atomic<int> seen{-1};  // -1: not run yet, 0: flag was clear, 1: flag was set
};
inline void CUDA_CB observe_flag(void* observation) {
  auto* record = static_cast<FlagObservation*>(observation);
  record->seen.store(record->watched->load() ? 1 : 0);
}

// Runs this test binary again with extra environment settings and returns what it printed.
std::string run_self_with_environment(const std::string& environment, const std::string& mode);

}  // namespace fake_test
