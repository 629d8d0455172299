// Every driver call streampool makes itself can fail: reserve, create, map, set access, release,
// unmap (the VMM backing) and event create, record, query, stream wait (the markers). The fake
// driver's failure switch (STREAMPOOL_FAKE_FAIL, streampool_fake_fail_call) makes the Nth call of
// one of them fail, and each test checks what that failure left behind: the program's call
// answers a CUDA error (or succeeds where a fallback is legitimate), the pool's statistics match
// what the driver has mapped, later allocations work, and once everything is freed and trimmed
// the driver holds no physical allocation of the pool's any more.
//
// Marker scenarios run in a child process each: markers are pooled per context for the life of
// the process, so only a fresh process is sure to create (and so to fail creating) an event.
#include "fault_switch.hpp"
#include "hooks_test_api.hpp"

namespace {

using hooks_test::fake_driver;

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kGranule = 2 * kMiB;   // the fake's VMM granularity
constexpr size_t kChunk = 32 * kMiB;    // a pool's first growth

struct VmmLive {
  unsigned long long physical = 0;  // physical allocations alive in the driver
  unsigned long long mapped = 0;    // bytes mapped
};

VmmLive vmm_live() {
  using Live = void (*)(unsigned long long*, unsigned long long*, unsigned long long*, unsigned long long*);
  VmmLive live;
  auto query = reinterpret_cast<Live>(dlsym(fake_driver(), "streampool_fake_vmm_live"));
  if (query != nullptr) query(&live.physical, &live.mapped, nullptr, nullptr);
  return live;
}

using hooks_test::clear_failures;
using hooks_test::fail_call;
using hooks_test::fail_calls;
using hooks_test::injected;

class FaultHooks : public hooks_test::DriverTest {
 protected:
  void SetUp() override {
    DriverTest::SetUp();
    ASSERT_NE(dlsym(fake_driver(), "streampool_fake_fail_calls"), nullptr) << "run over the fake driver";
    if (std::getenv("STREAMPOOL_FAKE_FAIL") == nullptr) clear_failures();  // injected() counts from here
    ASSERT_EQ(SP(cuStreamCreate)(&other, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    baseline = vmm_live();
  }
  void TearDown() override {
    clear_failures();
    SP(cuStreamSynchronize)(stream);
    SP(cuStreamSynchronize)(other);
    if (pool != nullptr) SP(cuMemPoolDestroy)(pool);
    SP(cuStreamDestroy_v2)(other);
    DriverTest::TearDown();
  }

  // A pool that keeps what it maps until trimmed (a synchronize releases nothing).
  void make_pool(size_t max_size = 0) {
    pool = create_device_pool(max_size);
    ASSERT_NE(pool, nullptr);
    std::uint64_t keep_everything = ~std::uint64_t{0};
    ASSERT_EQ(SP(cuMemPoolSetAttribute)(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep_everything), CUDA_SUCCESS);
  }

  CUresult allocate(CUdeviceptr* pointer, size_t bytes, CUstream on) {
    return SP(cuMemAllocFromPoolAsync)(pointer, bytes, pool, on);
  }

  std::uint64_t reserved() { return pool_attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT); }
  std::uint64_t used() { return pool_attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT); }
  unsigned long long mapped_by_pool() { return vmm_live().mapped - baseline.mapped; }
  unsigned long long physical_of_pool() { return vmm_live().physical - baseline.physical; }

  // The pool's statistics say what the driver has: RESERVED is what is mapped, and the driver
  // holds `units` physical allocations (by default one a granule: the first chunk maps granule
  // by granule; a growth of a pool filling up maps one 32 MiB unit).
  void expect_statistics_match_the_driver(std::uint64_t used_bytes, std::uint64_t units = 0) {
    EXPECT_EQ(used(), used_bytes);
    EXPECT_EQ(reserved(), mapped_by_pool());
    EXPECT_EQ(physical_of_pool(), units != 0 ? units : reserved() / kGranule);
  }

