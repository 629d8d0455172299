// STREAMPOOL_SERVE_MALLOC=1 over the fake driver (one device of 1 GiB, capped at 256 MiB):
// cuMemAlloc, cuMemAllocPitch and cuMemFree served from streampool's pools with the driver's
// synchronous promises. A served block is no driver allocation (the fake's cuMemAlloc is not
// reached), is described as cuMemAlloc memory (attributes, address range), copies to and from it
// work, its cuMemFree waits for pending stream work (a host function stands for a kernel), the
// cap and the group budget count it once, context destruction and a primary context reset free
// it, and threads never get overlapping blocks. Bad settings: one line on stderr, nothing served.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "hooks_limit_info.hpp"

namespace {

constexpr size_t kMiB = size_t{1} << 20;

// Before main, so before the first driver call; a ctest or child environment that sets them wins.
const bool environment_set = [] {
  setenv("STREAMPOOL_FAKE_DEVICES", "1", 0);
  setenv("STREAMPOOL_FAKE_MEMORY", "1G", 0);
  setenv("STREAMPOOL_LIMIT", "256M", 0);
  setenv("STREAMPOOL_SERVE_MALLOC", "1", 0);
  return true;
}();

using hooks_test::limit_info;
std::uint64_t served(int device = 0) { return limit_info(device).served_malloc; }

// The fake driver's own entry point, around streampool.
template <class Fn>
Fn fake_entry(const char* name) {
  void* driver = hooks_test::fake_driver();
  return driver == nullptr ? nullptr : reinterpret_cast<Fn>(dlsym(driver, name));
}

class ServeMalloc : public hooks_test::DriverTest {
 protected:
  void SetUp() override {
    DriverTest::SetUp();
    size_t free_bytes = 0, total_bytes = 0;  // the cap resolves its devices: streampool_limit_info knows them
    ASSERT_EQ(SP(cuMemGetInfo_v2)(&free_bytes, &total_bytes), CUDA_SUCCESS);
  }
  // cuMemAlloc_v2 of `bytes`, which must be served: the fake driver's cuMemAlloc is not reached.
  void served_alloc(CUdeviceptr* p, size_t bytes) {
    const auto driver_allocs = hooks_test::fake_calls("cuMemAlloc_v2");
    ASSERT_EQ(SP(cuMemAlloc_v2)(p, bytes), CUDA_SUCCESS);
    ASSERT_NE(*p, 0u);
    ASSERT_EQ(hooks_test::fake_calls("cuMemAlloc_v2"), driver_allocs) << "not served: the driver's allocation";
  }
};

TEST_F(ServeMalloc, AnAllocationIsServedFromAPoolAndCountedAsServed) {
  const auto driver_allocs = hooks_test::fake_calls("cuMemAlloc_v2");
  const std::uint64_t before = served();
  CUdeviceptr p = 0;
  ASSERT_EQ(SP(cuMemAlloc_v2)(&p, 3 * kMiB + 100), CUDA_SUCCESS);
  ASSERT_NE(p, 0u);
  EXPECT_EQ(hooks_test::fake_calls("cuMemAlloc_v2"), driver_allocs) << "the driver's cuMemAlloc is not asked";
  EXPECT_EQ(served(), before + 3 * kMiB + 100);
  EXPECT_EQ(limit_info(0).forwarded, 0u) << "counted once, as pool memory";
  EXPECT_GE(limit_info(0).pools_in_use, 3 * kMiB + 100);
  EXPECT_NE(hooks_test::stats_report().find("\"served_malloc\":" + std::to_string(before + 3 * kMiB + 100)),
            std::string::npos)
      << hooks_test::stats_report();
  ASSERT_EQ(SP(cuMemFree_v2)(p), CUDA_SUCCESS);
  EXPECT_EQ(served(), before);
}

TEST_F(ServeMalloc, PointerAttributesDescribeDriverMemoryOfTheBlock) {
  CUdeviceptr p = 0;
  ASSERT_NO_FATAL_FAILURE(served_alloc(&p, 5000));
  unsigned int type = 0;
  int ordinal = -1;
  CUcontext owner = nullptr;
  CUdeviceptr start = 0;
  size_t size = 0;
  CUmemoryPool pool = reinterpret_cast<CUmemoryPool>(std::uintptr_t{1});
  EXPECT_EQ(SP(cuPointerGetAttribute)(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p + 10), CUDA_SUCCESS);
  EXPECT_EQ(type, static_cast<unsigned>(CU_MEMORYTYPE_DEVICE));
  EXPECT_EQ(SP(cuPointerGetAttribute)(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p), CUDA_SUCCESS);
  EXPECT_EQ(ordinal, 0);
  EXPECT_EQ(SP(cuPointerGetAttribute)(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, p), CUDA_SUCCESS);
  EXPECT_EQ(owner, context);
  EXPECT_EQ(SP(cuPointerGetAttribute)(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p + 4000), CUDA_SUCCESS);
  EXPECT_EQ(start, p);
  EXPECT_EQ(SP(cuPointerGetAttribute)(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p), CUDA_SUCCESS);
  EXPECT_EQ(size, 5000u);
  EXPECT_EQ(SP(cuPointerGetAttribute)(&pool, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, p), CUDA_SUCCESS);
  EXPECT_EQ(pool, nullptr) << "cuMemAlloc memory belongs to no pool";

  CUpointer_attribute attributes[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_CONTEXT,
                                      CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                      CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
  unsigned int many_type = 0;
  CUcontext many_owner = nullptr;
  CUdeviceptr many_start = 0;
  size_t many_size = 0;
  int many_ordinal = -1;
  void* data[] = {&many_type, &many_owner, &many_start, &many_size, &many_ordinal};
  ASSERT_EQ(SP(cuPointerGetAttributes)(5, attributes, data, p + 1), CUDA_SUCCESS);
  EXPECT_EQ(many_type, static_cast<unsigned>(CU_MEMORYTYPE_DEVICE));
  EXPECT_EQ(many_owner, context);
  EXPECT_EQ(many_start, p);
  EXPECT_EQ(many_size, 5000u);
  EXPECT_EQ(many_ordinal, 0);
  ASSERT_EQ(SP(cuMemFree_v2)(p), CUDA_SUCCESS);
}

TEST_F(ServeMalloc, TheAddressRangeIsTheBlocksOwnFromItsBaseAndFromInside) {
  CUdeviceptr p = 0;
  ASSERT_NO_FATAL_FAILURE(served_alloc(&p, 777));
  CUdeviceptr base = 0;
  size_t size = 0;
  ASSERT_EQ(SP(cuMemGetAddressRange_v2)(&base, &size, p), CUDA_SUCCESS);
  EXPECT_EQ(base, p);
  EXPECT_EQ(size, 777u);
  base = 0;
  size = 0;
  ASSERT_EQ(SP(cuMemGetAddressRange_v2)(&base, &size, p + 700), CUDA_SUCCESS);
  EXPECT_EQ(base, p);
  EXPECT_EQ(size, 777u);
  ASSERT_EQ(SP(cuMemFree_v2)(p), CUDA_SUCCESS);
}

TEST_F(ServeMalloc, CopiesAndMemsetsReachTheMemory) {
  constexpr size_t kBytes = 64 * 1024;
  CUdeviceptr a = 0;
  CUdeviceptr b = 0;
  ASSERT_NO_FATAL_FAILURE(served_alloc(&a, kBytes));
  ASSERT_NO_FATAL_FAILURE(served_alloc(&b, kBytes));
  std::vector<unsigned char> in(kBytes), out(kBytes, 0);
  for (size_t i = 0; i < kBytes; ++i) in[i] = static_cast<unsigned char>(i * 7);
  ASSERT_EQ(SP(cuMemcpyHtoD_v2)(a, in.data(), kBytes), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemcpyDtoD_v2)(b, a, kBytes), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemcpyDtoH_v2)(out.data(), b, kBytes), CUDA_SUCCESS);
  EXPECT_EQ(in, out);
  ASSERT_EQ(SP(cuMemsetD8_v2)(b, 0x5a, kBytes), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemcpyDtoH_v2)(out.data(), b, kBytes), CUDA_SUCCESS);
  EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](unsigned char c) { return c == 0x5a; }));
  ASSERT_EQ(SP(cuMemFree_v2)(a), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemFree_v2)(b), CUDA_SUCCESS);
}

