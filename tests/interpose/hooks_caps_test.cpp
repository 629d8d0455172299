// The process cap (STREAMPOOL_LIMIT) as the hooks enforce it over the fake driver: two devices of
// 1 GiB, capped at 256 MiB and 128 MiB. cuMemGetInfo answers within the cap; the pools' growth
// and the driver's own allocations (cuMemAlloc, cuMemAllocPitch, cuMemCreate) are charged and
// refused past it with CUDA_ERROR_OUT_OF_MEMORY; cached memory of other pools goes back first; the
// count is exact against an oracle (the pools' reserved statistic plus the driver allocations
// made) under random programs on both devices. CUDA arrays are charged as their own kind. Bad settings: one line on stderr, no cap.
#include <fcntl.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

#include "fault_switch.hpp"
#include "hooks_limit_info.hpp"
#include "hooks_test_api.hpp"
#include "streampool/streampool.h"

namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kCap0 = 256 * kMiB;
constexpr size_t kCap1 = 128 * kMiB;

// Before main, so before the first driver call (the fake and streampool read their settings then);
// a ctest or child environment that sets them wins.
const bool environment_set = [] {
  setenv("STREAMPOOL_FAKE_DEVICES", "2", 0);
  setenv("STREAMPOOL_FAKE_MEMORY", "1G", 0);
  setenv("STREAMPOOL_LIMIT", "0:256M,1:128MiB", 0);
  return true;
}();

using hooks_test::limit_info;
std::uint64_t charged(int device) { return limit_info(device).charged; }

class Caps : public hooks_test::DriverTest {
 protected:
  void SetUp() override {
    DriverTest::SetUp();
    ASSERT_EQ(SP(cuDeviceGet)(&device1, 1), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuDevicePrimaryCtxRetain)(&context1, device1), CUDA_SUCCESS);
  }
  void TearDown() override {
    SP(cuCtxSetCurrent)(context);
    DriverTest::TearDown();
  }

  CUmemoryPool pool_on(int ordinal, std::uint64_t threshold = 0) {
    CUmemPoolProps props{};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = ordinal;
    CUmemoryPool pool = nullptr;
    EXPECT_EQ(SP(cuMemPoolCreate)(&pool, &props), CUDA_SUCCESS);
    EXPECT_EQ(SP(cuMemPoolSetAttribute)(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold), CUDA_SUCCESS);
    return pool;
  }
  CUresult alloc_from(CUmemoryPool pool, size_t bytes, CUdeviceptr* pointer) {
    return SP(cuMemAllocFromPoolAsync)(pointer, bytes, pool, stream);
  }
  void free_now(CUdeviceptr pointer) {
    ASSERT_EQ(SP(cuMemFreeAsync)(pointer, stream), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
  }
  std::uint64_t reserved(CUmemoryPool pool) { return pool_attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT); }
  std::uint64_t default_reserved(int ordinal) {
    CUmemoryPool pool = nullptr;
    EXPECT_EQ(SP(cuDeviceGetDefaultMemPool)(&pool, ordinal), CUDA_SUCCESS);
    return reserved(pool);
  }
  void mem_info(CUcontext where, size_t* free_bytes, size_t* total_bytes) {
    ASSERT_EQ(SP(cuCtxSetCurrent)(where), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuMemGetInfo_v2)(free_bytes, total_bytes), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuCtxSetCurrent)(context), CUDA_SUCCESS);
  }

  CUdevice device1 = 1;
  CUcontext context1 = nullptr;
};

TEST_F(Caps, MemGetInfoAnswersTheCapAsTotalAndWhatTheProcessHoldsIsNotFree) {
  CUmemoryPool pool = pool_on(0);
  CUdeviceptr block = 0;
  ASSERT_EQ(alloc_from(pool, 40 * kMiB, &block), CUDA_SUCCESS);
  size_t free0 = 0, total0 = 0, free1 = 0, total1 = 0;
  mem_info(context, &free0, &total0);
  mem_info(context1, &free1, &total1);
  EXPECT_EQ(total0, kCap0);
  EXPECT_EQ(total1, kCap1);
  EXPECT_EQ(free0, kCap0 - charged(0));
  EXPECT_LE(free0, kCap0 - reserved(pool));
  EXPECT_LE(free0 + (total0 - free0), total0);
  free_now(block);
  ASSERT_EQ(SP(cuMemPoolDestroy)(pool), CUDA_SUCCESS);
}

TEST_F(Caps, AnAsyncAllocationPastTheCapFailsWithOutOfMemoryAndLeavesThePoolAsItWas) {
  CUmemoryPool pool = pool_on(1);
  CUdeviceptr block = 0;
  ASSERT_EQ(alloc_from(pool, 100 * kMiB, &block), CUDA_SUCCESS);
  const std::uint64_t reserved_before = reserved(pool);
  const std::uint64_t used_before = pool_attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT);
  CUdeviceptr refused = 1;
  EXPECT_EQ(alloc_from(pool, 40 * kMiB, &refused), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(refused, 0u);
  EXPECT_EQ(reserved(pool), reserved_before);
  EXPECT_EQ(pool_attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), used_before);
  EXPECT_LE(charged(1), kCap1);
  free_now(block);
  ASSERT_EQ(SP(cuMemPoolDestroy)(pool), CUDA_SUCCESS);
}

