// Every kind of pool the spec describes, as the hooks serve it over the fake driver: pinned host
// (Host, HostNuma with a node the machine has), managed, and the default and current pool of each
// (location, allocation type). The memory of each kind is used the way a program uses it: the CPU
// reads and writes host and managed memory directly, copies and memsets reach all of them.
#include <cstring>

#include "hooks_test_api.hpp"

namespace {

constexpr size_t kMiB = size_t{1} << 20;

class PoolKinds : public hooks_test::DriverTest {
 protected:
  CUmemoryPool create(CUmemAllocationType type, CUmemLocationType location, int id, size_t max_size = 0,
                      CUresult expected = CUDA_SUCCESS) {
    CUmemPoolProps props{};
    props.allocType = type;
    props.location.type = location;
    props.location.id = id;
    props.maxSize = max_size;
    CUmemoryPool pool = nullptr;
    EXPECT_EQ(SP(cuMemPoolCreate)(&pool, &props), expected);
    return pool;
  }

  CUdeviceptr allocate(CUmemoryPool pool, size_t bytes) {
    CUdeviceptr pointer = 0;
    EXPECT_EQ(SP(cuMemAllocFromPoolAsync)(&pointer, bytes, pool, stream), CUDA_SUCCESS);
    return pointer;
  }

  void free_and_destroy(CUmemoryPool pool, CUdeviceptr pointer) {
    EXPECT_EQ(SP(cuMemFreeAsync)(pointer, stream), CUDA_SUCCESS);
    EXPECT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
    EXPECT_EQ(SP(cuMemPoolDestroy)(pool), CUDA_SUCCESS);
  }