  // A later allocation works; after it is freed, the stream synchronized and the pool trimmed,
  // the driver holds nothing of the pool's.
  void expect_later_allocation_works_and_nothing_leaks() {
    CUdeviceptr later = 0;
    ASSERT_EQ(allocate(&later, kMiB, stream), CUDA_SUCCESS);
    EXPECT_NE(later, 0u);
    EXPECT_EQ(SP(cuMemsetD8_v2)(later, 0x5a, kMiB), CUDA_SUCCESS);  // the memory is really there
    ASSERT_EQ(SP(cuMemFreeAsync)(later, stream), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuMemPoolTrimTo)(pool, 0), CUDA_SUCCESS);
    EXPECT_EQ(used(), 0u);
    EXPECT_EQ(reserved(), 0u);
    EXPECT_EQ(mapped_by_pool(), 0u);
    EXPECT_EQ(physical_of_pool(), 0u);
  }

  CUstream other = nullptr;
  CUmemoryPool pool = nullptr;
  VmmLive baseline;
};

// --- the VMM backing ---------------------------------------------------------------------------

TEST_F(FaultHooks, FailedReserveOnTheFirstGrowthIsOutOfMemoryAndLeavesThePoolEmpty) {
  make_pool();
  fail_call("cuMemAddressReserve", 1, CUDA_ERROR_OUT_OF_MEMORY);
  CUdeviceptr pointer = 1;

  EXPECT_EQ(allocate(&pointer, kMiB, stream), CUDA_ERROR_OUT_OF_MEMORY);

  EXPECT_EQ(injected("cuMemAddressReserve"), 1u);
  EXPECT_EQ(pointer, 0u);
  expect_statistics_match_the_driver(0);
  EXPECT_EQ(reserved(), 0u);
  expect_later_allocation_works_and_nothing_leaks();
}

TEST_F(FaultHooks, FailedReserveWithAnotherErrorIsThatErrorClass) {
  make_pool();
  fail_call("cuMemAddressReserve", 1, CUDA_ERROR_UNKNOWN);
  CUdeviceptr pointer = 1;

  EXPECT_EQ(allocate(&pointer, kMiB, stream), CUDA_ERROR_UNKNOWN);

  EXPECT_EQ(pointer, 0u);
  expect_statistics_match_the_driver(0);
  expect_later_allocation_works_and_nothing_leaks();
}

// The first growth maps a 32 MiB chunk granule by granule; when that fails, the request maps
// only the granule it needs, as a device short of memory would have it.
TEST_F(FaultHooks, OneFailedCreateDuringGrowthFallsBackToTheGranulesTheRequestNeeds) {
  make_pool();
  fail_call("cuMemCreate", 5, CUDA_ERROR_OUT_OF_MEMORY);
  CUdeviceptr pointer = 0;

  ASSERT_EQ(allocate(&pointer, kMiB, stream), CUDA_SUCCESS);

  EXPECT_EQ(injected("cuMemCreate"), 1u);
  EXPECT_EQ(reserved(), kGranule);
  expect_statistics_match_the_driver(kMiB);
  ASSERT_EQ(SP(cuMemFreeAsync)(pointer, stream), CUDA_SUCCESS);
  expect_later_allocation_works_and_nothing_leaks();
}

TEST_F(FaultHooks, CreateFailingAlwaysIsOutOfMemoryWithNothingMapped) {
  make_pool();
  fail_calls("cuMemCreate", 1, 0, CUDA_ERROR_OUT_OF_MEMORY);
  CUdeviceptr pointer = 1;

  EXPECT_EQ(allocate(&pointer, kMiB, stream), CUDA_ERROR_OUT_OF_MEMORY);

  EXPECT_EQ(pointer, 0u);
  expect_statistics_match_the_driver(0);
  EXPECT_EQ(reserved(), 0u);
  clear_failures();
  expect_later_allocation_works_and_nothing_leaks();
}