TEST_F(Caps, CuMemAllocIsChargedRefusedPastTheCapAndGivenBackByCuMemFree) {
  const std::uint64_t before = charged(0);
  CUdeviceptr block = 0;
  ASSERT_EQ(SP(cuMemAlloc_v2)(&block, 100 * kMiB), CUDA_SUCCESS);
  EXPECT_EQ(charged(0), before + 100 * kMiB);
  EXPECT_EQ(limit_info(0).forwarded, 100 * kMiB);
  CUdeviceptr refused = 1;
  EXPECT_EQ(SP(cuMemAlloc_v2)(&refused, kCap0), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(refused, 0u);
  EXPECT_EQ(hooks_test::fake_calls("cuMemAlloc_v2") > 0, true);
  ASSERT_EQ(SP(cuMemFree_v2)(block), CUDA_SUCCESS);
  EXPECT_EQ(charged(0), before);
}

TEST_F(Caps, ARefusedCuMemAllocNeverReachesTheDriver) {
  const unsigned long long calls = hooks_test::fake_calls("cuMemAlloc_v2");
  CUdeviceptr refused = 0;
  EXPECT_EQ(SP(cuMemAlloc_v2)(&refused, kCap0 + 1), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(hooks_test::fake_calls("cuMemAlloc_v2"), calls);
}

TEST_F(Caps, CuMemAllocPitchIsChargedThePitchTimesTheRowsAndUndoneWhenItDoesNotFit) {
  const std::uint64_t before = charged(0);
  CUdeviceptr block = 0;
  size_t pitch = 0;
  ASSERT_EQ(SP(cuMemAllocPitch_v2)(&block, &pitch, 1000, 4096, 4), CUDA_SUCCESS);
  EXPECT_EQ(charged(0), before + pitch * 4096);
  CUdeviceptr refused = 1;
  size_t refused_pitch = 0;
  EXPECT_EQ(SP(cuMemAllocPitch_v2)(&refused, &refused_pitch, 1 << 20, 512, 4), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(refused, 0u);
  EXPECT_EQ(charged(0), before + pitch * 4096);
  ASSERT_EQ(SP(cuMemFree_v2)(block), CUDA_SUCCESS);
  EXPECT_EQ(charged(0), before);
}

TEST_F(Caps, CuMemCreateOfDeviceMemoryIsChargedUntilCuMemRelease) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 1;
  const std::uint64_t before = charged(1);
  CUmemGenericAllocationHandle handle = 0;
  ASSERT_EQ(SP(cuMemCreate)(&handle, 64 * kMiB, &prop, 0), CUDA_SUCCESS);
  EXPECT_EQ(charged(1), before + 64 * kMiB);
  CUmemGenericAllocationHandle refused = 0;
  EXPECT_EQ(SP(cuMemCreate)(&refused, 128 * kMiB, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
  ASSERT_EQ(SP(cuMemRelease)(handle), CUDA_SUCCESS);
  EXPECT_EQ(charged(1), before);
}

TEST_F(Caps, PastTheCapAnotherPoolsCachedMemoryIsReleasedFirst) {
  CUmemoryPool keeper = pool_on(0, UINT64_MAX);  // keeps everything freed
  CUmemoryPool other = pool_on(0);
  CUdeviceptr block = 0;
  ASSERT_EQ(alloc_from(keeper, 200 * kMiB, &block), CUDA_SUCCESS);
  free_now(block);
  ASSERT_GE(reserved(keeper), 200 * kMiB);
  CUdeviceptr second = 0;
  ASSERT_EQ(alloc_from(other, 100 * kMiB, &second), CUDA_SUCCESS);
  EXPECT_LT(reserved(keeper), 200 * kMiB);
  EXPECT_LE(charged(0), kCap0);
  free_now(second);
  ASSERT_EQ(SP(cuMemPoolDestroy)(keeper), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemPoolDestroy)(other), CUDA_SUCCESS);
}

TEST_F(Caps, ACuMemAllocPastTheCapTakesWhatThePoolsHoldUnused) {
  CUmemoryPool keeper = pool_on(0, UINT64_MAX);
  CUdeviceptr block = 0;
  ASSERT_EQ(alloc_from(keeper, 200 * kMiB, &block), CUDA_SUCCESS);
  free_now(block);
  CUdeviceptr plain = 0;
  ASSERT_EQ(SP(cuMemAlloc_v2)(&plain, 150 * kMiB), CUDA_SUCCESS);
  EXPECT_LE(charged(0), kCap0);
  EXPECT_EQ(limit_info(0).pools_cached, reserved(keeper) - 0);
  ASSERT_EQ(SP(cuMemFree_v2)(plain), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemPoolDestroy)(keeper), CUDA_SUCCESS);
}

TEST_F(Caps, InUseAndCachedAreReportedApart) {
  CUmemoryPool keeper = pool_on(1, UINT64_MAX);
  CUdeviceptr kept = 0, freed = 0;
  ASSERT_EQ(alloc_from(keeper, 10 * kMiB, &kept), CUDA_SUCCESS);
  ASSERT_EQ(alloc_from(keeper, 20 * kMiB, &freed), CUDA_SUCCESS);
  free_now(freed);
  const streampool_device_limit figures = limit_info(1);
  EXPECT_EQ(figures.limit, kCap1);
  EXPECT_EQ(figures.pools_in_use, 10 * kMiB);
  EXPECT_EQ(figures.pools_in_use + figures.pools_cached, reserved(keeper) + default_reserved(1));
  EXPECT_GE(figures.peak, figures.charged);
  const std::string report = hooks_test::stats_report();
  EXPECT_NE(report.find("\"devices\":[{\"device\":0,\"limit\":268435456,"), std::string::npos) << report;
  EXPECT_NE(report.find("{\"device\":1,\"limit\":134217728,"), std::string::npos) << report;
  free_now(kept);
  ASSERT_EQ(SP(cuMemPoolDestroy)(keeper), CUDA_SUCCESS);
}

TEST_F(Caps, AFreeWithCuMemFreeOfAPoolPointerGivesItsMemoryBackAsThePoolDoes) {
  CUmemoryPool pool = pool_on(0);
  CUdeviceptr block = 0;
  ASSERT_EQ(alloc_from(pool, 60 * kMiB, &block), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemFree_v2)(block), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuCtxSynchronize)(), CUDA_SUCCESS);
  EXPECT_EQ(limit_info(0).pools_in_use + limit_info(0).pools_cached, reserved(pool) + default_reserved(0));
  ASSERT_EQ(SP(cuMemPoolDestroy)(pool), CUDA_SUCCESS);
}