  static CUmemLocation location(CUmemLocationType type, int id) {
    CUmemLocation where{};
    where.type = type;
    where.id = id;
    return where;
  }
};

TEST_F(PoolKinds, HostPoolMemoryIsHostMemoryTheCpuAndCopiesShare) {
  CUmemoryPool pool = create(CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_LOCATION_TYPE_HOST, 0);
  CUdeviceptr pointer = allocate(pool, 3 * kMiB);
  ASSERT_EQ(SP(cuMemsetD8Async)(pointer, 0x5e, 3 * kMiB, stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
  auto* bytes = reinterpret_cast<unsigned char*>(pointer);

  const unsigned char first = bytes[0];
  const unsigned char last = bytes[3 * kMiB - 1];
  bytes[1] = 0x21;  // the CPU writes; a copy sees it
  unsigned char copied[2] = {};
  ASSERT_EQ(SP(cuMemcpyDtoH_v2)(copied, pointer, 2), CUDA_SUCCESS);
  unsigned int memory_type = 0;
  void* host_pointer = nullptr;
  ASSERT_EQ(SP(cuPointerGetAttribute)(&memory_type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, pointer), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuPointerGetAttribute)(&host_pointer, CU_POINTER_ATTRIBUTE_HOST_POINTER, pointer), CUDA_SUCCESS);

  EXPECT_EQ(first, 0x5e);
  EXPECT_EQ(last, 0x5e);
  EXPECT_EQ(copied[0], 0x5e);
  EXPECT_EQ(copied[1], 0x21);
  EXPECT_EQ(memory_type, static_cast<unsigned>(CU_MEMORYTYPE_HOST));
  EXPECT_EQ(host_pointer, reinterpret_cast<void*>(pointer));
  free_and_destroy(pool, pointer);
}

TEST_F(PoolKinds, PointerAttributesInOneCallReportHostMemory) {
  CUmemoryPool pool = create(CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_LOCATION_TYPE_HOST_NUMA, 0);
  CUdeviceptr pointer = allocate(pool, kMiB);
  unsigned int memory_type = 0;
  CUmemoryPool owner = nullptr;
  CUpointer_attribute attributes[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE};
  void* data[] = {&memory_type, &owner};

  ASSERT_EQ(SP(cuPointerGetAttributes)(2, attributes, data, pointer), CUDA_SUCCESS);

  EXPECT_EQ(memory_type, static_cast<unsigned>(CU_MEMORYTYPE_HOST));
  EXPECT_EQ(owner, pool);
  free_and_destroy(pool, pointer);
}

TEST_F(PoolKinds, HostNumaPoolReportsItsNode) {
  CUmemoryPool pool = create(CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_LOCATION_TYPE_HOST_NUMA, 0);
  auto as_int = [](std::uint64_t value) { return static_cast<int>(static_cast<std::uint32_t>(value)); };

  EXPECT_EQ(as_int(pool_attribute(pool, 9)), CU_MEM_ALLOCATION_TYPE_PINNED);
  EXPECT_EQ(as_int(pool_attribute(pool, 11)), 0);
  EXPECT_EQ(as_int(pool_attribute(pool, 12)), CU_MEM_LOCATION_TYPE_HOST_NUMA);
  EXPECT_EQ(SP(cuMemPoolDestroy)(pool), CUDA_SUCCESS);
}

TEST_F(PoolKinds, HostNumaNodesTheMachineLacksAreInvalid) {
  (void)create(CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_LOCATION_TYPE_HOST_NUMA, 4095, 0, CUDA_ERROR_INVALID_VALUE);
  (void)create(CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_LOCATION_TYPE_HOST_NUMA, -1, 0, CUDA_ERROR_INVALID_VALUE);
  (void)create(CU_MEM_ALLOCATION_TYPE_MANAGED, CU_MEM_LOCATION_TYPE_HOST_NUMA, 4095, 0, CUDA_ERROR_INVALID_VALUE);
  (void)create(CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT, 0, 0, CUDA_ERROR_INVALID_VALUE);
}

TEST_F(PoolKinds, HostPoolStatisticsAndTrimmingWorkAsForDevicePools) {
  CUmemoryPool pool = create(CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_LOCATION_TYPE_HOST, 0);
  CUdeviceptr pointer = allocate(pool, 5 * kMiB);
  const std::uint64_t used = pool_attribute(pool, 7);
  const std::uint64_t reserved = pool_attribute(pool, 5);
  ASSERT_EQ(SP(cuMemFreeAsync)(pointer, stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
  const std::uint64_t used_after_free = pool_attribute(pool, 7);

  ASSERT_EQ(SP(cuMemPoolTrimTo)(pool, 0), CUDA_SUCCESS);

  EXPECT_GE(used, 5 * kMiB);
  EXPECT_GE(reserved, used);
  EXPECT_EQ(used_after_free, 0u);
  EXPECT_GE(pool_attribute(pool, 8), 5 * kMiB);  // USED_MEM_HIGH keeps the peak
  EXPECT_EQ(pool_attribute(pool, 5), 0u);         // trimmed to nothing
  EXPECT_EQ(SP(cuMemPoolDestroy)(pool), CUDA_SUCCESS);
}

TEST_F(PoolKinds, ManagedPoolMemoryIsManagedAndHostAccessible) {
  CUmemoryPool pool = create(CU_MEM_ALLOCATION_TYPE_MANAGED, CU_MEM_LOCATION_TYPE_NONE, 0);
  CUdeviceptr pointer = allocate(pool, kMiB);
  ASSERT_EQ(SP(cuMemsetD8Async)(pointer, 0x4d, kMiB, stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
  auto* bytes = reinterpret_cast<unsigned char*>(pointer);
  bool managed = false;

  const unsigned char seen = bytes[kMiB - 1];
  ASSERT_EQ(SP(cuPointerGetAttribute)(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, pointer), CUDA_SUCCESS);

  EXPECT_EQ(seen, 0x4d);
  EXPECT_TRUE(managed);
  EXPECT_EQ(static_cast<int>(pool_attribute(pool, 9) & 0xffffffffu), CU_MEM_ALLOCATION_TYPE_MANAGED);
  EXPECT_EQ(static_cast<int>(pool_attribute(pool, 10) & 0xffffffffu), 0);
  free_and_destroy(pool, pointer);
}

TEST_F(PoolKinds, ManagedPoolsTakeNeitherAMaxSizeNorHandleTypes) {
  (void)create(CU_MEM_ALLOCATION_TYPE_MANAGED, CU_MEM_LOCATION_TYPE_NONE, 0, 64 * kMiB, CUDA_ERROR_INVALID_VALUE);
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_MANAGED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = device;
  props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  CUmemoryPool pool = nullptr;

  EXPECT_EQ(SP(cuMemPoolCreate)(&pool, &props), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(pool, nullptr);
}

TEST_F(PoolKinds, HostPoolsAreNotIpcCapable) {
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_HOST;
  props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  CUmemoryPool pool = nullptr;

  EXPECT_EQ(SP(cuMemPoolCreate)(&pool, &props), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(PoolKinds, AllFifteenAttributesAnswerForEveryKind) {
  std::vector<CUmemoryPool> pools = {
      create(CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_LOCATION_TYPE_HOST, 0),
      create(CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_LOCATION_TYPE_HOST_NUMA, 0),
      create(CU_MEM_ALLOCATION_TYPE_MANAGED, CU_MEM_LOCATION_TYPE_NONE, 0),
      create(CU_MEM_ALLOCATION_TYPE_MANAGED, CU_MEM_LOCATION_TYPE_DEVICE, device),
  };
  for (CUmemoryPool pool : pools) {
    for (int attribute = 1; attribute <= 15; ++attribute) {
      std::uint64_t value = 0;
      EXPECT_EQ(SP(cuMemPoolGetAttribute)(pool, attribute_number(attribute), &value), CUDA_SUCCESS)
          << "attribute " << attribute;
    }
    EXPECT_EQ(static_cast<int>(pool_attribute(pool, 15) & 0xffffffffu), -1);  // not localised
    EXPECT_EQ(SP(cuMemPoolDestroy)(pool), CUDA_SUCCESS);
  }
}

// One current pool per (location, allocation type), starting as its default, kept consistent
// between cuMemSetMemPool and cuDeviceSetMemPool, and back to the default when destroyed.
TEST_F(PoolKinds, CurrentPoolsFollowTheirLocationAndAllocationType) {
  CUmemoryPool host_pool = create(CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_LOCATION_TYPE_HOST, 0);
  CUmemoryPool managed_pool = create(CU_MEM_ALLOCATION_TYPE_MANAGED, CU_MEM_LOCATION_TYPE_NONE, 0);
  CUmemoryPool device_pool = create_device_pool();
  CUmemLocation host = location(CU_MEM_LOCATION_TYPE_HOST, 0);
  CUmemLocation none = location(CU_MEM_LOCATION_TYPE_NONE, 0);
  CUmemLocation on_device = location(CU_MEM_LOCATION_TYPE_DEVICE, device);
  CUmemoryPool host_default = nullptr;
  CUmemoryPool managed_default = nullptr;
  ASSERT_EQ(SP(cuMemGetDefaultMemPool)(&host_default, &host, CU_MEM_ALLOCATION_TYPE_PINNED), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemGetDefaultMemPool)(&managed_default, &none, CU_MEM_ALLOCATION_TYPE_MANAGED), CUDA_SUCCESS);

  ASSERT_EQ(SP(cuMemSetMemPool)(&host, CU_MEM_ALLOCATION_TYPE_PINNED, host_pool), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemSetMemPool)(&none, CU_MEM_ALLOCATION_TYPE_MANAGED, managed_pool), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemSetMemPool)(&on_device, CU_MEM_ALLOCATION_TYPE_PINNED, device_pool), CUDA_SUCCESS);
  CUmemoryPool current_host = nullptr;
  CUmemoryPool current_managed = nullptr;
  CUmemoryPool current_device = nullptr;
  ASSERT_EQ(SP(cuMemGetMemPool)(&current_host, &host, CU_MEM_ALLOCATION_TYPE_PINNED), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemGetMemPool)(&current_managed, &none, CU_MEM_ALLOCATION_TYPE_MANAGED), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuDeviceGetMemPool)(&current_device, device), CUDA_SUCCESS);
  // A pool made current for the wrong location or allocation type is refused.
  EXPECT_EQ(SP(cuMemSetMemPool)(&host, CU_MEM_ALLOCATION_TYPE_PINNED, managed_pool), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(SP(cuMemSetMemPool)(&none, CU_MEM_ALLOCATION_TYPE_MANAGED, host_pool), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(SP(cuDeviceSetMemPool)(device, host_pool), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(SP(cuMemPoolDestroy)(host_pool), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemPoolDestroy)(managed_pool), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemPoolDestroy)(device_pool), CUDA_SUCCESS);
  CUmemoryPool host_after = nullptr;
  CUmemoryPool managed_after = nullptr;
  CUmemoryPool device_after = nullptr;
  CUmemoryPool device_default = nullptr;
  ASSERT_EQ(SP(cuMemGetMemPool)(&host_after, &host, CU_MEM_ALLOCATION_TYPE_PINNED), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemGetMemPool)(&managed_after, &none, CU_MEM_ALLOCATION_TYPE_MANAGED), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemGetMemPool)(&device_after, &on_device, CU_MEM_ALLOCATION_TYPE_PINNED), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuDeviceGetDefaultMemPool)(&device_default, device), CUDA_SUCCESS);

  EXPECT_EQ(current_host, host_pool);
  EXPECT_EQ(current_managed, managed_pool);
  EXPECT_EQ(current_device, device_pool);
  EXPECT_EQ(host_after, host_default);
  EXPECT_EQ(managed_after, managed_default);
  EXPECT_EQ(device_after, device_default);
  EXPECT_NE(host_default, managed_default);
}

// Each location has its own pair: Host and a HostNuma node are different places, and so are
// managed memory with no location and managed memory preferring a device.
TEST_F(PoolKinds, EachLocationHasItsOwnDefaultAndCurrentPool) {
  CUmemLocation host = location(CU_MEM_LOCATION_TYPE_HOST, 0);
  CUmemLocation node = location(CU_MEM_LOCATION_TYPE_HOST_NUMA, 0);
  CUmemLocation none = location(CU_MEM_LOCATION_TYPE_NONE, 0);
  CUmemLocation on_device = location(CU_MEM_LOCATION_TYPE_DEVICE, device);
  CUmemoryPool host_default = nullptr;
  CUmemoryPool node_default = nullptr;
  CUmemoryPool managed_default = nullptr;
  CUmemoryPool managed_device_default = nullptr;
  ASSERT_EQ(SP(cuMemGetDefaultMemPool)(&host_default, &host, CU_MEM_ALLOCATION_TYPE_PINNED), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemGetDefaultMemPool)(&node_default, &node, CU_MEM_ALLOCATION_TYPE_PINNED), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemGetDefaultMemPool)(&managed_default, &none, CU_MEM_ALLOCATION_TYPE_MANAGED), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemGetDefaultMemPool)(&managed_device_default, &on_device, CU_MEM_ALLOCATION_TYPE_MANAGED),
            CUDA_SUCCESS);
  CUmemoryPool node_pool = create(CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_LOCATION_TYPE_HOST_NUMA, 0);

  ASSERT_EQ(SP(cuMemSetMemPool)(&node, CU_MEM_ALLOCATION_TYPE_PINNED, node_pool), CUDA_SUCCESS);
  CUmemoryPool host_current = nullptr;
  CUmemoryPool node_current = nullptr;
  ASSERT_EQ(SP(cuMemGetMemPool)(&host_current, &host, CU_MEM_ALLOCATION_TYPE_PINNED), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemGetMemPool)(&node_current, &node, CU_MEM_ALLOCATION_TYPE_PINNED), CUDA_SUCCESS);

  EXPECT_NE(host_default, node_default);
  EXPECT_NE(managed_default, managed_device_default);
  EXPECT_EQ(static_cast<int>(pool_attribute(node_default, 12) & 0xffffffffu), CU_MEM_LOCATION_TYPE_HOST_NUMA);
  EXPECT_EQ(static_cast<int>(pool_attribute(managed_device_default, 12) & 0xffffffffu), CU_MEM_LOCATION_TYPE_DEVICE);
  EXPECT_EQ(static_cast<int>(pool_attribute(managed_device_default, 11) & 0xffffffffu), device);
  EXPECT_EQ(host_current, host_default);  // setting the node's pool left Host's alone
  EXPECT_EQ(node_current, node_pool);
  // A Host pool cannot be current for a NUMA node, nor a no-location managed pool for a device.
  EXPECT_EQ(SP(cuMemSetMemPool)(&node, CU_MEM_ALLOCATION_TYPE_PINNED, host_default), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(SP(cuMemSetMemPool)(&on_device, CU_MEM_ALLOCATION_TYPE_MANAGED, managed_default), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(SP(cuMemPoolDestroy)(node_default), CUDA_ERROR_INVALID_VALUE);  // defaults stay
  EXPECT_EQ(SP(cuMemPoolDestroy)(node_pool), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemGetMemPool)(&node_current, &node, CU_MEM_ALLOCATION_TYPE_PINNED), CUDA_SUCCESS);
  EXPECT_EQ(node_current, node_default);
}

