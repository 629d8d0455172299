// Input a program should not give, answered with an error code as driver 580 answers it (or
// better), never an abort: enum fields holding values outside their enum (which UBSan's enum
// check turns into an abort where they are loaded as the enum), caps beyond any address space,
// a free of NULL on a forged stream, an event created into NULL.
#include <cstring>

#include "hooks_test_api.hpp"

namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kGiB = size_t{1} << 30;
constexpr int kMaxPoolSize = 13;  // CU_MEMPOOL_ATTR_MAX_POOL_SIZE (CUDA 13.1 headers; 13.0 lacks the name)

class BadInput : public hooks_test::DriverTest {
 protected:
  // Stores `value` into an enum-typed field as the bytes a C program would store: the test never
  // loads the field as its enum either.
  template <class Enum>
  static void store_raw(Enum& field, int value) {
    static_assert(sizeof(Enum) == sizeof(int));
    std::memcpy(&field, &value, sizeof value);
  }
  // An enum argument passed by value, with a value outside the enum.
  template <class Enum>
  static Enum out_of_range() {
    volatile int value = -1;
    return static_cast<Enum>(value);
  }

  CUmemPoolProps device_props() const {
    CUmemPoolProps props{};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = device;
    return props;
  }
};

TEST_F(BadInput, PoolCreateWithEveryHandleTypeBitSetIsInvalidValue) {
  CUmemPoolProps props = device_props();
  store_raw(props.handleTypes, static_cast<int>(0xffffffffu));
  CUmemoryPool pool = nullptr;

  EXPECT_EQ(SP(cuMemPoolCreate)(&pool, &props), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(pool, nullptr);
}

TEST_F(BadInput, PoolCreateWithAllocationTypeMinusOneIsInvalidValue) {
  CUmemPoolProps props = device_props();
  store_raw(props.allocType, -1);
  CUmemoryPool pool = nullptr;

  EXPECT_EQ(SP(cuMemPoolCreate)(&pool, &props), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(BadInput, PoolCreateWithLocationTypeMinusOneIsInvalidValue) {
  CUmemPoolProps pinned = device_props();
  store_raw(pinned.location.type, -1);
  CUmemPoolProps managed{};
  managed.allocType = CU_MEM_ALLOCATION_TYPE_MANAGED;
  store_raw(managed.location.type, -1);
  CUmemoryPool pool = nullptr;

  EXPECT_EQ(SP(cuMemPoolCreate)(&pool, &pinned), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(SP(cuMemPoolCreate)(&pool, &managed), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(BadInput, SetAccessWithFlagsOrLocationMinusOneIsInvalidValue) {
  CUmemoryPool pool = create_device_pool();
  CUmemAccessDesc bad_flags{};
  bad_flags.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  bad_flags.location.id = device;
  store_raw(bad_flags.flags, -1);
  CUmemAccessDesc bad_location{};
  store_raw(bad_location.location.type, -1);
  bad_location.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;

  EXPECT_EQ(SP(cuMemPoolSetAccess)(pool, &bad_flags, 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(SP(cuMemPoolSetAccess)(pool, &bad_location, 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(SP(cuMemPoolDestroy)(pool), CUDA_SUCCESS);
}

TEST_F(BadInput, GetAccessForLocationTypeMinusOneIsInvalidValue) {
  CUmemoryPool pool = create_device_pool();
  CUmemLocation location{};
  store_raw(location.type, -1);
  CUmemAccess_flags flags{};

  EXPECT_EQ(SP(cuMemPoolGetAccess)(&flags, pool, &location), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(SP(cuMemPoolDestroy)(pool), CUDA_SUCCESS);
}

TEST_F(BadInput, GetAndSetMemPoolWithLocationTypeMinusOneAreInvalidValue) {
  CUmemoryPool pool = create_device_pool();
  CUmemLocation location{};
  store_raw(location.type, -1);
  CUmemoryPool found = nullptr;

  EXPECT_EQ(SP(cuMemGetMemPool)(&found, &location, CU_MEM_ALLOCATION_TYPE_PINNED), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(SP(cuMemGetDefaultMemPool)(&found, &location, CU_MEM_ALLOCATION_TYPE_PINNED), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(SP(cuMemSetMemPool)(&location, CU_MEM_ALLOCATION_TYPE_PINNED, pool), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(found, nullptr);
  EXPECT_EQ(SP(cuMemPoolDestroy)(pool), CUDA_SUCCESS);
}

TEST_F(BadInput, GetAndSetMemPoolWithAllocationTypeMinusOneAreInvalidValue) {
  CUmemoryPool pool = create_device_pool();
  CUmemLocation location{};
  location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  location.id = device;
  const auto bad_type = out_of_range<CUmemAllocationType>();
  CUmemoryPool found = nullptr;

  EXPECT_EQ(SP(cuMemGetMemPool)(&found, &location, bad_type), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(SP(cuMemGetDefaultMemPool)(&found, &location, bad_type), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(SP(cuMemSetMemPool)(&location, bad_type, pool), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(SP(cuMemPoolDestroy)(pool), CUDA_SUCCESS);
}

TEST_F(BadInput, PoolAttributeMinusOneIsInvalidValue) {
  CUmemoryPool pool = create_device_pool();
  std::uint64_t value = 0;

  EXPECT_EQ(SP(cuMemPoolGetAttribute)(pool, out_of_range<CUmemPool_attribute>(), &value), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(SP(cuMemPoolSetAttribute)(pool, out_of_range<CUmemPool_attribute>(), &value), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(SP(cuMemPoolDestroy)(pool), CUDA_SUCCESS);
}

TEST_F(BadInput, PoolCappedBeyondTheAddressSpaceAllocatesUpToTheDevicesMemory) {
  const size_t cap = size_t{1} << 47;
  CUmemoryPool pool = create_device_pool(cap);
  CUdeviceptr small = 0;
  CUdeviceptr large = 0;

  ASSERT_EQ(SP(cuMemAllocFromPoolAsync)(&small, kMiB, pool, stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemAllocFromPoolAsync)(&large, 12 * kGiB, pool, stream), CUDA_SUCCESS);  // the fake has 16 GiB

  EXPECT_NE(small, 0u);
  EXPECT_NE(large, 0u);
  EXPECT_EQ(pool_attribute(pool, kMaxPoolSize), cap);
  EXPECT_EQ(pool_attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), kMiB + 12 * kGiB);
  EXPECT_EQ(SP(cuMemFreeAsync)(large, stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuMemFreeAsync)(small, stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuMemPoolDestroy)(pool), CUDA_SUCCESS);
}

TEST_F(BadInput, RequestBeyondTheDevicesMemoryFromAHugeCapIsOutOfMemoryAndLeavesThePoolAsItWas) {
  CUmemoryPool pool = create_device_pool(size_t{1} << 50);
  CUdeviceptr kept = 0;
  ASSERT_EQ(SP(cuMemAllocFromPoolAsync)(&kept, kMiB, pool, stream), CUDA_SUCCESS);
  const std::uint64_t reserved = pool_attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT);
  CUdeviceptr too_large = 1;

  EXPECT_EQ(SP(cuMemAllocFromPoolAsync)(&too_large, 32 * kGiB, pool, stream), CUDA_ERROR_OUT_OF_MEMORY);

  EXPECT_EQ(too_large, 0u);
  EXPECT_EQ(pool_attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), reserved);
  EXPECT_EQ(pool_attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), kMiB);
  EXPECT_EQ(SP(cuMemFreeAsync)(kept, stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuMemPoolDestroy)(pool), CUDA_SUCCESS);
}

// The cap is kept in whole 32 MiB growth chunks (MAX_POOL_SIZE "may be higher than what was
// initially passed due to alignment", says the spec); SIZE_MAX cannot be rounded up within 64
// bits, so it reads back as the largest whole chunk count, never as 0 ("no limit").
TEST_F(BadInput, MaxSizeOfSizeMaxReadsBackAsTheLargestWholeChunkAndAllocates) {
  CUmemoryPool pool = create_device_pool(SIZE_MAX);
  CUdeviceptr pointer = 0;

  ASSERT_EQ(SP(cuMemAllocFromPoolAsync)(&pointer, kMiB, pool, stream), CUDA_SUCCESS);

  EXPECT_EQ(pool_attribute(pool, kMaxPoolSize), SIZE_MAX - (32 * kMiB - 1));
  EXPECT_EQ(SP(cuMemFreeAsync)(pointer, stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuMemPoolDestroy)(pool), CUDA_SUCCESS);
}

TEST_F(BadInput, FreeOfNullOnAForgedStreamIsInvalidHandleLikeAnAllocationOnIt) {
  auto* forged = reinterpret_cast<CUstream>(std::uintptr_t{0x12345});
  CUdeviceptr pointer = 1;

  EXPECT_EQ(SP(cuMemAllocAsync)(&pointer, 16, forged), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(SP(cuMemFreeAsync)(0, forged), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(SP_AS(cuMemFreeAsync_ptsz, cuMemFreeAsync)(0, forged), CUDA_ERROR_INVALID_HANDLE);
}

// A null event pointer is the driver's INVALID_VALUE; the hook, which tracks the new event only
// once the driver made one, must not read through it.
TEST_F(BadInput, EventCreateIntoNullIsInvalidValue) {
  EXPECT_EQ(SP(cuEventCreate)(nullptr, CU_EVENT_DEFAULT), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(SP(cuEventCreate)(nullptr, CU_EVENT_DISABLE_TIMING), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(BadInput, FreeOfNullOnARealStreamSucceeds) {
  EXPECT_EQ(SP(cuMemFreeAsync)(0, stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuMemFreeAsync)(0, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(SP_AS(cuMemFreeAsync_ptsz, cuMemFreeAsync)(0, nullptr), CUDA_SUCCESS);
}

}  // namespace