TEST_F(Caps, HostAndManagedPoolsAreNotChargedToAnyDevice) {
  const std::uint64_t before0 = charged(0), before1 = charged(1);
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_HOST;
  CUmemoryPool host = nullptr;
  ASSERT_EQ(SP(cuMemPoolCreate)(&host, &props), CUDA_SUCCESS);
  CUdeviceptr block = 0;
  ASSERT_EQ(alloc_from(host, 300 * kMiB, &block), CUDA_SUCCESS);  // more than either cap
  EXPECT_EQ(charged(0), before0);
  EXPECT_EQ(charged(1), before1);
  free_now(block);
  ASSERT_EQ(SP(cuMemPoolDestroy)(host), CUDA_SUCCESS);
}

TEST_F(Caps, ManagedPoolsAreNotCharged) {
  const std::uint64_t before0 = charged(0), before1 = charged(1);
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_MANAGED;
  props.location.type = CU_MEM_LOCATION_TYPE_NONE;
  CUmemoryPool managed = nullptr;
  ASSERT_EQ(SP(cuMemPoolCreate)(&managed, &props), CUDA_SUCCESS);
  CUdeviceptr block = 0;
  ASSERT_EQ(alloc_from(managed, 300 * kMiB, &block), CUDA_SUCCESS);
  EXPECT_EQ(charged(0), before0);
  EXPECT_EQ(charged(1), before1);
  free_now(block);
  ASSERT_EQ(SP(cuMemPoolDestroy)(managed), CUDA_SUCCESS);
}

TEST_F(Caps, AnExportablePoolIsChargedAndRefusedPastTheCapLikeAnyDevicePool) {
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = 1;
  props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  CUmemoryPool pool = nullptr;
  ASSERT_EQ(SP(cuMemPoolCreate)(&pool, &props), CUDA_SUCCESS);
  const std::uint64_t before = charged(1);
  CUdeviceptr block = 0;
  ASSERT_EQ(alloc_from(pool, 3 * kMiB, &block), CUDA_SUCCESS);
  EXPECT_EQ(charged(1), before + reserved(pool));
  CUdeviceptr refused = 0;
  EXPECT_EQ(alloc_from(pool, kCap1, &refused), CUDA_ERROR_OUT_OF_MEMORY);
  free_now(block);
  ASSERT_EQ(SP(cuMemPoolDestroy)(pool), CUDA_SUCCESS);
}

// Random programs on both devices: after every step each device's charge is exactly the reserved
// memory of its pools plus the driver allocations alive, and never above its cap.

// The elements' bytes of an array (the rule the cap uses without the driver's size).
std::uint64_t hooks_test_array_bytes(const CUDA_ARRAY3D_DESCRIPTOR& d) {
  return std::uint64_t{d.Width} * (d.Height == 0 ? 1 : d.Height) * (d.Depth == 0 ? 1 : d.Depth) * 4 * d.NumChannels;
}

// ---- CUDA arrays: charged as the arrays kind, at the driver's size ----

CUDA_ARRAY3D_DESCRIPTOR float_array(size_t width, size_t height, size_t depth, unsigned channels = 1) {
  CUDA_ARRAY3D_DESCRIPTOR descriptor{};
  descriptor.Width = width;
  descriptor.Height = height;
  descriptor.Depth = depth;
  descriptor.Format = CU_AD_FORMAT_FLOAT;
  descriptor.NumChannels = channels;
  return descriptor;
}