TEST_F(FaultHooks, CreateFailingWithAnotherErrorIsAnErrorWithNothingMapped) {
  make_pool();
  fail_call("cuMemCreate", 3, CUDA_ERROR_UNKNOWN);
  CUdeviceptr pointer = 1;

  EXPECT_EQ(allocate(&pointer, kMiB, stream), CUDA_ERROR_UNKNOWN);

  EXPECT_EQ(pointer, 0u);
  expect_statistics_match_the_driver(0);
  EXPECT_EQ(reserved(), 0u);
  expect_later_allocation_works_and_nothing_leaks();
}

TEST_F(FaultHooks, OneFailedMapDuringGrowthReleasesItsPhysicalMemoryAndFallsBack) {
  make_pool();
  fail_call("cuMemMap", 5, CUDA_ERROR_OUT_OF_MEMORY);
  CUdeviceptr pointer = 0;

  ASSERT_EQ(allocate(&pointer, kMiB, stream), CUDA_SUCCESS);

  EXPECT_EQ(injected("cuMemMap"), 1u);
  EXPECT_EQ(reserved(), kGranule);
  expect_statistics_match_the_driver(kMiB);
  ASSERT_EQ(SP(cuMemFreeAsync)(pointer, stream), CUDA_SUCCESS);
  expect_later_allocation_works_and_nothing_leaks();
}

TEST_F(FaultHooks, MapFailingAlwaysIsOutOfMemoryWithNothingLeft) {
  make_pool();
  fail_calls("cuMemMap", 1, 0, CUDA_ERROR_OUT_OF_MEMORY);
  CUdeviceptr pointer = 1;

  EXPECT_EQ(allocate(&pointer, kMiB, stream), CUDA_ERROR_OUT_OF_MEMORY);

  EXPECT_EQ(pointer, 0u);
  expect_statistics_match_the_driver(0);
  clear_failures();
  expect_later_allocation_works_and_nothing_leaks();
}

TEST_F(FaultHooks, OneFailedSetAccessDuringGrowthUnmapsThatGranuleAndFallsBack) {
  make_pool();
  fail_call("cuMemSetAccess", 5, CUDA_ERROR_OUT_OF_MEMORY);
  CUdeviceptr pointer = 0;

  ASSERT_EQ(allocate(&pointer, kMiB, stream), CUDA_SUCCESS);

  EXPECT_EQ(injected("cuMemSetAccess"), 1u);
  EXPECT_EQ(reserved(), kGranule);
  expect_statistics_match_the_driver(kMiB);
  ASSERT_EQ(SP(cuMemFreeAsync)(pointer, stream), CUDA_SUCCESS);
  expect_later_allocation_works_and_nothing_leaks();
}

TEST_F(FaultHooks, SetAccessFailingAlwaysIsAnErrorWithNothingLeft) {
  make_pool();
  fail_calls("cuMemSetAccess", 1, 0, CUDA_ERROR_UNKNOWN);
  CUdeviceptr pointer = 1;

  EXPECT_EQ(allocate(&pointer, kMiB, stream), CUDA_ERROR_UNKNOWN);

  EXPECT_EQ(pointer, 0u);
  expect_statistics_match_the_driver(0);
  clear_failures();
  expect_later_allocation_works_and_nothing_leaks();
}

// The mapping holds the physical memory once the handle is released: a release that fails must
// not leave the handle holding it after the granule is unmapped.
TEST_F(FaultHooks, FailedReleaseOfAMappedHandleLeaksNoPhysicalMemory) {
  make_pool();
  fail_call("cuMemRelease", 1, CUDA_ERROR_UNKNOWN);
  CUdeviceptr pointer = 0;

  const CUresult result = allocate(&pointer, kMiB, stream);

  EXPECT_EQ(injected("cuMemRelease"), 1u);
  ASSERT_EQ(result, CUDA_SUCCESS);
  expect_statistics_match_the_driver(kMiB);
  ASSERT_EQ(SP(cuMemFreeAsync)(pointer, stream), CUDA_SUCCESS);
  expect_later_allocation_works_and_nothing_leaks();
}