TEST_F(ServeMalloc, FreeOfNullSucceeds) { EXPECT_EQ(SP(cuMemFree_v2)(0), CUDA_SUCCESS); }

TEST_F(ServeMalloc, ADoubleFreeOrAnInteriorPointerIsInvalidValue) {
  CUdeviceptr p = 0;
  ASSERT_NO_FATAL_FAILURE(served_alloc(&p, 4096));
  EXPECT_EQ(SP(cuMemFree_v2)(p + 512), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(SP(cuMemFree_v2)(p), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuMemFree_v2)(p), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(ServeMalloc, AFreeOfTheDriversOwnMemoryIsForwardedUnchanged) {
  auto driver_alloc = fake_entry<decltype(&::cuMemAlloc_v2)>("cuMemAlloc_v2");
  ASSERT_NE(driver_alloc, nullptr);
  CUdeviceptr foreign = 0;
  ASSERT_EQ(driver_alloc(&foreign, kMiB), CUDA_SUCCESS);
  const auto driver_frees = hooks_test::fake_calls("cuMemFree_v2");
  EXPECT_EQ(SP(cuMemFree_v2)(foreign), CUDA_SUCCESS);
  EXPECT_EQ(hooks_test::fake_calls("cuMemFree_v2"), driver_frees + 1);
  // Nobody's memory: the driver's own answer.
  auto driver_free = fake_entry<decltype(&::cuMemFree_v2)>("cuMemFree_v2");
  EXPECT_EQ(SP(cuMemFree_v2)(foreign), driver_free(foreign));
}

TEST_F(ServeMalloc, ThePitchIsTheDriversAndTheBlockHoldsEveryRow) {
  auto driver_pitch = fake_entry<decltype(&::cuMemAllocPitch_v2)>("cuMemAllocPitch_v2");
  auto driver_free = fake_entry<decltype(&::cuMemFree_v2)>("cuMemFree_v2");
  ASSERT_NE(driver_pitch, nullptr);
  for (size_t width : {size_t{1}, size_t{100}, size_t{512}, size_t{513}, size_t{1000}, size_t{4096}}) {
    CUdeviceptr reference = 0;
    size_t reference_pitch = 0;
    ASSERT_EQ(driver_pitch(&reference, &reference_pitch, width, 10, 4), CUDA_SUCCESS);
    ASSERT_EQ(driver_free(reference), CUDA_SUCCESS);
    const std::uint64_t before = served();
    CUdeviceptr p = 0;
    size_t pitch = 0;
    ASSERT_EQ(SP(cuMemAllocPitch_v2)(&p, &pitch, width, 10, 4), CUDA_SUCCESS);
    EXPECT_EQ(pitch, reference_pitch) << "width " << width;
    EXPECT_EQ(served(), before + pitch * 10);
    CUdeviceptr base = 0;
    size_t size = 0;
    ASSERT_EQ(SP(cuMemGetAddressRange_v2)(&base, &size, p + pitch * 9), CUDA_SUCCESS);
    EXPECT_EQ(base, p);
    EXPECT_EQ(size, pitch * 10);
    ASSERT_EQ(SP(cuMemFree_v2)(p), CUDA_SUCCESS);
  }
  CUdeviceptr p = 0;
  size_t pitch = 0;
  EXPECT_EQ(SP(cuMemAllocPitch_v2)(&p, &pitch, 100, 10, 3), driver_pitch(&p, &pitch, 100, 10, 3))
      << "a bad element size is the driver's error";
  EXPECT_EQ(SP(cuMemAllocPitch_v2)(&p, &pitch, 0, 10, 4), driver_pitch(&p, &pitch, 0, 10, 4));
}

TEST_F(ServeMalloc, TheCapCountsServedMemoryAndRefusesBeyondIt) {
  const std::uint64_t charged_before = limit_info(0).charged;
  CUdeviceptr big = 0;
  ASSERT_NO_FATAL_FAILURE(served_alloc(&big, 200 * kMiB));
  EXPECT_GE(limit_info(0).charged, charged_before + 200 * kMiB);
  CUdeviceptr more = 0;
  EXPECT_EQ(SP(cuMemAlloc_v2)(&more, 100 * kMiB), CUDA_ERROR_OUT_OF_MEMORY) << "the cap is 256 MiB";
  EXPECT_EQ(more, 0u);
  size_t free_bytes = 0, total_bytes = 0;
  ASSERT_EQ(SP(cuMemGetInfo_v2)(&free_bytes, &total_bytes), CUDA_SUCCESS);
  EXPECT_EQ(total_bytes, 256 * kMiB);
  EXPECT_LE(free_bytes, 56 * kMiB);
  ASSERT_EQ(SP(cuMemFree_v2)(big), CUDA_SUCCESS);
  EXPECT_EQ(served(), 0u);
  EXPECT_EQ(limit_info(0).charged, charged_before) << "the freed granules went back to the device";
  ASSERT_NO_FATAL_FAILURE(served_alloc(&more, 250 * kMiB)) << "room again";
  ASSERT_EQ(SP(cuMemFree_v2)(more), CUDA_SUCCESS);
  EXPECT_EQ(served(), 0u);
}

// A host function standing for a kernel still writing the block when the program frees it.
struct PendingWrite {
  CUdeviceptr target = 0;
  size_t bytes = 0;
  std::atomic<bool> done{false};
};
void write_later(void* data) {
  auto* write = static_cast<PendingWrite*>(data);
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  std::memset(reinterpret_cast<void*>(write->target), 0xee, write->bytes);  // the fake's memory is the host's
  write->done.store(true);
}
constexpr size_t kBytes = 256 * 1024;
// Queues the write of a whole block of kBytes on `on`.
void write_on(CUstream on, CUdeviceptr block, PendingWrite* write) {
  write->target = block;
  write->bytes = kBytes;
  ASSERT_EQ(SP(cuLaunchHostFunc)(on, write_later, write), CUDA_SUCCESS);
}

TEST_F(ServeMalloc, AFreeWaitsForPendingStreamWorkBeforeTheBlockIsReused) {
  CUdeviceptr p = 0;
  ASSERT_NO_FATAL_FAILURE(served_alloc(&p, kBytes));
  PendingWrite write;
  ASSERT_NO_FATAL_FAILURE(write_on(stream, p, &write));
  ASSERT_EQ(SP(cuMemFree_v2)(p), CUDA_SUCCESS);
  EXPECT_TRUE(write.done.load()) << "cuMemFree returned while the stream still wrote the block";
  CUdeviceptr q = 0;
  ASSERT_NO_FATAL_FAILURE(served_alloc(&q, kBytes));
  ASSERT_EQ(SP(cuMemsetD8_v2)(q, 0, kBytes), CUDA_SUCCESS);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::vector<unsigned char> out(kBytes, 1);
  ASSERT_EQ(SP(cuMemcpyDtoH_v2)(out.data(), q, kBytes), CUDA_SUCCESS);
  EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](unsigned char c) { return c == 0; }));
  ASSERT_EQ(SP(cuMemFree_v2)(q), CUDA_SUCCESS);
}