// The driver's size for an array: as NVIDIA's, the fake answers only for a deferred-mapping array,
// so the size is asked of a deferred twin of the same descriptor (which the cap does not charge).
std::uint64_t array_size(CUarray array, int device) {
  CUDA_ARRAY_MEMORY_REQUIREMENTS requirements{};
  EXPECT_EQ(SP(cuArrayGetMemoryRequirements)(&requirements, array, device), CUDA_ERROR_INVALID_VALUE);
  CUDA_ARRAY3D_DESCRIPTOR descriptor{};
  EXPECT_EQ(SP(cuArray3DGetDescriptor_v2)(&descriptor, array), CUDA_SUCCESS);
  descriptor.Flags |= CUDA_ARRAY3D_DEFERRED_MAPPING;
  CUarray twin = nullptr;
  EXPECT_EQ(SP(cuArray3DCreate_v2)(&twin, &descriptor), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuArrayGetMemoryRequirements)(&requirements, twin, device), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuArrayDestroy)(twin), CUDA_SUCCESS);
  return requirements.size;
}

CUarray new_array(const CUDA_ARRAY3D_DESCRIPTOR& descriptor) {
  CUarray array = nullptr;
  EXPECT_EQ(SP(cuArray3DCreate_v2)(&array, &descriptor), CUDA_SUCCESS);
  return array;
}

TEST_F(Caps, ArraysOfEachKindAreChargedTheDriversSizeAndGivenBackAtDestroy) {
  const std::uint64_t before = charged(0);
  CUDA_ARRAY_DESCRIPTOR flat{};
  flat.Width = 1000;
  flat.Height = 333;
  flat.Format = CU_AD_FORMAT_UNSIGNED_INT16;
  flat.NumChannels = 2;
  CUarray two = nullptr;
  ASSERT_EQ(SP(cuArrayCreate_v2)(&two, &flat), CUDA_SUCCESS);
  const std::uint64_t two_bytes = array_size(two, 0);
  EXPECT_GE(two_bytes, 1000u * 333 * 2 * 2);
  EXPECT_EQ(charged(0), before + two_bytes);
  const CUDA_ARRAY3D_DESCRIPTOR cube = float_array(256, 256, 64, 4);
  CUarray three = nullptr;
  ASSERT_EQ(SP(cuArray3DCreate_v2)(&three, &cube), CUDA_SUCCESS);
  const std::uint64_t three_bytes = array_size(three, 0);
  EXPECT_EQ(charged(0), before + two_bytes + three_bytes);
  EXPECT_EQ(limit_info(0).arrays, two_bytes + three_bytes);
  EXPECT_EQ(limit_info(0).forwarded, 0u);
  EXPECT_NE(hooks_test::stats_report().find("\"arrays\":" + std::to_string(two_bytes + three_bytes)), std::string::npos);
  ASSERT_EQ(SP(cuArrayDestroy)(two), CUDA_SUCCESS);
  EXPECT_EQ(charged(0), before + three_bytes);
  ASSERT_EQ(SP(cuArrayDestroy)(three), CUDA_SUCCESS);
  EXPECT_EQ(charged(0), before);
  EXPECT_EQ(limit_info(0).arrays, 0u);
}

TEST_F(Caps, ADeferredMappingArrayHoldsNoMemoryAndIsNotCharged) {
  const std::uint64_t before = charged(0);
  CUDA_ARRAY3D_DESCRIPTOR deferred = float_array(2048, 2048, 0, 4);
  deferred.Flags = CUDA_ARRAY3D_DEFERRED_MAPPING;
  CUarray array = nullptr;
  ASSERT_EQ(SP(cuArray3DCreate_v2)(&array, &deferred), CUDA_SUCCESS);
  CUDA_ARRAY_MEMORY_REQUIREMENTS requirements{};
  ASSERT_EQ(SP(cuArrayGetMemoryRequirements)(&requirements, array, 0), CUDA_SUCCESS);
  EXPECT_GE(requirements.size, 2048u * 2048 * 16);
  EXPECT_EQ(charged(0), before);
  EXPECT_EQ(limit_info(0).arrays, 0u);
  ASSERT_EQ(SP(cuArrayDestroy)(array), CUDA_SUCCESS);
  EXPECT_EQ(charged(0), before);
}

TEST_F(Caps, WithoutTheDriversSizeAnArrayIsChargedItsElementsBytes) {
  hooks_test::fail_call("cuArrayGetMemoryRequirements", 1, CUDA_ERROR_NOT_SUPPORTED);
  const std::uint64_t before = charged(1);
  const CUDA_ARRAY3D_DESCRIPTOR layered = float_array(1001, 7, 3, 2);
  CUarray array = nullptr;
  ASSERT_EQ(SP(cuCtxSetCurrent)(context1), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuArray3DCreate_v2)(&array, &layered), CUDA_SUCCESS);
  EXPECT_EQ(charged(1), before + 1001u * 7 * 3 * 4 * 2);
  ASSERT_EQ(SP(cuArrayDestroy)(array), CUDA_SUCCESS);
  EXPECT_EQ(charged(1), before);
}

