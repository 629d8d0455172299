// Shared by the two-GPU conformance group (two_gpus_*_test.cpp): device 1's primary context, a
// tiny PTX kernel that GPU 1 runs to write memory, and the two ways a test makes "GPU 1 write":
//   Writer::kernel  a real kernel (PTX loaded with cuModuleLoadData) on a device-1 stream; it can
//                   spin on %globaltimer first, so it still runs for a while after it was queued.
//   Writer::memset  a host function that sleeps (when a delay is asked) and a cuMemsetD32Async on
//                   the device-1 stream: GPU 1's copy engine writes, no module is needed.
// NVIDIA's driver runs both. The fake driver runs no kernels, so the kernel writers skip there and
// the memset writers cover the same scenarios (over STREAMPOOL_FAKE_DEVICES=2).
//
// Every suite of the group is named TwoGpus*, so a run picks the group with --gtest_filter=TwoGpus*.
// With fewer than two devices (or two that cannot reach each other) every test skips and says why.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "conformance.hpp"

namespace conformance::two_gpus {

constexpr std::uint32_t kOldPattern = 0xA5A5A5A5u;  // what the old owner (GPU 1) writes
constexpr std::uint32_t kNewPattern = 0x5A5A5A5Au;  // what the new owner (GPU 0) writes
constexpr unsigned kSlowWriteMs = 300;              // how long the old owner's write is held back

enum class Writer { kernel, memset };
std::string writer_name(Writer writer);

// Device 1's primary context, retained once per process (never released: creating a primary
// context on a real GPU costs a fraction of a second, and every test of the group needs it).
CUcontext device1_context();

// Makes `context` current for a scope and restores what was current before.
class ScopedContext {
 public:
  explicit ScopedContext(CUcontext context);
  ~ScopedContext();
  ScopedContext(const ScopedContext&) = delete;
  ScopedContext& operator=(const ScopedContext&) = delete;
  CUresult status() const { return status_; }

 private:
  CUcontext previous_ = nullptr;
  CUresult status_ = CUDA_ERROR_UNKNOWN;
};

// A non-blocking stream of the given context (created and destroyed with that context current).
class ContextStream {
 public:
  explicit ContextStream(CUcontext context);
  ~ContextStream();
  ContextStream(const ContextStream&) = delete;
  ContextStream& operator=(const ContextStream&) = delete;
  CUresult status() const { return status_; }
  CUstream get() const { return stream_; }

 private:
  CUcontext context_ = nullptr;
  CUstream stream_ = nullptr;
  CUresult status_ = CUDA_ERROR_UNKNOWN;
};

// An event created in the given context (events record only on streams of their own context).
class ContextEvent {
 public:
  explicit ContextEvent(CUcontext context);
  ~ContextEvent();
  ContextEvent(const ContextEvent&) = delete;
  ContextEvent& operator=(const ContextEvent&) = delete;
  CUresult status() const { return status_; }
  CUevent get() const { return event_; }

 private:
  CUevent event_ = nullptr;
  CUresult status_ = CUDA_ERROR_UNKNOWN;
};

// The fill kernel's function in `context` (the module is loaded once per context and kept).
CUresult fill_kernel(CUcontext context, CUfunction* function);

// Queues on `stream` (a stream of `context`) a write of `value` into the `count` 32-bit words at
// `data`, done by `writer`; the write starts `delay_ms` after the stream reaches it.
CUresult enqueue_write(Writer writer, CUcontext context, CUstream stream, CUdeviceptr data, std::size_t count,
                       std::uint32_t value, unsigned delay_ms = 0);

// Copies `count` words at `data` to the host on `stream` and waits for the stream.
CUresult read_words(CUstream stream, CUdeviceptr data, std::size_t count, std::vector<std::uint32_t>* words);

// "" when every word is `expected`, else where the first differing word is and what it holds.
std::string mismatch(const std::vector<std::uint32_t>& words, std::uint32_t expected);

// Properties of a plain pool on `device_id`.
CUmemPoolProps pool_props_on(int device_id);

// The group's fixture: skips unless there are two devices that can reach each other; on a
// real GPU, kernel writers need the PTX module, on the fake driver they skip.
class TwoGpusTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
  // For parameterised tests: skips when `writer` cannot run here.
  void require_writer(Writer writer);

  CUcontext context0_ = nullptr;  // device 0's primary context (current during every test)
  CUcontext context1_ = nullptr;  // device 1's primary context
};

}  // namespace conformance::two_gpus
