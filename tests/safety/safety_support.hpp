// Shared by the reuse-safety tests: driver entry points taken from libstreampool.so (the tests run
// with LD_PRELOAD=libstreampool.so over the fake driver named by STREAMPOOL_LIBCUDA), the fake
// driver's test delays, and "the detector".
//
// The detector. The old owner of a block queues work on its stream that still uses the block (a
// host function that sleeps, then writes its pattern into the block, as a long kernel would) and
// frees the block behind it. When another stream then allocates the same size and gets memory
// that overlaps the block, its first work notes whether the old owner's work had finished and
// writes its own pattern. The new owner's work running while the old owner's still runs is the
// violation; the old owner's late write landing in the new owner's data is its visible damage.
// (The fake driver's device memory is host memory, so host functions can write it.)
#pragma once

#include <cuda.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <thread>

namespace safety {

inline void* streampool_library() {
  static void* handle = dlopen(STREAMPOOL_TEST_PRELOAD_LIBRARY, RTLD_NOW | RTLD_NOLOAD);
  return handle;
}

inline void* streampool_symbol(const char* name) {
  void* library = streampool_library();
  return library == nullptr ? nullptr : dlsym(library, name);
}

// The driver underneath, once streampool has opened it.
inline void* fake_symbol(const char* name) {
  const char* path = std::getenv("STREAMPOOL_LIBCUDA");
  void* driver = path == nullptr ? nullptr : dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  return driver == nullptr ? nullptr : dlsym(driver, name);
}

// streampool's definition of a driver entry point, typed as cuda.h declares it.
#define SP(name) (reinterpret_cast<decltype(&::name)>(::safety::streampool_symbol(#name)))
// The same for a variant cuda.h does not declare here (the _ptsz ones), typed like `like`.
#define SP_AS(name, like) (reinterpret_cast<decltype(&::like)>(::safety::streampool_symbol(#name)))

// The fake driver's delays inside an entry point (exact exported name), see its entry_delay.hpp.
inline void set_delay_before(const char* entry_point, unsigned microseconds) {
  auto set = reinterpret_cast<void (*)(const char*, unsigned)>(fake_symbol("streampool_fake_set_delay"));
  ASSERT_NE(set, nullptr) << "the fake driver has no streampool_fake_set_delay";
  set(entry_point, microseconds);
}
inline void set_delay_after(const char* entry_point, unsigned microseconds) {
  auto set = reinterpret_cast<void (*)(const char*, unsigned)>(fake_symbol("streampool_fake_set_delay_after"));
  ASSERT_NE(set, nullptr) << "the fake driver has no streampool_fake_set_delay_after";
  set(entry_point, microseconds);
}
// How many calls reached the fake driver's entry point `name` (counted as a call enters it).
inline unsigned long long fake_calls(const char* entry_point) {
  auto counter = reinterpret_cast<unsigned long long (*)(const char*)>(fake_symbol("streampool_fake_counter"));
  return counter == nullptr ? 0 : counter(entry_point);
}
// Waits until a call entered `entry_point` after `calls_before` were counted.
inline void wait_for_call(const char* entry_point, unsigned long long calls_before) {
  while (fake_calls(entry_point) == calls_before) std::this_thread::sleep_for(std::chrono::microseconds(100));
}
inline void clear_delays() {
  if (auto clear = reinterpret_cast<void (*)()>(fake_symbol("streampool_fake_clear_delays"))) clear();
}
// The next call of the fake driver's `entry_point` returns `error` without running (its
// fault_injection.hpp); clear_failures forgets what is still pending.
inline void refuse_next_call(const char* entry_point, CUresult error) {
  auto fail = reinterpret_cast<void (*)(const char*, unsigned long long, int)>(fake_symbol("streampool_fake_fail_call"));
  ASSERT_NE(fail, nullptr) << "the fake driver has no streampool_fake_fail_call";
  fail(entry_point, 1, static_cast<int>(error));
}
inline void clear_failures() {
  if (auto clear = reinterpret_cast<void (*)()>(fake_symbol("streampool_fake_clear_failures"))) clear();
}

inline void sleep_ms(int milliseconds) { std::this_thread::sleep_for(std::chrono::milliseconds(milliseconds)); }

inline constexpr std::size_t kBlockBytes = std::size_t{1} << 20;
inline constexpr std::size_t kPatternBytes = 4096;  // how much of a block the owners write
inline constexpr unsigned char kOldPattern = 0xA5;
inline constexpr unsigned char kNewPattern = 0x5A;
inline constexpr int kOldOwnerSleepMs = 200;

// The old owner of a block and the work it still had queued on the block when it freed it.
struct OldOwner {
  CUdeviceptr block = 0;
  std::size_t bytes = 0;
  int sleep_ms = kOldOwnerSleepMs;
  std::atomic<bool> done{false};
};

// Host function (old owner): sleeps, writes the old pattern into the block, then marks itself done.
inline void CUDA_CB old_owner_work(void* data) {
  auto* owner = static_cast<OldOwner*>(data);
  sleep_ms(owner->sleep_ms);
  std::memset(reinterpret_cast<void*>(owner->block), kOldPattern, std::min(owner->bytes, kPatternBytes));
  owner->done.store(true);
}

// The new owner: what it got, and what its first work saw.
struct NewOwner {
  const OldOwner* previous = nullptr;
  CUdeviceptr block = 0;
  std::size_t bytes = 0;
  std::atomic<int> saw_previous_done{-1};  // -1: its work has not run
};

// Host function (new owner's first work): notes whether the old owner had finished, then writes.
inline void CUDA_CB new_owner_work(void* data) {
  auto* owner = static_cast<NewOwner*>(data);
  owner->saw_previous_done.store(owner->previous->done.load() ? 1 : 0);
  std::memset(reinterpret_cast<void*>(owner->block), kNewPattern, std::min(owner->bytes, kPatternBytes));
}

inline bool overlaps(CUdeviceptr a, std::size_t a_bytes, CUdeviceptr b, std::size_t b_bytes) {
  return a < b + b_bytes && b < a + a_bytes;
}
inline bool overlaps(const OldOwner& old_owner, const NewOwner& new_owner) {
  return overlaps(old_owner.block, old_owner.bytes, new_owner.block, new_owner.bytes);
}

inline std::string hex(CUdeviceptr pointer) {
  std::ostringstream text;
  text << "0x" << std::hex << pointer;
  return text.str();
}

// After both owners' work ran: "" when the reuse was safe, else what went wrong.
inline std::string violation(const OldOwner& old_owner, const NewOwner& new_owner) {
  if (!overlaps(old_owner, new_owner)) return {};
  std::string found;
  if (new_owner.saw_previous_done.load() == 0) {
    found += "the new owner's work on " + hex(new_owner.block) +
             " began while the old owner's work on that memory still ran";
  }
  const auto* data = reinterpret_cast<const unsigned char*>(new_owner.block);
  const std::size_t checked = std::min(new_owner.bytes, kPatternBytes);
  if (std::any_of(data, data + checked, [](unsigned char byte) { return byte != kNewPattern; })) {
    found += std::string(found.empty() ? "" : "; ") + "the old owner's late write landed in the new owner's data";
  }
  return found;
}

// After a host synchronisation of the new owner's stream returned (or a query of it succeeded):
// "" when the old owner was finished by then or the memory does not overlap, else the violation.
inline std::string early_completion(const OldOwner& old_owner, CUdeviceptr block, std::size_t bytes, bool old_done,
                                    const char* what) {
  if (!overlaps(old_owner.block, old_owner.bytes, block, bytes) || old_done) return {};
  return std::string(what) + " reported the stream that reused " + hex(block) +
         " complete while the old owner's work on that memory still ran";
}

// A pool that keeps everything it reserved (release threshold: max).
inline CUmemoryPool create_pool(CUdevice device, std::size_t max_size = 0,
                                CUmemAllocationHandleType handle_types = CU_MEM_HANDLE_TYPE_NONE) {
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = device;
  props.maxSize = max_size;
  props.handleTypes = handle_types;
  CUmemoryPool pool = nullptr;
  EXPECT_EQ(SP(cuMemPoolCreate)(&pool, &props), CUDA_SUCCESS);
  std::uint64_t keep_everything = ~std::uint64_t{0};
  EXPECT_EQ(SP(cuMemPoolSetAttribute)(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep_everything), CUDA_SUCCESS);
  return pool;
}

// The old owner's part: allocates on `stream` from `pool`, queues work that still uses the block,
// and frees the block on `stream` behind it.
inline void give_up_block(OldOwner& owner, CUmemoryPool pool, CUstream stream, std::size_t bytes = kBlockBytes) {
  owner.bytes = bytes;
  ASSERT_EQ(SP(cuMemAllocFromPoolAsync)(&owner.block, bytes, pool, stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuLaunchHostFunc)(stream, old_owner_work, &owner), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemFreeAsync)(owner.block, stream), CUDA_SUCCESS);
}

