// driver-behaviour.md, "Edge cases": creating, capping, destroying pools and finding the
// default ones.
#include "conformance.hpp"

namespace conformance {
namespace {

TEST(PoolLifecycle, ZeroedPropsAreInvalidValue) {
  CUmemPoolProps props{};
  CUmemoryPool pool = nullptr;
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemPoolCreate(&pool, &props));
}

TEST(PoolLifecycle, NullArgumentsAreInvalidValue) {
  const CUmemPoolProps props = device_pool_props();
  CUmemoryPool pool = nullptr;
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemPoolCreate(nullptr, &props));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemPoolCreate(&pool, nullptr));
}

TEST(PoolLifecycle, NonexistentDeviceIsInvalidValue) {
  int count = 0;
  CU_ASSERT_OK(cuDeviceGetCount(&count));
  CUmemPoolProps props = device_pool_props();
  props.location.id = count;  // one past the last device
  CUmemoryPool pool = nullptr;
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemPoolCreate(&pool, &props));
}

TEST(PoolLifecycle, NonZeroReservedByteIsInvalidValue) {
  CUmemPoolProps props = device_pool_props();
  props.reserved[sizeof props.reserved - 1] = 1;
  CUmemoryPool pool = nullptr;
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemPoolCreate(&pool, &props));
}

TEST(PoolLifecycle, TinyMaxSizeIsRoundedUpToOneChunk) {
  // maxSize = 1000: 4 KiB and 8 MiB fit (the cap is rounded up to the 32 MiB chunk), 64 MiB not.
  OwnedPool pool(device_pool_props(1000));
  CU_ASSERT_OK(pool.status());
  CONFORMANCE_STREAM(stream);
  CUdeviceptr small = 0;
  CUdeviceptr medium = 0;
  CUdeviceptr large = 0;
  CU_EXPECT_OK(cuMemAllocFromPoolAsync(&small, 4 * kKiB, pool.get(), stream.get()));
  CU_EXPECT_OK(cuMemAllocFromPoolAsync(&medium, 8 * kMiB, pool.get(), stream.get()));
  EXPECT_EQ(CUDA_ERROR_OUT_OF_MEMORY, cuMemAllocFromPoolAsync(&large, 64 * kMiB, pool.get(), stream.get()));
  EXPECT_EQ(0U, large);
  if (small != 0) {
    CU_EXPECT_OK(cuMemFreeAsync(small, stream.get()));
  }
  if (medium != 0) {
    CU_EXPECT_OK(cuMemFreeAsync(medium, stream.get()));
  }
  CU_EXPECT_OK(cuStreamSynchronize(stream.get()));
}

TEST(PoolLifecycle, MaxSizeCapsTheSecondOfTwoLargeAllocations) {
  OwnedPool pool(device_pool_props(64 * kMiB));
  CU_ASSERT_OK(pool.status());
  CONFORMANCE_STREAM(stream);
  CUdeviceptr first = 0;
  CUdeviceptr second = 0;
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&first, 40 * kMiB, pool.get(), stream.get()));
  EXPECT_EQ(CUDA_ERROR_OUT_OF_MEMORY, cuMemAllocFromPoolAsync(&second, 40 * kMiB, pool.get(), stream.get()));
  EXPECT_EQ(0U, second);
  const std::uint64_t held = reserved(pool.get());
  if (under_streampool()) {
    // Growth by granules: at least the live 40 MiB, never beyond the cap.
    EXPECT_GE(held, 40 * kMiB);
    EXPECT_LE(held, 64 * kMiB);
    EXPECT_EQ(0U, held % vmm_granularity());
  } else {
    EXPECT_EQ(64 * kMiB, held);
  }
  CU_EXPECT_OK(cuMemFreeAsync(first, stream.get()));
  CU_EXPECT_OK(cuStreamSynchronize(stream.get()));
}

TEST(PoolLifecycle, HostPoolAllocatesHostMemory) {
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
  props.location.type = CU_MEM_LOCATION_TYPE_HOST;
  props.location.id = 0;
  OwnedPool pool(props);
  CU_ASSERT_OK(pool.status());
  CONFORMANCE_STREAM(stream);
  CUdeviceptr p = 0;
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&p, 4 * kKiB, pool.get(), stream.get()));
  CU_ASSERT_OK(cuStreamSynchronize(stream.get()));
  unsigned memory_type = 0;
  CU_EXPECT_OK(cuPointerGetAttribute(&memory_type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p));
  EXPECT_EQ(static_cast<unsigned>(CU_MEMORYTYPE_HOST), memory_type);
  CU_EXPECT_OK(cuMemFreeAsync(p, stream.get()));
  CU_EXPECT_OK(cuStreamSynchronize(stream.get()));
}