TEST_F(ServeMalloc, AStreamOrderedFreeOfAServedBlockIsNotReusedWhileItsStreamRuns) {
  CUdeviceptr p = 0;
  ASSERT_NO_FATAL_FAILURE(served_alloc(&p, kBytes));
  PendingWrite write;
  ASSERT_NO_FATAL_FAILURE(write_on(stream, p, &write));
  ASSERT_EQ(SP(cuMemFreeAsync)(p, stream), CUDA_SUCCESS);  // the driver accepts it for cuMemAlloc memory
  CUdeviceptr q = 0;
  ASSERT_NO_FATAL_FAILURE(served_alloc(&q, kBytes));
  if (!write.done.load()) {
    EXPECT_TRUE(q + kBytes <= p || p + kBytes <= q) << "a block the stream still writes was handed out";
  }
  ASSERT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemFree_v2)(q), CUDA_SUCCESS);
}

TEST_F(ServeMalloc, DestroyingAContextFreesWhatItWasServed) {
  CUcontext created = nullptr;
  ASSERT_EQ(SP(cuCtxCreate_v4)(&created, nullptr, 0, device), CUDA_SUCCESS);
  const std::uint64_t charged_before = limit_info(0).charged;
  CUdeviceptr p = 0;
  ASSERT_NO_FATAL_FAILURE(served_alloc(&p, 100 * kMiB));
  CUcontext owner = nullptr;
  EXPECT_EQ(SP(cuPointerGetAttribute)(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, p), CUDA_SUCCESS);
  EXPECT_EQ(owner, created);
  EXPECT_EQ(served(), 100 * kMiB);
  ASSERT_EQ(SP(cuCtxDestroy_v2)(created), CUDA_SUCCESS);
  EXPECT_EQ(served(), 0u);
  EXPECT_LE(limit_info(0).charged, charged_before);
  ASSERT_EQ(SP(cuCtxSetCurrent)(context), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuMemFree_v2)(p), CUDA_ERROR_INVALID_VALUE) << "freed with its context";
}