// The new owner's part: allocates the same size on `stream` and queues its first work.
inline void take_block(NewOwner& owner, const OldOwner& previous, CUmemoryPool pool, CUstream stream) {
  owner.previous = &previous;
  owner.bytes = previous.bytes;
  ASSERT_EQ(SP(cuMemAllocFromPoolAsync)(&owner.block, owner.bytes, pool, stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuLaunchHostFunc)(stream, new_owner_work, &owner), CUDA_SUCCESS);
}

// A current primary context on device 0, a pool of device 0 that keeps its memory, and two
// non-blocking streams: `a` (the old owner's) and `b` (the new owner's).
class SafetyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(streampool_library(), nullptr) << "run with LD_PRELOAD=libstreampool.so";
    ASSERT_EQ(SP(cuInit)(0), CUDA_SUCCESS);
    ASSERT_NE(fake_symbol("streampool_fake_counter"), nullptr) << "run with STREAMPOOL_LIBCUDA naming the fake driver";
    ASSERT_EQ(SP(cuDeviceGet)(&device, 0), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuDevicePrimaryCtxRetain)(&primary, device), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuCtxSetCurrent)(primary), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuStreamCreate)(&a, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuStreamCreate)(&b, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    pool = create_pool(device);
  }
  void TearDown() override {
    clear_delays();
    SP(cuCtxSetCurrent)(primary);
    SP(cuCtxSynchronize)();  // every old owner's work has ended before its memory goes
    if (a != nullptr) SP(cuStreamDestroy_v2)(a);
    if (b != nullptr) SP(cuStreamDestroy_v2)(b);
    if (pool != nullptr) SP(cuMemPoolDestroy)(pool);
    SP(cuDevicePrimaryCtxRelease_v2)(device);
  }

  // The verdict, once the old owner's and the new owner's streams ran everything queued.
  void expect_safe(CUstream old_stream, CUstream new_stream) {
    ASSERT_EQ(SP(cuStreamSynchronize)(old_stream), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuStreamSynchronize)(new_stream), CUDA_SUCCESS);
    EXPECT_EQ(violation(old_owner, new_owner), "");
    SP(cuMemFreeAsync)(new_owner.block, new_stream);
  }

  CUdevice device = 0;
  CUcontext primary = nullptr;
  CUstream a = nullptr;
  CUstream b = nullptr;
  CUmemoryPool pool = nullptr;
  // Members, not locals of a test: a test that stops early must not leave queued work pointing at
  // its stack. TearDown synchronizes before they go.
  OldOwner old_owner;
  NewOwner new_owner;
};

// SafetyTest plus, once create_context() made it, a created context C2 of device 0 with two
// non-blocking streams; C2 stays current.
class CreatedContextTest : public SafetyTest {
 protected:
  void TearDown() override {
    if (created != nullptr) {
      SP(cuCtxPushCurrent_v2)(created);
      SP(cuCtxSynchronize)();
      SP(cuStreamDestroy_v2)(created_a);
      SP(cuStreamDestroy_v2)(created_b);
      SP(cuCtxDestroy_v2)(created);
    }
    SafetyTest::TearDown();
  }

  void create_context() {
    ASSERT_EQ(SP(cuCtxCreate_v4)(&created, nullptr, 0, device), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuStreamCreate)(&created_a, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuStreamCreate)(&created_b, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  }

  CUcontext created = nullptr;
  CUstream created_a = nullptr;
  CUstream created_b = nullptr;
};

}  // namespace safety
