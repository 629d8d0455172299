// driver-behaviour.md, "Attributes": what cuMemPoolGetAttribute / cuMemPoolSetAttribute answer.
#include "conformance.hpp"

#include <cstdlib>

namespace conformance {
namespace {

// A value slot followed by a guard, to catch an implementation that writes more bytes than the
// attribute's type holds.
template <typename T>
struct Guarded {
  T value;
  std::uint32_t guard;
};
constexpr std::uint32_t kGuard = 0xC0FFEE11U;

template <typename T>
CUresult get_guarded(CUmemoryPool pool, int attr, T* out, bool* guard_intact) {
  Guarded<T> slot{};
  slot.value = static_cast<T>(0x5A5A5A5A);
  slot.guard = kGuard;
  const CUresult result = cuMemPoolGetAttribute(pool, pool_attr(attr), &slot.value);
  *out = slot.value;
  *guard_intact = slot.guard == kGuard;
  return result;
}

TEST(Attributes, AttributeZeroIsInvalidValue) {
  CUmemoryPool pool = nullptr;
  CU_ASSERT_OK(cuDeviceGetDefaultMemPool(&pool, device()));
  cuuint64_t value = 0;
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemPoolGetAttribute(pool, pool_attr(0), &value));
}

TEST(Attributes, CreatedPoolStartsWithReuseOnThresholdZeroAndNoBytes) {
  OwnedPool pool(device_pool_props());
  CU_ASSERT_OK(pool.status());
  for (CUmemPool_attribute attr : {CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC,
                                   CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES}) {
    int value = -1;
    bool intact = false;
    CU_EXPECT_OK(get_guarded(pool.get(), attr, &value, &intact));
    EXPECT_EQ(1, value) << "attribute " << static_cast<int>(attr);
    EXPECT_TRUE(intact) << "attribute " << static_cast<int>(attr) << " wrote past an int";
  }
  EXPECT_EQ(0U, get_u64(pool.get(), CU_MEMPOOL_ATTR_RELEASE_THRESHOLD));
  EXPECT_EQ(0U, reserved(pool.get()));
  EXPECT_EQ(0U, reserved_high(pool.get()));
  EXPECT_EQ(0U, used(pool.get()));
  EXPECT_EQ(0U, used_high(pool.get()));
}

TEST(Attributes, DefaultPoolOfAFreshProcessHasTheDocumentedDefaults) {
  // Other tests in this process may have changed the default pool, so look at it in a fresh
  // process (gtest re-executes this binary for the death-test statement).
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        CUmemoryPool pool = nullptr;
        if (cuDeviceGetDefaultMemPool(&pool, device()) != CUDA_SUCCESS) std::_Exit(10);
        int code = 0;
        for (int attr = 1; attr <= 3; ++attr) {
          int flag = -1;
          if (cuMemPoolGetAttribute(pool, pool_attr(attr), &flag) != CUDA_SUCCESS || flag != 1) code |= 1 << attr;
        }
        cuuint64_t threshold = 1;
        if (cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold) != CUDA_SUCCESS ||
            threshold != 0) {
          code |= 1 << 4;
        }
        std::_Exit(code);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(Attributes, StatisticsAreByteCounts) {
  CONFORMANCE_KEEP_ALL_POOL(pool, 0);
  CONFORMANCE_STREAM(stream);
  CUdeviceptr p = 0;
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&p, 3 * kMiB, pool.get(), stream.get()));
  for (int attr = 5; attr <= 8; ++attr) {
    cuuint64_t value = 0;
    bool intact = false;
    CU_EXPECT_OK(get_guarded(pool.get(), attr, &value, &intact));
    EXPECT_GE(value, 3 * kMiB) << "attribute " << attr;
    EXPECT_TRUE(intact) << "attribute " << attr;
  }
  EXPECT_EQ(3 * kMiB, used(pool.get()));
  CU_EXPECT_OK(cuMemFreeAsync(p, stream.get()));
  CU_EXPECT_OK(cuStreamSynchronize(stream.get()));
}

TEST(Attributes, ReuseFlagsAndThresholdRoundTrip) {
  OwnedPool pool(device_pool_props());
  CU_ASSERT_OK(pool.status());
  for (int attr = 1; attr <= 3; ++attr) {
    CU_EXPECT_OK(set_int(pool.get(), pool_attr(attr), 0));
    int value = -1;
    CU_EXPECT_OK(cuMemPoolGetAttribute(pool.get(), pool_attr(attr), &value));
    EXPECT_EQ(0, value) << "attribute " << attr;
    CU_EXPECT_OK(set_int(pool.get(), pool_attr(attr), 1));
    CU_EXPECT_OK(cuMemPoolGetAttribute(pool.get(), pool_attr(attr), &value));
    EXPECT_EQ(1, value) << "attribute " << attr;
  }
  CU_EXPECT_OK(set_u64(pool.get(), CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, 123 * kMiB + 7));
  EXPECT_EQ(123 * kMiB + 7, get_u64(pool.get(), CU_MEMPOOL_ATTR_RELEASE_THRESHOLD));
  CU_EXPECT_OK(set_u64(pool.get(), CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, kNoThreshold));
  EXPECT_EQ(kNoThreshold, get_u64(pool.get(), CU_MEMPOOL_ATTR_RELEASE_THRESHOLD));
}