TEST_F(ServeMalloc, ThreadsAllocatingAndFreeingNeverGetOverlappingBlocks) {
  std::mutex live_mutex;
  std::map<CUdeviceptr, size_t> live;
  std::atomic<int> overlaps{0};
  std::atomic<int> failures{0};
  auto worker = [&](unsigned seed) {
    if (SP(cuCtxSetCurrent)(context) != CUDA_SUCCESS) {
      ++failures;
      return;
    }
    std::mt19937 random(seed);
    std::vector<std::pair<CUdeviceptr, size_t>> mine;
    for (int step = 0; step < 300; ++step) {
      if (mine.empty() || (mine.size() < 8 && random() % 2 == 0)) {
        const size_t bytes = 1 + random() % (512 * 1024);
        CUdeviceptr p = 0;
        if (SP(cuMemAlloc_v2)(&p, bytes) != CUDA_SUCCESS) {
          ++failures;
          continue;
        }
        {
          std::lock_guard lock(live_mutex);
          auto next = live.lower_bound(p);
          if (next != live.end() && next->first < p + bytes) ++overlaps;
          if (next != live.begin() && std::prev(next)->first + std::prev(next)->second > p) ++overlaps;
          live[p] = bytes;
        }
        mine.emplace_back(p, bytes);
      } else {
        const size_t at = random() % mine.size();
        const auto [p, bytes] = mine[at];
        mine.erase(mine.begin() + static_cast<std::ptrdiff_t>(at));
        {
          std::lock_guard lock(live_mutex);
          live.erase(p);
        }
        if (SP(cuMemFree_v2)(p) != CUDA_SUCCESS) ++failures;
      }
    }
    for (const auto& [p, bytes] : mine) {
      {
        std::lock_guard lock(live_mutex);
        live.erase(p);
      }
      if (SP(cuMemFree_v2)(p) != CUDA_SUCCESS) ++failures;
    }
  };
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < 6; ++t) threads.emplace_back(worker, 1234 + t);
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(served(), 0u);
}