// A granule the driver would not unmap is still mapped: the pool keeps counting it, and gives it
// back on the next trim.
TEST_F(FaultHooks, FailedUnmapDuringTrimKeepsTheGranuleCountedUntilTheNextTrim) {
  make_pool();
  CUdeviceptr pointer = 0;
  ASSERT_EQ(allocate(&pointer, kMiB, stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemFreeAsync)(pointer, stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
  ASSERT_EQ(reserved(), kChunk);
  fail_call("cuMemUnmap", 3, CUDA_ERROR_UNKNOWN);

  EXPECT_EQ(SP(cuMemPoolTrimTo)(pool, 0), CUDA_SUCCESS);

  EXPECT_EQ(injected("cuMemUnmap"), 1u);
  EXPECT_EQ(reserved(), kGranule);
  expect_statistics_match_the_driver(0);
  EXPECT_EQ(SP(cuMemPoolTrimTo)(pool, 0), CUDA_SUCCESS);
  EXPECT_EQ(reserved(), 0u);
  expect_statistics_match_the_driver(0);
  expect_later_allocation_works_and_nothing_leaks();
}

TEST_F(FaultHooks, FailedUnmapWhileReleasingAtASynchronizeKeepsTheGranuleCounted) {
  make_pool();
  CUdeviceptr pointer = 0;
  ASSERT_EQ(allocate(&pointer, kMiB, stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemFreeAsync)(pointer, stream), CUDA_SUCCESS);
  std::uint64_t release_everything = 0;
  ASSERT_EQ(SP(cuMemPoolSetAttribute)(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &release_everything), CUDA_SUCCESS);
  fail_call("cuMemUnmap", 1, CUDA_ERROR_UNKNOWN);

  EXPECT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);

  EXPECT_EQ(injected("cuMemUnmap"), 1u);
  EXPECT_EQ(reserved(), kGranule);
  expect_statistics_match_the_driver(0);
  expect_later_allocation_works_and_nothing_leaks();
}

// Two faults in one growth: a map fails, and undoing the granules mapped before it, one unmap.
TEST_F(FaultHooks, FailedUnmapWhileUndoingAFailedGrowthLeavesTheGranuleFreeAndCounted) {
  make_pool();
  fail_call("cuMemMap", 5, CUDA_ERROR_OUT_OF_MEMORY);
  fail_call("cuMemUnmap", 2, CUDA_ERROR_UNKNOWN);
  CUdeviceptr pointer = 1;

  const CUresult result = allocate(&pointer, kMiB, stream);

  EXPECT_EQ(injected("cuMemUnmap"), 1u);
  if (result == CUDA_SUCCESS) {
    // The retry after giving the free granules back maps the chunk as one unit (a growth after a
    // release: see AddressSpace::grow_and_take).
    expect_statistics_match_the_driver(kMiB, 1);
    ASSERT_EQ(SP(cuMemFreeAsync)(pointer, stream), CUDA_SUCCESS);
  } else {
    EXPECT_EQ(pointer, 0u);
    expect_statistics_match_the_driver(0);
  }
  EXPECT_EQ(reserved(), mapped_by_pool());
  expect_later_allocation_works_and_nothing_leaks();
}

TEST_F(FaultHooks, GrowthOfAPoolInUseSurvivesAFailedMapAndKeepsTheLiveBlocks) {
  make_pool();
  CUdeviceptr first = 0;
  ASSERT_EQ(allocate(&first, kChunk, stream), CUDA_SUCCESS);  // the whole first chunk
  fail_calls("cuMemMap", 1, 0, CUDA_ERROR_OUT_OF_MEMORY);
  CUdeviceptr second = 1;

  EXPECT_EQ(allocate(&second, 4 * kMiB, stream), CUDA_ERROR_OUT_OF_MEMORY);

  EXPECT_EQ(second, 0u);
  EXPECT_EQ(reserved(), kChunk);
  expect_statistics_match_the_driver(kChunk);
  clear_failures();
  ASSERT_EQ(allocate(&second, 4 * kMiB, stream), CUDA_SUCCESS);
  // The first chunk's granules and one 32 MiB unit: the pool was full, so it grew a chunk ahead.
  EXPECT_EQ(reserved(), 2 * kChunk);
  expect_statistics_match_the_driver(kChunk + 4 * kMiB, kChunk / kGranule + 1);
  ASSERT_EQ(SP(cuMemFreeAsync)(second, stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemFreeAsync)(first, stream), CUDA_SUCCESS);
  expect_later_allocation_works_and_nothing_leaks();
}

TEST_F(FaultHooks, TheFailureSwitchIsReadFromTheEnvironment) {
  EXPECT_EQ(hooks_test::run_child_test("FaultChild.DISABLED_FirstReserveFailsByEnvironment",
                                       {"STREAMPOOL_FAKE_FAIL=cuMemAddressReserve:1:CUDA_ERROR_OUT_OF_MEMORY"}),
            0);
}

// --- the markers -------------------------------------------------------------------------------

TEST_F(FaultHooks, FailedEventCreateForAMarkerLeavesTheAllocationServed) {
  EXPECT_EQ(hooks_test::run_child_test("FaultChild.DISABLED_MarkerAfterGrowth", {"FAULT=cuEventCreate"}), 0);
}

TEST_F(FaultHooks, FailedEventRecordForAMarkerLeavesTheAllocationServed) {
  EXPECT_EQ(hooks_test::run_child_test("FaultChild.DISABLED_MarkerAfterGrowth", {"FAULT=cuEventRecord"}), 0);
}

TEST_F(FaultHooks, FailedEventQueryOfAMarkerCountsAsNotCompleteYet) {
  EXPECT_EQ(hooks_test::run_child_test("FaultChild.DISABLED_MarkerQueried", {}), 0);
}

TEST_F(FaultHooks, FailedEventCreateForAnInsertedDependencyIsOutOfMemoryThenWorks) {
  EXPECT_EQ(hooks_test::run_child_test("FaultChild.DISABLED_InsertedDependency", {"FAULT=cuEventCreate"}), 0);
}

TEST_F(FaultHooks, FailedEventRecordForAnInsertedDependencyIsOutOfMemoryThenWorks) {
  EXPECT_EQ(hooks_test::run_child_test("FaultChild.DISABLED_InsertedDependency", {"FAULT=cuEventRecord"}), 0);
}

TEST_F(FaultHooks, FailedStreamWaitForAnInsertedDependencyIsOutOfMemoryThenWorks) {
  EXPECT_EQ(hooks_test::run_child_test("FaultChild.DISABLED_InsertedDependency", {"FAULT=cuStreamWaitEvent"}), 0);
}

// Run only as children of the tests above.
class FaultChild : public FaultHooks {
 protected:
  static const char* fault() {
    const char* name = std::getenv("FAULT");
    return name == nullptr ? "" : name;
  }
};

TEST_F(FaultChild, DISABLED_FirstReserveFailsByEnvironment) {
  make_pool();
  CUdeviceptr pointer = 1;

  EXPECT_EQ(allocate(&pointer, kMiB, stream), CUDA_ERROR_OUT_OF_MEMORY);

  EXPECT_EQ(injected("cuMemAddressReserve"), 1u);
  expect_statistics_match_the_driver(0);
  expect_later_allocation_works_and_nothing_leaks();
}

// A free pending on `stream` that `other` cannot use yet makes `other` grow the pool; streampool
// then records a marker on `stream` (ALLOW_OPPORTUNISTIC). The marker failing costs nothing but
// the knowledge it would have brought.
TEST_F(FaultChild, DISABLED_MarkerAfterGrowth) {
  make_pool();
  CUdeviceptr first = 0;
  ASSERT_EQ(allocate(&first, kChunk, stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemFreeAsync)(first, stream), CUDA_SUCCESS);
  fail_call(fault(), 1, CUDA_ERROR_UNKNOWN);
  CUdeviceptr second = 0;

  ASSERT_EQ(allocate(&second, kChunk, other), CUDA_SUCCESS);

  EXPECT_EQ(injected(fault()), 1u) << fault();
  EXPECT_NE(second, first);
  expect_statistics_match_the_driver(kChunk);
  // A host synchronize still makes the free reusable by any stream.
  ASSERT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
  CUdeviceptr third = 0;
  ASSERT_EQ(allocate(&third, kChunk, other), CUDA_SUCCESS);
  EXPECT_EQ(third, first);
  ASSERT_EQ(SP(cuMemFreeAsync)(third, other), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemFreeAsync)(second, other), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuStreamSynchronize)(other), CUDA_SUCCESS);
  expect_later_allocation_works_and_nothing_leaks();
}

