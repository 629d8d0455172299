// Pool handles and attributes as the hooks serve them: all 15 attributes, bad handles, the pool
// family's device attributes, current pools.
#include "hooks_test_api.hpp"

namespace {

class PoolHooks : public hooks_test::DriverTest {};

constexpr size_t kMiB = size_t{1} << 20;

TEST_F(PoolHooks, AllFifteenAttributesOfACreatedDevicePoolAnswer) {
  CUmemoryPool pool = create_device_pool(64 * kMiB);
  auto as_int = [](std::uint64_t value) { return static_cast<int>(static_cast<std::uint32_t>(value)); };

  EXPECT_EQ(as_int(pool_attribute(pool, 1)), 1);  // REUSE_FOLLOW_EVENT_DEPENDENCIES
  EXPECT_EQ(as_int(pool_attribute(pool, 2)), 1);  // REUSE_ALLOW_OPPORTUNISTIC
  EXPECT_EQ(as_int(pool_attribute(pool, 3)), 1);  // REUSE_ALLOW_INTERNAL_DEPENDENCIES
  EXPECT_EQ(pool_attribute(pool, 4), 0u);         // RELEASE_THRESHOLD
  EXPECT_EQ(pool_attribute(pool, 5), 0u);         // RESERVED_MEM_CURRENT
  EXPECT_EQ(pool_attribute(pool, 6), 0u);         // RESERVED_MEM_HIGH
  EXPECT_EQ(pool_attribute(pool, 7), 0u);         // USED_MEM_CURRENT
  EXPECT_EQ(pool_attribute(pool, 8), 0u);         // USED_MEM_HIGH
  EXPECT_EQ(as_int(pool_attribute(pool, 9)), CU_MEM_ALLOCATION_TYPE_PINNED);
  EXPECT_EQ(as_int(pool_attribute(pool, 10)), 0);  // EXPORT_HANDLE_TYPES
  EXPECT_EQ(as_int(pool_attribute(pool, 11)), device);
  EXPECT_EQ(as_int(pool_attribute(pool, 12)), CU_MEM_LOCATION_TYPE_DEVICE);
  EXPECT_GE(pool_attribute(pool, 13), 64 * kMiB);  // MAX_POOL_SIZE, rounded up
  EXPECT_EQ(as_int(pool_attribute(pool, 14)), 0);  // HW_DECOMPRESS_ENABLED
  EXPECT_EQ(as_int(pool_attribute(pool, 15)), -1);  // LOCALITY_DOMAIN_ID
  EXPECT_EQ(SP(cuMemPoolDestroy)(pool), CUDA_SUCCESS);
}

TEST_F(PoolHooks, AttributesOutsideOneToFifteenAreInvalid) {
  CUmemoryPool pool = nullptr;
  ASSERT_EQ(SP(cuDeviceGetDefaultMemPool)(&pool, device), CUDA_SUCCESS);
  std::uint64_t value = 0;

  EXPECT_EQ(SP(cuMemPoolGetAttribute)(pool, attribute_number(0), &value), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(SP(cuMemPoolGetAttribute)(pool, attribute_number(16), &value), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(SP(cuMemPoolSetAttribute)(pool, attribute_number(16), &value), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(PoolHooks, BadPoolHandlesGiveInvalidValueNotACrash) {
  auto* bogus = reinterpret_cast<CUmemoryPool>(std::uintptr_t{0x1234});
  std::uint64_t value = 0;
  CUdeviceptr pointer = 1;

  EXPECT_EQ(SP(cuMemPoolGetAttribute)(bogus, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &value), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(SP(cuMemPoolSetAttribute)(bogus, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &value), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(SP(cuMemPoolTrimTo)(bogus, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(SP(cuMemPoolDestroy)(bogus), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(SP(cuMemAllocFromPoolAsync)(&pointer, 16, bogus, stream), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(pointer, 0u);
  EXPECT_EQ(SP(cuDeviceSetMemPool)(device, bogus), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(SP(cuMemPoolGetAttribute)(nullptr, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &value), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(PoolHooks, DeviceAttributesReportPoolSupportAndPosixFdHandles) {
  int supported = 0;
  int handle_types = -1;

  ASSERT_EQ(SP(cuDeviceGetAttribute)(&supported, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, device), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuDeviceGetAttribute)(&handle_types, CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES, device),
            CUDA_SUCCESS);

  EXPECT_EQ(supported, 1);
  EXPECT_EQ(handle_types, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);  // the fake driver exports VMM as fds
}

TEST_F(PoolHooks, SetMemPoolRoutesAllocAsyncUntilThePoolIsDestroyed) {
  CUmemoryPool pool = create_device_pool();
  CUmemoryPool default_pool = nullptr;
  ASSERT_EQ(SP(cuDeviceGetDefaultMemPool)(&default_pool, device), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuDeviceSetMemPool)(device, pool), CUDA_SUCCESS);
  CUdeviceptr pointer = 0;
  CUmemoryPool owner = nullptr;

  ASSERT_EQ(SP(cuMemAllocAsync)(&pointer, 512, stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuPointerGetAttribute)(&owner, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, pointer), CUDA_SUCCESS);
  EXPECT_EQ(owner, pool);
  EXPECT_EQ(SP(cuMemFreeAsync)(pointer, stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuMemPoolDestroy)(pool), CUDA_SUCCESS);

  CUmemoryPool current = nullptr;
  ASSERT_EQ(SP(cuDeviceGetMemPool)(&current, device), CUDA_SUCCESS);
  EXPECT_EQ(current, default_pool);
}

// The allocation hooks cache each stream's route together with its device's current pool: a change
// of the current pool must reach a stream that already allocated on this thread.
TEST_F(PoolHooks, CurrentPoolChangesReachAStreamThatAllocatedBefore) {
  CUmemoryPool default_pool = nullptr;
  ASSERT_EQ(SP(cuDeviceGetDefaultMemPool)(&default_pool, device), CUDA_SUCCESS);
  CUdeviceptr pointer = 0;
  ASSERT_EQ(SP(cuMemAllocAsync)(&pointer, 512, stream), CUDA_SUCCESS);  // route and pool now cached
  ASSERT_EQ(SP(cuMemFreeAsync)(pointer, stream), CUDA_SUCCESS);
  CUmemoryPool pool = create_device_pool();
  CUmemoryPool owner_while_set = nullptr;
  CUmemoryPool owner_after_destroy = nullptr;

  ASSERT_EQ(SP(cuDeviceSetMemPool)(device, pool), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemAllocAsync)(&pointer, 512, stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuPointerGetAttribute)(&owner_while_set, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, pointer), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemFreeAsync)(pointer, stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemPoolDestroy)(pool), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemAllocAsync)(&pointer, 512, stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuPointerGetAttribute)(&owner_after_destroy, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, pointer),
            CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemFreeAsync)(pointer, stream), CUDA_SUCCESS);

  EXPECT_EQ(owner_while_set, pool);
  EXPECT_EQ(owner_after_destroy, default_pool);
}

TEST_F(PoolHooks, IpcCallsRefuseWhatIsNotShared) {
  CUmemoryPool pool = create_device_pool();  // no handle types
  CUdeviceptr allocation = 0;
  ASSERT_EQ(SP(cuMemAllocFromPoolAsync)(&allocation, 1024, pool, stream), CUDA_SUCCESS);
  CUmemPoolPtrExportData data{};
  int handle = -1;
  CUmemoryPool imported = nullptr;
  CUdeviceptr pointer = 0;

  EXPECT_EQ(SP(cuMemPoolExportToShareableHandle)(&handle, pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(SP(cuMemPoolImportFromShareableHandle)(&imported, reinterpret_cast<void*>(std::intptr_t{-1}),
                                                   CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(SP(cuMemPoolExportPointer)(&data, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(SP(cuMemPoolExportPointer)(&data, allocation), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(SP(cuMemPoolImportPointer)(&pointer, pool, &data), CUDA_ERROR_INVALID_VALUE);  // not an imported pool
  EXPECT_EQ(handle, -1);
  EXPECT_EQ(imported, nullptr);
  EXPECT_EQ(pointer, 0u);
  EXPECT_EQ(SP(cuMemFreeAsync)(allocation, stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuMemPoolDestroy)(pool), CUDA_SUCCESS);
}

TEST_F(PoolHooks, PoolsWithPosixFdHandlesAreCreatedAndAllocate) {
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = device;
  props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  CUmemoryPool pool = nullptr;
  CUdeviceptr allocation = 0;

  ASSERT_EQ(SP(cuMemPoolCreate)(&pool, &props), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuMemAllocFromPoolAsync)(&allocation, 5 * kMiB, pool, stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuMemsetD8Async)(allocation, 7, 5 * kMiB, stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuMemFreeAsync)(allocation, stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuMemPoolDestroy)(pool), CUDA_SUCCESS);
}

}  // namespace