TEST_F(PoolKinds, LookupsOfPlacesTheSpecDoesNotListAreInvalid) {
  CUmemoryPool pool = nullptr;
  CUmemLocation missing_node = location(CU_MEM_LOCATION_TYPE_HOST_NUMA, 4095);
  CUmemLocation current_node = location(CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT, 0);
  CUmemLocation none = location(CU_MEM_LOCATION_TYPE_NONE, 0);
  CUmemLocation missing_device = location(CU_MEM_LOCATION_TYPE_DEVICE, 64);

  EXPECT_EQ(SP(cuMemGetDefaultMemPool)(&pool, &missing_node, CU_MEM_ALLOCATION_TYPE_PINNED), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(SP(cuMemGetMemPool)(&pool, &current_node, CU_MEM_ALLOCATION_TYPE_PINNED), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(SP(cuMemGetMemPool)(&pool, &none, CU_MEM_ALLOCATION_TYPE_PINNED), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(SP(cuMemGetMemPool)(&pool, &missing_device, CU_MEM_ALLOCATION_TYPE_MANAGED), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(pool, nullptr);
}

TEST_F(PoolKinds, DefaultHostAndManagedPoolsServeAllocations) {
  CUmemLocation host = location(CU_MEM_LOCATION_TYPE_HOST, 0);
  CUmemLocation none = location(CU_MEM_LOCATION_TYPE_NONE, 0);
  CUmemoryPool host_default = nullptr;
  CUmemoryPool managed_default = nullptr;
  ASSERT_EQ(SP(cuMemGetDefaultMemPool)(&host_default, &host, CU_MEM_ALLOCATION_TYPE_PINNED), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemGetDefaultMemPool)(&managed_default, &none, CU_MEM_ALLOCATION_TYPE_MANAGED), CUDA_SUCCESS);

  CUdeviceptr host_memory = allocate(host_default, 4096);
  CUdeviceptr managed_memory = allocate(managed_default, 4096);
  ASSERT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
  reinterpret_cast<unsigned char*>(host_memory)[0] = 1;
  reinterpret_cast<unsigned char*>(managed_memory)[0] = 2;

  EXPECT_EQ(reinterpret_cast<unsigned char*>(host_memory)[0], 1);
  EXPECT_EQ(reinterpret_cast<unsigned char*>(managed_memory)[0], 2);
  EXPECT_EQ(SP(cuMemFreeAsync)(host_memory, stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuMemFreeAsync)(managed_memory, stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
}

}  // namespace