// ---- children: other settings, and a primary context reset ----

using hooks_test::capture_stderr;
using hooks_test::read_text;
size_t lines_with(const std::string& text, const std::string& needle) { return hooks_test::occurrences(text, needle); }
void make_primary_current() {
  ASSERT_EQ(SP(cuInit)(0), CUDA_SUCCESS);
  CUcontext primary = nullptr;
  ASSERT_EQ(SP(cuDevicePrimaryCtxRetain)(&primary, 0), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuCtxSetCurrent)(primary), CUDA_SUCCESS);
}

// With the setting off (or not understood), cuMemAlloc is the driver's: a forwarded, counted one.
TEST(ServeMallocChild, DISABLED_NotServed) {
  if (const char* log = std::getenv("SERVE_CHILD_STDERR")) capture_stderr(log);
  make_primary_current();
  const auto driver_allocs = hooks_test::fake_calls("cuMemAlloc_v2");
  CUdeviceptr p = 0;
  ASSERT_EQ(SP(cuMemAlloc_v2)(&p, kMiB), CUDA_SUCCESS);
  EXPECT_EQ(hooks_test::fake_calls("cuMemAlloc_v2"), driver_allocs + 1);
  EXPECT_EQ(served(), 0u);
  EXPECT_EQ(limit_info(0).forwarded, kMiB);
  ASSERT_EQ(SP(cuMemFree_v2)(p), CUDA_SUCCESS);
}

