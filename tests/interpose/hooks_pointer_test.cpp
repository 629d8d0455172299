// Pool pointers where any pointer can go: attributes, address range, cuMemFree.
#include "fault_switch.hpp"
#include "hooks_test_api.hpp"

namespace {

class PointerHooks : public hooks_test::DriverTest {};

constexpr size_t kMiB = size_t{1} << 20;

TEST_F(PointerHooks, PointerAttributesDescribeThePoolAllocation) {
  CUmemoryPool pool = create_device_pool();
  CUdeviceptr pointer = 0;
  ASSERT_EQ(SP(cuMemAllocFromPoolAsync)(&pointer, kMiB, pool, stream), CUDA_SUCCESS);
  CUdeviceptr start = 0;
  size_t size = 0;
  CUmemoryPool owner = nullptr;
  bool legacy_ipc = true;

  EXPECT_EQ(SP(cuPointerGetAttribute)(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, pointer + 100), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuPointerGetAttribute)(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, pointer + 100), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuPointerGetAttribute)(&owner, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, pointer), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuPointerGetAttribute)(&legacy_ipc, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, pointer),
            CUDA_SUCCESS);

  EXPECT_EQ(start, pointer);
  EXPECT_EQ(size, kMiB);
  EXPECT_EQ(owner, pool);
  EXPECT_FALSE(legacy_ipc);
  EXPECT_EQ(SP(cuMemFreeAsync)(pointer, stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuMemPoolDestroy)(pool), CUDA_SUCCESS);
}

// What streampool answers of a pool pointer it answers itself, whatever the driver would say of
// the mapping underneath; IS_LEGACY_CUDA_IPC_CAPABLE alone asks the driver first (for its
// errors: a pointer the driver no longer maps is an error there), then clears the answer.
TEST_F(PointerHooks, PoolAttributesAreAnsweredWithoutTheDriverAndLegacyIpcOnlyAfterIt) {
  CUmemoryPool pool = create_device_pool();
  CUdeviceptr pointer = 0;
  ASSERT_EQ(SP(cuMemAllocFromPoolAsync)(&pointer, kMiB, pool, stream), CUDA_SUCCESS);
  hooks_test::fail_calls("cuPointerGetAttribute", 1, 0, CUDA_ERROR_INVALID_VALUE);
  CUmemoryPool owner = nullptr;
  size_t size = 0;
  unsigned char legacy_ipc = 7;

  EXPECT_EQ(SP(cuPointerGetAttribute)(&owner, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, pointer), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuPointerGetAttribute)(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, pointer), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuPointerGetAttribute)(&legacy_ipc, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, pointer),
            CUDA_ERROR_INVALID_VALUE);

  hooks_test::clear_failures();
  EXPECT_EQ(owner, pool);
  EXPECT_EQ(size, kMiB);
  EXPECT_EQ(SP(cuPointerGetAttribute)(&legacy_ipc, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, pointer),
            CUDA_SUCCESS);
  EXPECT_EQ(legacy_ipc, 0);
  EXPECT_EQ(SP(cuMemFreeAsync)(pointer, stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuMemPoolDestroy)(pool), CUDA_SUCCESS);
}

TEST_F(PointerHooks, PointerGetAttributesAnswersTheSameForAPoolPointer) {
  CUdeviceptr pointer = 0;
  ASSERT_EQ(SP(cuMemAllocAsync)(&pointer, 3000, stream), CUDA_SUCCESS);
  CUmemoryPool current = nullptr;
  ASSERT_EQ(SP(cuDeviceGetMemPool)(&current, device), CUDA_SUCCESS);
  CUpointer_attribute attributes[] = {CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                      CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE};
  CUdeviceptr start = 0;
  size_t size = 0;
  CUmemoryPool owner = nullptr;
  void* data[] = {&start, &size, &owner};

  ASSERT_EQ(SP(cuPointerGetAttributes)(3, attributes, data, pointer + 7), CUDA_SUCCESS);

  EXPECT_EQ(start, pointer);
  EXPECT_EQ(size, 3000u);
  EXPECT_EQ(owner, current);
  EXPECT_EQ(SP(cuMemFreeAsync)(pointer, stream), CUDA_SUCCESS);
}

// Only the `count` entries asked for are answered: what lies past them is the program's.
TEST_F(PointerHooks, PointerGetAttributesTouchesNothingPastTheCountItWasGiven) {
  CUdeviceptr pointer = 0;
  ASSERT_EQ(SP(cuMemAllocAsync)(&pointer, 3000, stream), CUDA_SUCCESS);
  CUpointer_attribute attributes[] = {CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE};
  CUdeviceptr start = 0;
  size_t canary = 0x5a5a5a5a;
  void* data[] = {&start, &canary};

  ASSERT_EQ(SP(cuPointerGetAttributes)(1, attributes, data, pointer), CUDA_SUCCESS);

  EXPECT_EQ(start, pointer);
  EXPECT_EQ(canary, 0x5a5a5a5au) << "an entry past the count was written";
  EXPECT_EQ(SP(cuMemFreeAsync)(pointer, stream), CUDA_SUCCESS);
}

TEST_F(PointerHooks, AddressRangeOfAnInteriorPointerIsTheAllocation) {
  CUdeviceptr pointer = 0;
  ASSERT_EQ(SP(cuMemAllocAsync)(&pointer, kMiB, stream), CUDA_SUCCESS);
  CUdeviceptr base = 0;
  size_t size = 0;

  ASSERT_EQ(SP(cuMemGetAddressRange_v2)(&base, &size, pointer + 100), CUDA_SUCCESS);

  EXPECT_EQ(base, pointer);
  EXPECT_EQ(size, kMiB);
  EXPECT_EQ(SP(cuMemFreeAsync)(pointer, stream), CUDA_SUCCESS);
}

TEST_F(PointerHooks, MemFreeOfPoolPointersKeepsUsedMemoryExact) {
  CUmemoryPool pool = create_device_pool();
  CUdeviceptr first = 0;
  CUdeviceptr second = 0;
  ASSERT_EQ(SP(cuMemAllocFromPoolAsync)(&first, 1000, pool, stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemAllocFromPoolAsync)(&second, 2000, pool, stream), CUDA_SUCCESS);
  ASSERT_EQ(pool_attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 3000u);

  EXPECT_EQ(SP(cuMemFree_v2)(second), CUDA_SUCCESS);
  EXPECT_EQ(pool_attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 1000u);
  EXPECT_EQ(SP(cuMemFree_v2)(first), CUDA_SUCCESS);
  EXPECT_EQ(pool_attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 0u);
  EXPECT_EQ(SP(cuMemPoolDestroy)(pool), CUDA_SUCCESS);
}

TEST_F(PointerHooks, MemFreeOfAnInteriorPoolPointerIsInvalid) {
  CUdeviceptr pointer = 0;
  ASSERT_EQ(SP(cuMemAllocAsync)(&pointer, 4096, stream), CUDA_SUCCESS);

  EXPECT_EQ(SP(cuMemFree_v2)(pointer + 512), CUDA_ERROR_INVALID_VALUE);

  EXPECT_EQ(SP(cuMemFree_v2)(pointer), CUDA_SUCCESS);
}

}  // namespace