TEST(Attributes, PropertyAttributesNineToFifteen) {
  // Driver 580 answers INVALID_VALUE for all of them; streampool implements them from the spec.
  OwnedPool pool(device_pool_props());
  CU_ASSERT_OK(pool.status());
  struct IntExpectation {
    int attr;
    int value;
  };
  for (const IntExpectation e : {IntExpectation{kAttrAllocationType, CU_MEM_ALLOCATION_TYPE_PINNED},
                                 IntExpectation{kAttrExportHandleTypes, CU_MEM_HANDLE_TYPE_NONE},
                                 IntExpectation{kAttrLocationId, device()},
                                 IntExpectation{kAttrLocationType, CU_MEM_LOCATION_TYPE_DEVICE},
                                 IntExpectation{kAttrHwDecompressEnabled, 0},
                                 IntExpectation{kAttrLocalityDomainId, -1}}) {
    int value = 0;
    bool intact = false;
    const CUresult result = get_guarded(pool.get(), e.attr, &value, &intact);
    EXPECT_TRUE(intact) << "attribute " << e.attr << " wrote past an int";
    if (under_streampool()) {
      EXPECT_EQ(CUDA_SUCCESS, result) << "attribute " << e.attr;
      EXPECT_EQ(e.value, value) << "attribute " << e.attr;
    } else {
      EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, result) << "attribute " << e.attr;
    }
  }
  cuuint64_t max_size = 1;
  bool intact = false;
  const CUresult result = get_guarded(pool.get(), kAttrMaxPoolSize, &max_size, &intact);
  EXPECT_TRUE(intact);
  if (under_streampool()) {
    EXPECT_EQ(CUDA_SUCCESS, result);
    EXPECT_EQ(0U, max_size) << "0 means no maximum";
  } else {
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, result);
  }
}

TEST(Attributes, MaxPoolSizeReportsTheRoundedCap) {
  OwnedPool pool(device_pool_props(1000));
  CU_ASSERT_OK(pool.status());
  cuuint64_t max_size = 0;
  const CUresult result = cuMemPoolGetAttribute(pool.get(), pool_attr(kAttrMaxPoolSize), &max_size);
  if (under_streampool()) {
    CU_EXPECT_OK(result);
    EXPECT_GE(max_size, 1000U) << "may be higher than asked, never lower";
  } else {
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, result);
  }
}

TEST(Attributes, HighWatermarksResetOnlyToZero) {
  CONFORMANCE_KEEP_ALL_POOL(pool, 0);
  CONFORMANCE_STREAM(stream);
  CUdeviceptr p = 0;
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&p, 3 * kMiB, pool.get(), stream.get()));
  CU_ASSERT_OK(cuMemFreeAsync(p, stream.get()));
  CU_ASSERT_OK(cuStreamSynchronize(stream.get()));
  ASSERT_EQ(3 * kMiB, used_high(pool.get()));
  ASSERT_GE(reserved_high(pool.get()), 3 * kMiB);

  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, set_u64(pool.get(), CU_MEMPOOL_ATTR_USED_MEM_HIGH, 5));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, set_u64(pool.get(), CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, 5));
  EXPECT_EQ(3 * kMiB, used_high(pool.get())) << "a rejected set changes nothing";

  CU_EXPECT_OK(set_u64(pool.get(), CU_MEMPOOL_ATTR_USED_MEM_HIGH, 0));
  CU_EXPECT_OK(set_u64(pool.get(), CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, 0));
  EXPECT_EQ(0U, used_high(pool.get())) << "nothing is in use, so the reset watermark is 0";
  const std::uint64_t held = reserved(pool.get());
  const std::uint64_t held_high = reserved_high(pool.get());
  ASSERT_GT(held, 0U) << "threshold max keeps the memory";
  if (under_streampool()) {
    EXPECT_EQ(held, held_high) << "a reset watermark restarts from the current value";
  } else {
    // Not measured whether the driver restarts from the current value or from 0.
    EXPECT_TRUE(held_high == held || held_high == 0) << held_high;
  }
}

TEST(Attributes, CurrentStatisticsCannotBeSet) {
  OwnedPool pool(device_pool_props());
  CU_ASSERT_OK(pool.status());
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, set_u64(pool.get(), CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, 0));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, set_u64(pool.get(), CU_MEMPOOL_ATTR_USED_MEM_CURRENT, 0));
}

TEST(Attributes, NullValueOrNullPoolIsInvalidValue) {
  CUmemoryPool pool = nullptr;
  CU_ASSERT_OK(cuDeviceGetDefaultMemPool(&pool, device()));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, nullptr));
  cuuint64_t value = 0;
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemPoolGetAttribute(nullptr, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &value));
}

}  // namespace
}  // namespace conformance