TEST_F(FaultChild, DISABLED_MarkerQueried) {
  make_pool();
  CUdeviceptr first = 0;
  ASSERT_EQ(allocate(&first, kChunk, stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemFreeAsync)(first, stream), CUDA_SUCCESS);
  CUdeviceptr second = 0;
  ASSERT_EQ(allocate(&second, kChunk, other), CUDA_SUCCESS);  // records the marker on `stream`
  fail_calls("cuEventQuery", 1, 0, CUDA_ERROR_UNKNOWN);
  CUdeviceptr third = 0;

  ASSERT_EQ(allocate(&third, kChunk, other), CUDA_SUCCESS);

  EXPECT_GE(injected("cuEventQuery"), 1u);
  EXPECT_NE(third, first);  // an unanswered marker proves nothing
  expect_statistics_match_the_driver(2 * kChunk);
  EXPECT_EQ(reserved(), 3 * kChunk);
  clear_failures();
  ASSERT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
  for (CUdeviceptr pointer : {second, third}) ASSERT_EQ(SP(cuMemFreeAsync)(pointer, other), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuStreamSynchronize)(other), CUDA_SUCCESS);
  expect_later_allocation_works_and_nothing_leaks();
}

// A pool capped at one chunk cannot grow: the pending free on `stream` is reachable for `other`
// only through a dependency streampool inserts (ALLOW_INTERNAL_DEPENDENCIES): a marker on
// `stream` that `other` waits for. When inserting it fails, the answer is the one a pool without
// internal dependencies gives: out of memory. The next request inserts it and reuses the block.
TEST_F(FaultChild, DISABLED_InsertedDependency) {
  make_pool(kChunk);
  CUdeviceptr first = 0;
  ASSERT_EQ(allocate(&first, kChunk, stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemFreeAsync)(first, stream), CUDA_SUCCESS);
  fail_call(fault(), 1, CUDA_ERROR_UNKNOWN);
  CUdeviceptr second = 1;

  EXPECT_EQ(allocate(&second, kChunk, other), CUDA_ERROR_OUT_OF_MEMORY);

  EXPECT_EQ(injected(fault()), 1u) << fault();
  EXPECT_EQ(second, 0u);
  expect_statistics_match_the_driver(0);
  EXPECT_EQ(reserved(), kChunk);
  ASSERT_EQ(allocate(&second, kChunk, other), CUDA_SUCCESS);
  EXPECT_EQ(second, first);
  expect_statistics_match_the_driver(kChunk);
  ASSERT_EQ(SP(cuMemFreeAsync)(second, other), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuStreamSynchronize)(other), CUDA_SUCCESS);
  expect_later_allocation_works_and_nothing_leaks();
}

}  // namespace
