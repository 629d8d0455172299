// What the runtime conformance tests share. The same sources are built twice: linked to NVIDIA's
// cudart (runtime_conformance_nvidia) and with `nvcc -cudart none` to streampool's runtime
// (runtime_conformance_streampool); both must pass every test on a GPU.
//
// A test suite whose name ends in "OnGpu" needs a real device: it checks what kernels computed,
// work the fake driver does not run (captured copies and host functions) or driver behaviour it does
// not model. Over the fake driver those suites are filtered out (--gtest_filter=-*OnGpu*), never
// skipped.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#define ASSERT_CUDA(call) ASSERT_EQ((call), cudaSuccess) << #call
#define EXPECT_CUDA(call) EXPECT_EQ((call), cudaSuccess) << #call

namespace conformance {

// Forgets the calling thread's last error, so a test sees only the errors it makes.
inline void clear_last_error() { static_cast<void>(cudaGetLastError()); }

// A host function that holds its stream until the test opens the gate (or 10 s pass, so that a
// broken runtime fails the test instead of hanging it).
struct Gate {
  std::atomic<bool> open{false};
  std::atomic<bool> entered{false};
  static void CUDART_CB hold(void* data) {
    auto* gate = static_cast<Gate*>(data);
    gate->entered = true;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!gate->open && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
};

// Polls cudaStreamQuery until the stream is idle or `timeout` passed; true when idle.
inline bool idle_within(cudaStream_t stream, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (cudaStreamQuery(stream) == cudaSuccess) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

// The order host functions ran in: each Step notes its value in its Order (note, a host function).
struct Order {
  std::mutex mutex;
  std::vector<int> seen;
};
struct Step {
  Order* order;
  int value;
};
inline void CUDART_CB note(void* data) {
  auto* step = static_cast<Step*>(data);
  std::lock_guard lock(step->order->mutex);
  step->order->seen.push_back(step->value);
}

}  // namespace conformance