TEST_F(Caps, AnArrayPastTheCapIsRefusedAfterThePoolsAreTrimmedAndIsNotLeaked) {
  CUmemoryPool keeper = pool_on(0, UINT64_MAX);
  CUdeviceptr block = 0;
  ASSERT_EQ(alloc_from(keeper, 200 * kMiB, &block), CUDA_SUCCESS);
  free_now(block);
  ASSERT_GE(reserved(keeper), 200 * kMiB);
  const CUDA_ARRAY3D_DESCRIPTOR fits = float_array(4096, 4096, 6);  // 384 MiB: past the cap
  const CUDA_ARRAY3D_DESCRIPTOR fits_trimmed = float_array(4096, 4096, 3);  // 192 MiB: fits once trimmed
  CUarray array = nullptr;
  ASSERT_EQ(SP(cuArray3DCreate_v2)(&array, &fits_trimmed), CUDA_SUCCESS);
  EXPECT_LT(reserved(keeper), 200 * kMiB);
  EXPECT_LE(charged(0), kCap0);
  const std::uint64_t held = charged(0);
  const unsigned long long destroys = hooks_test::fake_calls("cuArrayDestroy");
  CUarray refused = reinterpret_cast<CUarray>(1);
  EXPECT_EQ(SP(cuArray3DCreate_v2)(&refused, &fits), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(refused, nullptr);
  EXPECT_EQ(hooks_test::fake_calls("cuArrayDestroy"), destroys + 2);  // the twin asked for the size, then the array made and destroyed again
  EXPECT_EQ(charged(0), held);
  ASSERT_EQ(SP(cuArrayDestroy)(array), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemPoolDestroy)(keeper), CUDA_SUCCESS);
}