TEST(PoolLifecycle, ManagedPoolWithoutLocationIsCreatedAndDestroyed) {
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_MANAGED;
  props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
  props.location.type = CU_MEM_LOCATION_TYPE_NONE;
  props.location.id = 0;
  CUmemoryPool pool = nullptr;
  CU_ASSERT_OK(cuMemPoolCreate(&pool, &props));
  EXPECT_NE(nullptr, pool);
  CU_EXPECT_OK(cuMemPoolDestroy(pool));
}

TEST(PoolLifecycle, DefaultPoolCannotBeDestroyed) {
  CUmemoryPool pool = nullptr;
  CU_ASSERT_OK(cuDeviceGetDefaultMemPool(&pool, device()));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemPoolDestroy(pool));
  CONFORMANCE_STREAM(stream);
  CUdeviceptr p = 0;
  CU_EXPECT_OK(cuMemAllocFromPoolAsync(&p, 16, pool, stream.get()));  // and it still works
  CU_EXPECT_OK(cuMemFreeAsync(p, stream.get()));
}

TEST(PoolLifecycle, DestroyWithAnOutstandingAllocationDefersTheRelease) {
  OwnedPool pool(device_pool_props());
  CU_ASSERT_OK(pool.status());
  CONFORMANCE_STREAM(stream);
  CUdeviceptr p = 0;
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&p, kMiB, pool.get(), stream.get()));
  CU_ASSERT_OK(cuMemsetD8Async(p, 0x7f, kMiB, stream.get()));
  CU_EXPECT_OK(cuMemPoolDestroy(pool.get()));
  pool.forget();
  CU_EXPECT_OK(cuMemFreeAsync(p, stream.get()));
  CU_EXPECT_OK(cuStreamSynchronize(stream.get()));
}

TEST(PoolLifecycle, SecondDestroyIsInvalidValue) {
  CUmemoryPool pool = nullptr;
  const CUmemPoolProps props = device_pool_props();
  CU_ASSERT_OK(cuMemPoolCreate(&pool, &props));
  CU_EXPECT_OK(cuMemPoolDestroy(pool));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemPoolDestroy(pool));
}

TEST(PoolLifecycle, DefaultPinnedDevicePoolIsTheDevicesDefaultPool) {
  CUmemoryPool by_device = nullptr;
  CU_ASSERT_OK(cuDeviceGetDefaultMemPool(&by_device, device()));
  CUmemLocation location{};
  location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  location.id = device();
  CUmemoryPool by_location = nullptr;
  CU_ASSERT_OK(cuMemGetDefaultMemPool(&by_location, &location, CU_MEM_ALLOCATION_TYPE_PINNED));
  EXPECT_EQ(by_device, by_location);
}

TEST(PoolLifecycle, DefaultPoolsExistForHostAndManagedKinds) {
  struct Kind {
    CUmemLocationType location;
    CUmemAllocationType type;
  };
  for (const Kind kind : {Kind{CU_MEM_LOCATION_TYPE_HOST, CU_MEM_ALLOCATION_TYPE_PINNED},
                          Kind{CU_MEM_LOCATION_TYPE_NONE, CU_MEM_ALLOCATION_TYPE_MANAGED},
                          Kind{CU_MEM_LOCATION_TYPE_DEVICE, CU_MEM_ALLOCATION_TYPE_MANAGED}}) {
    CUmemLocation location{};
    location.type = kind.location;
    location.id = kind.location == CU_MEM_LOCATION_TYPE_DEVICE ? device() : 0;
    CUmemoryPool pool = nullptr;
    EXPECT_EQ(CUDA_SUCCESS, cuMemGetDefaultMemPool(&pool, &location, kind.type))
        << "location type " << static_cast<int>(kind.location) << ", allocation type " << static_cast<int>(kind.type);
    EXPECT_NE(nullptr, pool);
  }
}

}  // namespace
}  // namespace conformance
