// driver-behaviour.md, "Sizes, rounding, growth" (last rows): what the driver's pointer and
// device queries say about pool allocations.
#include "conformance.hpp"

#include <cstring>

namespace conformance {
namespace {

class PointerQueries : public ::testing::Test {
 protected:
  void SetUp() override {
    CU_ASSERT_OK(pool_.status());
    CU_ASSERT_OK(stream_.status());
    CU_ASSERT_OK(cuMemAllocFromPoolAsync(&p_, kMiB, pool_.get(), stream_.get()));
    CU_ASSERT_OK(cuStreamSynchronize(stream_.get()));
  }
  void TearDown() override {
    if (p_ != 0) {
      CU_EXPECT_OK(cuMemFreeAsync(p_, stream_.get()));
    }
    CU_EXPECT_OK(cuStreamSynchronize(stream_.get()));
  }

  OwnedPool pool_{device_pool_props()};
  OwnedStream stream_;
  CUdeviceptr p_ = 0;
};

TEST_F(PointerQueries, AddressRangeOfAnInteriorPointerIsTheAllocation) {
  CUdeviceptr base = 0;
  std::size_t size = 0;
  CU_ASSERT_OK(cuMemGetAddressRange(&base, &size, p_ + 100));
  EXPECT_EQ(p_, base);
  EXPECT_EQ(kMiB, size) << "the allocation itself, not the chunk";
}

TEST_F(PointerQueries, MempoolHandleAttributeNamesThePool) {
  CUmemoryPool owner = nullptr;
  CU_ASSERT_OK(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, p_ + 4096));
  EXPECT_EQ(pool_.get(), owner);
}

TEST_F(PointerQueries, PoolPointerIsNotLegacyIpcCapable) {
  // cuda.h says "a boolean" without a width: look at the first byte only (little-endian).
  int capable = -1;
  CU_ASSERT_OK(cuPointerGetAttribute(&capable, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, p_));
  EXPECT_EQ(0, capable & 0xFF);
}

TEST_F(PointerQueries, PoolPointerIsDeviceMemoryOfDeviceZero) {
  unsigned memory_type = 0;
  int ordinal = -1;
  CU_ASSERT_OK(cuPointerGetAttribute(&memory_type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p_));
  CU_ASSERT_OK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p_));
  EXPECT_EQ(static_cast<unsigned>(CU_MEMORYTYPE_DEVICE), memory_type);
  EXPECT_EQ(device(), ordinal);
}

TEST_F(PointerQueries, PluralAttributeQueryAgreesWithTheSingularOnes) {
  CUpointer_attribute attributes[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE,
                                      CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE};
  unsigned memory_type = 0;
  CUmemoryPool owner = nullptr;
  CUdeviceptr start = 0;
  std::size_t size = 0;
  void* values[] = {&memory_type, &owner, &start, &size};
  CU_ASSERT_OK(cuPointerGetAttributes(4, attributes, values, p_ + 100));

  unsigned single_type = 0;
  CUmemoryPool single_owner = nullptr;
  CUdeviceptr single_start = 0;
  std::size_t single_size = 0;
  CU_ASSERT_OK(cuPointerGetAttribute(&single_type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p_ + 100));
  CU_ASSERT_OK(cuPointerGetAttribute(&single_owner, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, p_ + 100));
  CU_ASSERT_OK(cuPointerGetAttribute(&single_start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p_ + 100));
  CU_ASSERT_OK(cuPointerGetAttribute(&single_size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p_ + 100));
  EXPECT_EQ(single_type, memory_type);
  EXPECT_EQ(single_owner, owner);
  EXPECT_EQ(single_start, start);
  EXPECT_EQ(single_size, size);
  EXPECT_EQ(pool_.get(), owner);
  EXPECT_LE(start, p_ + 100);
  EXPECT_GT(start + size, p_ + 100) << "the range holds the pointer";
}

TEST(PointerQueriesPlain, PlainAllocationHasNoMempoolHandle) {
  CUdeviceptr p = 0;
  CU_ASSERT_OK(cuMemAlloc(&p, kMiB));
  CUmemoryPool owner = reinterpret_cast<CUmemoryPool>(std::uintptr_t{1});
  CU_EXPECT_OK(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, p));
  EXPECT_EQ(nullptr, owner);
  CUdeviceptr base = 0;
  std::size_t size = 0;
  CU_EXPECT_OK(cuMemGetAddressRange(&base, &size, p + 100));
  EXPECT_EQ(p, base);
  EXPECT_EQ(kMiB, size);
  CU_EXPECT_OK(cuMemFree(p));
}

TEST(DeviceAttributes, MemoryPoolsAreSupported) {
  int supported = 0;
  CU_ASSERT_OK(cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, device()));
  EXPECT_EQ(1, supported);
}

TEST(DeviceAttributes, MempoolHandleTypesAreKnownBits) {
  // 0x9 (POSIX fd | fabric) on the H200 (measured); elsewhere only known handle-type bits.
  // streampool reports the handle types its own pools can export: POSIX file descriptors (not
  // fabric handles, which it does not serve).
  int types = -1;
  CU_ASSERT_OK(cuDeviceGetAttribute(&types, CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES, device()));
  EXPECT_EQ(0, types & ~0xF) << "only the four known handle-type bits, got " << types;
  char name[256] = {};
  CU_ASSERT_OK(cuDeviceGetName(name, sizeof name, device()));
  if (under_streampool()) {
    EXPECT_EQ(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, types);
  } else if (std::strstr(name, "H200") != nullptr) {
    EXPECT_EQ(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR | CU_MEM_HANDLE_TYPE_FABRIC, types);
  }
}

}  // namespace
}  // namespace conformance