TEST_F(Caps, DestroyingAnUnknownOrDestroyedArrayForwardsAndGivesNothingBack) {
  const CUarray array = new_array(float_array(1024, 1024, 0));
  ASSERT_NE(array, nullptr);
  const std::uint64_t held = charged(0);
  int not_an_array = 0;
  EXPECT_EQ(SP(cuArrayDestroy)(reinterpret_cast<CUarray>(&not_an_array)), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(SP(cuArrayDestroy)(nullptr), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(charged(0), held);
  ASSERT_EQ(SP(cuArrayDestroy)(array), CUDA_SUCCESS);
  const std::uint64_t after = charged(0);
  EXPECT_EQ(SP(cuArrayDestroy)(array), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(charged(0), after);
}

TEST_F(Caps, AFailedArrayDestroyKeepsItsCharge) {
  const CUarray array = new_array(float_array(512, 512, 0));
  ASSERT_NE(array, nullptr);
  const std::uint64_t held = charged(0);
  hooks_test::fail_call("cuArrayDestroy", 1, CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(SP(cuArrayDestroy)(array), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(charged(0), held);
  ASSERT_EQ(SP(cuArrayDestroy)(array), CUDA_SUCCESS);
  EXPECT_LT(charged(0), held);
}

TEST_F(Caps, AnOlderSmallerLimitInfoIsFilledOnlyUpToItsSize) {
  const CUarray array = new_array(float_array(512, 512, 0));
  ASSERT_NE(array, nullptr);
  using Info = int (*)(int, streampool_device_limit*);
  auto info = reinterpret_cast<Info>(hooks_test::streampool_symbol("streampool_limit_info"));
  ASSERT_NE(info, nullptr);
  streampool_device_limit old{};
  old.struct_size = offsetof(streampool_device_limit, arrays);  // the struct before arrays was appended
  old.arrays = 12345;
  ASSERT_EQ(info(0, &old), 0);
  EXPECT_EQ(old.struct_size, offsetof(streampool_device_limit, arrays));
  EXPECT_EQ(old.arrays, 12345u);
  EXPECT_EQ(old.charged, charged(0));
  streampool_device_limit full{};
  full.struct_size = sizeof full;
  ASSERT_EQ(info(0, &full), 0);
  EXPECT_EQ(full.arrays, array_size(array, 0));
  EXPECT_EQ(full.charged, full.pools_in_use + full.pools_cached + full.forwarded + full.arrays);
  ASSERT_EQ(SP(cuArrayDestroy)(array), CUDA_SUCCESS);
}

TEST_F(Caps, RandomArraysAndDriverAllocationsKeepExactCounts) {
  std::mt19937 random(18);
  struct Held {
    bool array;
    CUarray handle;
    CUdeviceptr pointer;
    std::uint64_t bytes;
  };
  std::vector<Held> held;
  // What the pools hold in use cannot be reclaimed; what they cache goes back before a refusal.
  const std::uint64_t base = limit_info(0).pools_in_use;
  std::uint64_t oracle_arrays = 0;
  std::uint64_t oracle_forwarded = 0;
  for (int step = 0; step < 400; ++step) {
    const unsigned choice = random() % 4;
    if (choice == 3 && !held.empty()) {
      const size_t at = random() % held.size();
      const Held gone = held[at];
      held.erase(held.begin() + static_cast<std::ptrdiff_t>(at));
      if (gone.array) {
        ASSERT_EQ(SP(cuArrayDestroy)(gone.handle), CUDA_SUCCESS);
        oracle_arrays -= gone.bytes;
      } else {
        ASSERT_EQ(SP(cuMemFree_v2)(gone.pointer), CUDA_SUCCESS);
        oracle_forwarded -= gone.bytes;
      }
    } else if (choice == 0) {
      const size_t bytes = (1 + random() % 8) * kMiB;
      CUdeviceptr pointer = 0;
      const CUresult result = SP(cuMemAlloc_v2)(&pointer, bytes);
      const bool fits = base + oracle_arrays + oracle_forwarded + bytes <= kCap0;
      ASSERT_EQ(result, fits ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY) << "step " << step;
      if (fits) {
        held.push_back({false, nullptr, pointer, bytes});
        oracle_forwarded += bytes;
      }
    } else {
      const CUDA_ARRAY3D_DESCRIPTOR descriptor =
          float_array(1 + random() % 2048, random() % 512, choice == 2 ? random() % 4 : 0, 1u << (random() % 3));
      CUarray handle = nullptr;
      const CUresult result = SP(cuArray3DCreate_v2)(&handle, &descriptor);
      // The driver's size: the element bytes rounded up to the fake's 512-byte alignment.
      const std::uint64_t bytes = (hooks_test_array_bytes(descriptor) + 511) / 512 * 512;
      const bool fits = base + oracle_arrays + oracle_forwarded + bytes <= kCap0;
      ASSERT_EQ(result, fits ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY) << "step " << step;
      if (fits) {
        held.push_back({true, handle, 0, bytes});
        oracle_arrays += bytes;
      }
    }
    ASSERT_EQ(limit_info(0).arrays, oracle_arrays) << "step " << step;
    ASSERT_EQ(limit_info(0).forwarded, oracle_forwarded) << "step " << step;
    const streampool_device_limit now = limit_info(0);
    ASSERT_EQ(now.charged, now.pools_in_use + now.pools_cached + oracle_arrays + oracle_forwarded) << "step " << step;
  }
  for (const Held& gone : held) {
    if (gone.array) {
      ASSERT_EQ(SP(cuArrayDestroy)(gone.handle), CUDA_SUCCESS);
    } else {
      ASSERT_EQ(SP(cuMemFree_v2)(gone.pointer), CUDA_SUCCESS);
    }
  }
  EXPECT_EQ(limit_info(0).arrays + limit_info(0).forwarded, 0u);
}

TEST_F(Caps, RandomProgramsKeepTheCountEqualToThePoolsReservationsAndTheDriverAllocations) {
  const size_t limits[2] = {kCap0, kCap1};
  CUcontext contexts[2] = {context, context1};
  std::vector<CUmemoryPool> pools = {pool_on(0), pool_on(1), pool_on(0, 64 * kMiB), pool_on(1, UINT64_MAX)};
  const int device_of[] = {0, 1, 0, 1};
  struct Block {
    CUdeviceptr pointer;
    int device;
    size_t bytes;  // a driver allocation's, else 0
  };
  std::vector<Block> pool_blocks, driver_blocks;
  std::mt19937 random(18);
  size_t refusals = 0;
  for (int step = 0; step < 600; ++step) {
    const auto action = random() % 12;
    if (action < 5) {
      const size_t which = random() % pools.size();
      const size_t bytes = random() % 3 == 0 ? (1 + random() % 60) * kMiB : 512 * (1 + random() % 2048);
      CUdeviceptr pointer = 0;
      const CUresult result = alloc_from(pools[which], bytes, &pointer);
      if (result == CUDA_SUCCESS) {
        pool_blocks.push_back({pointer, device_of[which], 0});
      } else {
        ++refusals;
        ASSERT_EQ(result, CUDA_ERROR_OUT_OF_MEMORY);
      }
    } else if (action < 7 && !pool_blocks.empty()) {
      const size_t index = random() % pool_blocks.size();
      if (random() % 3 == 0) {
        ASSERT_EQ(SP(cuMemFree_v2)(pool_blocks[index].pointer), CUDA_SUCCESS);
      } else {
        ASSERT_EQ(SP(cuMemFreeAsync)(pool_blocks[index].pointer, stream), CUDA_SUCCESS);
      }
      pool_blocks[index] = pool_blocks.back();
      pool_blocks.pop_back();
    } else if (action == 7) {
      const int where = static_cast<int>(random() % 2);
      const size_t bytes = (1 + random() % 40) * kMiB;
      ASSERT_EQ(SP(cuCtxSetCurrent)(contexts[where]), CUDA_SUCCESS);
      CUdeviceptr pointer = 0;
      const CUresult result = SP(cuMemAlloc_v2)(&pointer, bytes);
      ASSERT_EQ(SP(cuCtxSetCurrent)(context), CUDA_SUCCESS);
      if (result == CUDA_SUCCESS) {
        driver_blocks.push_back({pointer, where, bytes});
      } else {
        ++refusals;
        ASSERT_EQ(result, CUDA_ERROR_OUT_OF_MEMORY);
      }
    } else if (action == 8 && !driver_blocks.empty()) {
      const size_t index = random() % driver_blocks.size();
      ASSERT_EQ(SP(cuMemFree_v2)(driver_blocks[index].pointer), CUDA_SUCCESS);
      driver_blocks[index] = driver_blocks.back();
      driver_blocks.pop_back();
    } else if (action == 9) {
      ASSERT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
    } else if (action == 10) {
      ASSERT_EQ(SP(cuMemPoolTrimTo)(pools[random() % pools.size()], (random() % 3) * 16 * kMiB), CUDA_SUCCESS);
    }
    for (int ordinal = 0; ordinal < 2; ++ordinal) {
      std::uint64_t oracle = default_reserved(ordinal);
      for (size_t p = 0; p < pools.size(); ++p) {
        if (device_of[p] == ordinal) oracle += reserved(pools[p]);
      }
      for (const Block& block : driver_blocks) {
        if (block.device == ordinal) oracle += block.bytes;
      }
      ASSERT_EQ(charged(ordinal), oracle) << "device " << ordinal << " at step " << step;
      ASSERT_LE(charged(ordinal), limits[ordinal]);
    }
  }
  EXPECT_GT(refusals, 0u);
  for (const Block& block : pool_blocks) ASSERT_EQ(SP(cuMemFreeAsync)(block.pointer, stream), CUDA_SUCCESS);
  for (const Block& block : driver_blocks) ASSERT_EQ(SP(cuMemFree_v2)(block.pointer), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
  for (CUmemoryPool pool : pools) ASSERT_EQ(SP(cuMemPoolDestroy)(pool), CUDA_SUCCESS);
}

// ---- children: other settings, and a context reset (run by the tests after them) ----

using hooks_test::capture_stderr;
using hooks_test::read_text;
size_t lines_with(const std::string& text, const std::string& needle) { return hooks_test::occurrences(text, needle); }
// The total cuMemGetInfo answers on device 0, in a fresh child (its first driver calls are these).
size_t child_total() {
  EXPECT_EQ(SP(cuInit)(0), CUDA_SUCCESS);
  CUcontext primary = nullptr;
  EXPECT_EQ(SP(cuDevicePrimaryCtxRetain)(&primary, 0), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuCtxSetCurrent)(primary), CUDA_SUCCESS);
  size_t free_bytes = 0, total_bytes = 0;
  EXPECT_EQ(SP(cuMemGetInfo_v2)(&free_bytes, &total_bytes), CUDA_SUCCESS);
  return total_bytes;
}

TEST(CapsChild, DISABLED_ABadSettingIsOneLineAndNoCap) {
  const char* log = std::getenv("CAPS_CHILD_STDERR");
  ASSERT_NE(log, nullptr);
  capture_stderr(log);
  EXPECT_EQ(child_total(), size_t{1} << 30);
  CUdeviceptr block = 0;  // allocations carry on, uncapped
  EXPECT_EQ(SP(cuMemAlloc_v2)(&block, 900 * kMiB), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuMemFree_v2)(block), CUDA_SUCCESS);
}

TEST(CapsChild, DISABLED_AShareOfTheDeviceIsTheCap) { EXPECT_EQ(child_total(), 256 * kMiB); }

TEST(CapsChild, DISABLED_AnEntryForADeviceTheMachineLacksIsIgnoredAndTheRestApplies) {
  const char* log = std::getenv("CAPS_CHILD_STDERR");
  ASSERT_NE(log, nullptr);
  capture_stderr(log);
  ASSERT_EQ(SP(cuInit)(0), CUDA_SUCCESS);
  CUcontext primary = nullptr;
  ASSERT_EQ(SP(cuDevicePrimaryCtxRetain)(&primary, 0), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuCtxSetCurrent)(primary), CUDA_SUCCESS);
  size_t free_bytes = 0, total_bytes = 0;
  ASSERT_EQ(SP(cuMemGetInfo_v2)(&free_bytes, &total_bytes), CUDA_SUCCESS);
  EXPECT_EQ(total_bytes, 64 * kMiB);
}

TEST(CapsChild, DISABLED_AContextResetGivesBackItsDriverAllocations) {
  ASSERT_EQ(SP(cuInit)(0), CUDA_SUCCESS);
  CUcontext primary = nullptr;
  ASSERT_EQ(SP(cuDevicePrimaryCtxRetain)(&primary, 0), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuCtxSetCurrent)(primary), CUDA_SUCCESS);
  CUdeviceptr block = 0;
  ASSERT_EQ(SP(cuMemAlloc_v2)(&block, 200 * kMiB), CUDA_SUCCESS);
  ASSERT_EQ(charged(0), 200 * kMiB);
  ASSERT_EQ(SP(cuDevicePrimaryCtxReset_v2)(0), CUDA_SUCCESS);
  EXPECT_EQ(charged(0), 0u);
  ASSERT_EQ(SP(cuDevicePrimaryCtxRetain)(&primary, 0), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuCtxSetCurrent)(primary), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuMemAlloc_v2)(&block, 200 * kMiB), CUDA_SUCCESS);  // the cap is free again
}