TEST(ServeMallocChild, DISABLED_APrimaryContextResetFreesWhatItWasServed) {
  make_primary_current();
  CUdeviceptr p = 0;
  ASSERT_EQ(SP(cuMemAlloc_v2)(&p, 200 * kMiB), CUDA_SUCCESS);
  ASSERT_EQ(served(), 200 * kMiB);
  ASSERT_EQ(SP(cuDevicePrimaryCtxReset_v2)(0), CUDA_SUCCESS);
  EXPECT_EQ(served(), 0u);
  EXPECT_EQ(limit_info(0).charged, 0u);
  make_primary_current();
  EXPECT_EQ(SP(cuMemAlloc_v2)(&p, 200 * kMiB), CUDA_SUCCESS) << "the cap is free again";
  EXPECT_EQ(SP(cuMemFree_v2)(p), CUDA_SUCCESS);
}

// No process cap, a group of one with a limit: served memory is charged on the group once.
TEST(ServeMallocChild, DISABLED_TheGroupCountsServedMemoryOnce) {
  make_primary_current();
  size_t free_start = 0, free_bytes = 0, total_bytes = 0;
  ASSERT_EQ(SP(cuMemGetInfo_v2)(&free_start, &total_bytes), CUDA_SUCCESS);
  EXPECT_EQ(total_bytes, 512 * kMiB);
  CUdeviceptr p = 0;
  ASSERT_EQ(SP(cuMemAlloc_v2)(&p, 100 * kMiB), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemGetInfo_v2)(&free_bytes, &total_bytes), CUDA_SUCCESS);
  EXPECT_EQ(free_bytes, free_start - 100 * kMiB) << "charged once, as pool memory";
  EXPECT_EQ(served(), 100 * kMiB);
  EXPECT_EQ(limit_info(0).forwarded, 0u);
  CUdeviceptr refused = 0;
  EXPECT_EQ(SP(cuMemAlloc_v2)(&refused, 450 * kMiB), CUDA_ERROR_OUT_OF_MEMORY) << "the group's limit";
  ASSERT_EQ(SP(cuMemFree_v2)(p), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemGetInfo_v2)(&free_bytes, &total_bytes), CUDA_SUCCESS);
  EXPECT_EQ(free_bytes, free_start) << "given back to the group";
}

class ServeMallocSettings : public ::testing::Test {
 protected:
  std::string log_path = "/tmp/streampool_serve_child_" + std::to_string(getpid()) + ".log";
  void TearDown() override { std::remove(log_path.c_str()); }
};

TEST_F(ServeMallocSettings, ABadValueIsOneLineAndNothingIsServed) {
  ASSERT_EQ(hooks_test::run_child_test("ServeMallocChild.DISABLED_NotServed",
                                       {"STREAMPOOL_SERVE_MALLOC=yes please", "SERVE_CHILD_STDERR=" + log_path}),
            0);
  const std::string text = read_text(log_path);
  EXPECT_EQ(lines_with(text, "streampool: "), 1u) << text;
  EXPECT_EQ(lines_with(text, "STREAMPOOL_SERVE_MALLOC value 'yes please'"), 1u) << text;
}

TEST_F(ServeMallocSettings, OffMeansTheDriversAllocationsSilently) {
  ASSERT_EQ(hooks_test::run_child_test("ServeMallocChild.DISABLED_NotServed",
                                       {"STREAMPOOL_SERVE_MALLOC=0", "SERVE_CHILD_STDERR=" + log_path}),
            0);
  EXPECT_EQ(read_text(log_path), "");
}

TEST_F(ServeMallocSettings, TheGroupBudgetCountsServedMemoryOnce) {
  char pattern[] = "/tmp/streampool-serve-group-XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  const std::string dir = pattern;
  EXPECT_EQ(hooks_test::run_child_test("ServeMallocChild.DISABLED_TheGroupCountsServedMemoryOnce",
                                       {"STREAMPOOL_LIMIT=", "STREAMPOOL_GROUP=serve", "STREAMPOOL_GROUP_DIR=" + dir,
                                        "STREAMPOOL_GROUP_LIMIT=512M"}),
            0);
  const std::string command = "rm -rf '" + dir + "'";
  EXPECT_EQ(std::system(command.c_str()), 0);
}

TEST_F(ServeMallocSettings, APrimaryContextResetFreesWhatItWasServed) {
  EXPECT_EQ(hooks_test::run_child_test("ServeMallocChild.DISABLED_APrimaryContextResetFreesWhatItWasServed", {}), 0);
}

}  // namespace
