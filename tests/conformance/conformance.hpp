// Shared helpers of the driver-API conformance suite. Every test in this folder talks to
// libcuda.so.1 through cuda.h only, so the same binary runs on NVIDIA's driver alone, under
// LD_PRELOAD=libstreampool.so over the real driver, and under streampool over the fake driver.
// Where streampool deliberately differs from the driver (driver-behaviour.md says where), a
// test asks under_streampool() and asserts the value of whichever implementation it runs on.
#pragma once

#include <cuda.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <ostream>

// Lets gtest print CUresult values by name (CUresult is a global enum, so this is its ADL home).
void PrintTo(CUresult result, std::ostream* os);

#define CU_ASSERT_OK(call) ASSERT_EQ(CUDA_SUCCESS, (call)) << #call
#define CU_EXPECT_OK(call) EXPECT_EQ(CUDA_SUCCESS, (call)) << #call

namespace conformance {

constexpr std::uint64_t kKiB = 1ULL << 10;
constexpr std::uint64_t kMiB = 1ULL << 20;
constexpr std::uint64_t kGiB = 1ULL << 30;
constexpr std::uint64_t kDriverChunk = 32 * kMiB;  // the driver's pool growth chunk (measured)
constexpr std::uint64_t kNoThreshold = UINT64_MAX;  // RELEASE_THRESHOLD that keeps everything
constexpr unsigned kLongKernelMs = 200;             // what a "long kernel" sleeps

// True when libstreampool.so is loaded (it exports streampool_version); false on NVIDIA's
// driver alone.
bool under_streampool();

// True when the driver underneath is streampool's CPU-only fake (its device name says so). The
// fake runs no graphs; tests use this only to stop before what the fake cannot do.
bool on_fake_driver();

// Device ordinal 0 and its primary context, made current by the test environment.
CUdevice device();

// Special stream handles (cuda.h's macros use old-style casts).
CUstream legacy_stream();
CUstream per_thread_stream();

// The pool attributes 9..15 that cuda.h 13.0 does not name yet (see the cuda-bindings spec).
enum : int {
  kAttrAllocationType = 9,
  kAttrExportHandleTypes = 10,
  kAttrLocationId = 11,
  kAttrLocationType = 12,
  kAttrMaxPoolSize = 13,
  kAttrHwDecompressEnabled = 14,
  kAttrLocalityDomainId = 15,
};
CUmemPool_attribute pool_attr(int number);

// Reads a cuuint64_t attribute; records a test failure and returns UINT64_MAX on error.
std::uint64_t get_u64(CUmemoryPool pool, CUmemPool_attribute attr);
std::uint64_t reserved(CUmemoryPool pool);
std::uint64_t reserved_high(CUmemoryPool pool);
std::uint64_t used(CUmemoryPool pool);
std::uint64_t used_high(CUmemoryPool pool);
CUresult set_u64(CUmemoryPool pool, CUmemPool_attribute attr, std::uint64_t value);
CUresult set_int(CUmemoryPool pool, CUmemPool_attribute attr, int value);

// Properties of a plain device pool on device(); max_size 0 means "no limit".
CUmemPoolProps device_pool_props(std::size_t max_size = 0);

// An access descriptor for device `device_id` (cuMemPoolSetAccess).
CUmemAccessDesc access_for(int device_id, CUmemAccess_flags flags);
// cuMemPoolGetAccess for a device, recording a failure on error.
CUmemAccess_flags pool_access(CUmemoryPool pool, int device_id);

// The VMM granularity of device memory on device() (2 MiB on an H200).
std::size_t vmm_granularity(CUmemAllocationGranularity_flags kind = CU_MEM_ALLOC_GRANULARITY_MINIMUM);

// cuMemGetInfo, recording a failure on error.
void memory_info(std::size_t* free_bytes, std::size_t* total_bytes);

// Enqueues "a long kernel": a host function that sleeps, so everything after it on the stream
// stays pending for milliseconds. The callback calls no CUDA function.
CUresult enqueue_long_kernel(CUstream stream, unsigned milliseconds = kLongKernelMs);

// Polls cuStreamQuery for up to `milliseconds`; true once the stream reports CUDA_SUCCESS.
// (A stream with only an allocation on it may still be NOT_READY for some microseconds.)
bool becomes_idle_within(CUstream stream, unsigned milliseconds);

// Owners that release what a test created even when an assertion returns early.
class OwnedStream {
 public:
  explicit OwnedStream(unsigned flags = CU_STREAM_NON_BLOCKING);
  ~OwnedStream();
  OwnedStream(const OwnedStream&) = delete;
  OwnedStream& operator=(const OwnedStream&) = delete;
  CUresult status() const { return status_; }
  CUstream get() const { return stream_; }

 private:
  CUstream stream_ = nullptr;
  CUresult status_ = CUDA_ERROR_UNKNOWN;
};

// A fresh pool for one scenario: created from props, trimmed and destroyed at scope exit.
class OwnedPool {
 public:
  explicit OwnedPool(const CUmemPoolProps& props);
  ~OwnedPool();
  OwnedPool(const OwnedPool&) = delete;
  OwnedPool& operator=(const OwnedPool&) = delete;
  CUresult status() const { return status_; }
  CUmemoryPool get() const { return pool_; }
  // For tests that destroy the pool themselves.
  void forget() { pool_ = nullptr; }

 private:
  CUmemoryPool pool_ = nullptr;
  CUresult status_ = CUDA_ERROR_UNKNOWN;
};

class OwnedEvent {
 public:
  OwnedEvent();
  ~OwnedEvent();
  OwnedEvent(const OwnedEvent&) = delete;
  OwnedEvent& operator=(const OwnedEvent&) = delete;
  CUresult status() const { return status_; }
  CUevent get() const { return event_; }

 private:
  CUevent event_ = nullptr;
  CUresult status_ = CUDA_ERROR_UNKNOWN;
};

// A device pool that keeps everything it reserves (RELEASE_THRESHOLD = UINT64_MAX), the
// setting of driver-behaviour.md's reuse and growth measurements.
#define CONFORMANCE_KEEP_ALL_POOL(name, max_size)                                        \
  ::conformance::OwnedPool name(::conformance::device_pool_props(max_size));             \
  CU_ASSERT_OK(name.status());                                                           \
  CU_ASSERT_OK(::conformance::set_u64(name.get(), CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,     \
                                      ::conformance::kNoThreshold))

#define CONFORMANCE_STREAM(name) \
  ::conformance::OwnedStream name; \
  CU_ASSERT_OK(name.status())

}  // namespace conformance