TEST(CapsChild, DISABLED_AContextResetGivesBackItsArrays) {
  ASSERT_EQ(SP(cuInit)(0), CUDA_SUCCESS);
  CUcontext primary = nullptr;
  ASSERT_EQ(SP(cuDevicePrimaryCtxRetain)(&primary, 0), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuCtxSetCurrent)(primary), CUDA_SUCCESS);
  const CUDA_ARRAY3D_DESCRIPTOR big = float_array(4096, 4096, 3);  // 192 MiB
  CUarray array = nullptr;
  ASSERT_EQ(SP(cuArray3DCreate_v2)(&array, &big), CUDA_SUCCESS);
  ASSERT_GE(charged(0), 192 * kMiB);
  ASSERT_EQ(SP(cuDevicePrimaryCtxReset_v2)(0), CUDA_SUCCESS);
  EXPECT_EQ(charged(0), 0u);
  ASSERT_EQ(SP(cuDevicePrimaryCtxRetain)(&primary, 0), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuCtxSetCurrent)(primary), CUDA_SUCCESS);
  CUcontext own = nullptr;
  ASSERT_EQ(SP(cuCtxCreate_v4)(&own, nullptr, 0, 0), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuArray3DCreate_v2)(&array, &big), CUDA_SUCCESS);  // the cap is free again
  ASSERT_GE(charged(0), 192 * kMiB);
  ASSERT_EQ(SP(cuCtxDestroy_v2)(own), CUDA_SUCCESS);
  EXPECT_EQ(charged(0), 0u);
}

// Before its first allocation or cuMemGetInfo, which resolve the cap otherwise, a program that
// asks streampool_limit_info reads the cap (it read 0 once).
TEST(CapsChild, DISABLED_TheLimitInfoShowsTheCapBeforeAnyAllocation) {
  ASSERT_EQ(SP(cuInit)(0), CUDA_SUCCESS);
  CUcontext primary = nullptr;
  ASSERT_EQ(SP(cuDevicePrimaryCtxRetain)(&primary, 0), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuCtxSetCurrent)(primary), CUDA_SUCCESS);
  using Info = int (*)(int, streampool_device_limit*);
  auto info = reinterpret_cast<Info>(hooks_test::streampool_symbol("streampool_limit_info"));
  ASSERT_NE(info, nullptr);
  streampool_device_limit figures{};
  figures.struct_size = sizeof figures;
  ASSERT_EQ(info(0, &figures), 0);
  EXPECT_EQ(figures.limit, 300 * kMiB);
  EXPECT_EQ(figures.charged, 0u);
}

class CapSettings : public ::testing::Test {
 protected:
  std::string log_path = "/tmp/streampool_caps_child_" + std::to_string(getpid()) + ".log";
  void TearDown() override { std::remove(log_path.c_str()); }
  std::string run_bad(const std::string& setting) {
    EXPECT_EQ(hooks_test::run_child_test("CapsChild.DISABLED_ABadSettingIsOneLineAndNoCap",
                                         {"STREAMPOOL_LIMIT=" + setting, "CAPS_CHILD_STDERR=" + log_path,
                                          "STREAMPOOL_FAKE_DEVICES=1"}),
              0);
    return read_text(log_path);
  }
};

TEST_F(CapSettings, AWordIsRefusedWithOneLineAndNoCap) {
  const std::string text = run_bad("lots");
  EXPECT_EQ(lines_with(text, "streampool: "), 1u) << text;
  EXPECT_EQ(lines_with(text, "STREAMPOOL_LIMIT=lots ignored"), 1u) << text;
}

TEST_F(CapSettings, AShareAboveTheWholeDeviceIsRefusedWithOneLineAndNoCap) {
  const std::string text = run_bad("150%");
  EXPECT_EQ(lines_with(text, "streampool: "), 1u) << text;
  EXPECT_EQ(lines_with(text, "STREAMPOOL_LIMIT=150% ignored"), 1u) << text;
}

TEST_F(CapSettings, AShareResolvesAgainstTheDevicesMemory) {
  EXPECT_EQ(hooks_test::run_child_test("CapsChild.DISABLED_AShareOfTheDeviceIsTheCap",
                                       {"STREAMPOOL_LIMIT=25%", "STREAMPOOL_FAKE_DEVICES=1"}),
            0);
}

TEST_F(CapSettings, AMissingDeviceIsOneLineAndItsEntryIgnored) {
  EXPECT_EQ(hooks_test::run_child_test("CapsChild.DISABLED_AnEntryForADeviceTheMachineLacksIsIgnoredAndTheRestApplies",
                                       {"STREAMPOOL_LIMIT=0:64M,2:4G", "CAPS_CHILD_STDERR=" + log_path,
                                        "STREAMPOOL_FAKE_DEVICES=1"}),
            0);
  const std::string text = read_text(log_path);
  EXPECT_EQ(lines_with(text, "streampool: "), 1u) << text;
  EXPECT_EQ(lines_with(text, "device 2"), 1u) << text;
}

TEST_F(CapSettings, AContextResetGivesBackTheDriverAllocationsOfItsContext) {
  EXPECT_EQ(hooks_test::run_child_test("CapsChild.DISABLED_AContextResetGivesBackItsDriverAllocations",
                                       {"STREAMPOOL_LIMIT=300M", "STREAMPOOL_FAKE_DEVICES=1"}),
            0);
}

TEST_F(CapSettings, AContextResetOrDestroyGivesBackTheArraysOfItsContext) {
  EXPECT_EQ(hooks_test::run_child_test("CapsChild.DISABLED_AContextResetGivesBackItsArrays",
                                       {"STREAMPOOL_LIMIT=300M", "STREAMPOOL_FAKE_DEVICES=1"}),
            0);
}

TEST_F(CapSettings, TheLimitInfoShowsTheCapBeforeAnyAllocation) {
  EXPECT_EQ(hooks_test::run_child_test("CapsChild.DISABLED_TheLimitInfoShowsTheCapBeforeAnyAllocation",
                                       {"STREAMPOOL_LIMIT=300M", "STREAMPOOL_FAKE_DEVICES=1"}),
            0);
}

}  // namespace
