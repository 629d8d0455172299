// Virtual memory management over host memory: reserve, create, map, access, unmap, accounting,
// sharing through POSIX file descriptors.
#include <unistd.h>

#include <cstring>
#include <vector>

#include "fake_test_support.hpp"

namespace fake_test {
namespace {

class VmmTest : public FakeDriverTest {
 protected:
  static CUmemAllocationProp device_prop(int device, bool exportable = false) {
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device;
    prop.requestedHandleTypes = exportable ? CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR : CU_MEM_HANDLE_TYPE_NONE;
    return prop;
  }
  static CUmemAccessDesc read_write(int device) {
    CUmemAccessDesc access{};
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = device;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    return access;
  }
  static size_t used_bytes() {
    size_t free_bytes = 0;
    size_t total = 0;
    cuMemGetInfo(&free_bytes, &total);
    return total - free_bytes;
  }
};

TEST_F(VmmTest, GranularityIsTwoMebibytesMinimumAndRecommended) {
  const auto prop = device_prop(0);
  size_t minimum = 0;
  size_t recommended = 0;
  ASSERT_EQ(cuMemGetAllocationGranularity(&minimum, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM), CUDA_SUCCESS);
  ASSERT_EQ(cuMemGetAllocationGranularity(&recommended, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED), CUDA_SUCCESS);
  EXPECT_EQ(minimum, kGranularity);
  EXPECT_EQ(recommended, kGranularity);
}

TEST_F(VmmTest, MappedMemoryHoldsDataWrittenThroughTheMapping) {
  CUdeviceptr base = 0;
  ASSERT_EQ(cuMemAddressReserve(&base, 4 * kGranularity, 0, 0, 0), CUDA_SUCCESS);
  const auto prop = device_prop(0);
  CUmemGenericAllocationHandle handle = 0;
  ASSERT_EQ(cuMemCreate(&handle, 2 * kGranularity, &prop, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemMap(base + kGranularity, 2 * kGranularity, 0, handle, 0), CUDA_SUCCESS);
  const auto access = read_write(0);

  ASSERT_EQ(cuMemSetAccess(base + kGranularity, 2 * kGranularity, &access, 1), CUDA_SUCCESS);
  auto* bytes = reinterpret_cast<unsigned char*>(base + kGranularity);
  bytes[0] = 0x5a;
  bytes[2 * kGranularity - 1] = 0xa5;
  std::vector<unsigned char> copy(2);
  ASSERT_EQ(cuMemcpyDtoH(copy.data(), base + kGranularity, 1), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyDtoH(copy.data() + 1, base + 3 * kGranularity - 1, 1), CUDA_SUCCESS);

  EXPECT_EQ(base % kGranularity, 0u);
  EXPECT_EQ(copy[0], 0x5a);
  EXPECT_EQ(copy[1], 0xa5);
  EXPECT_EQ(cuMemUnmap(base + kGranularity, 2 * kGranularity), CUDA_SUCCESS);
  EXPECT_EQ(cuMemRelease(handle), CUDA_SUCCESS);
  EXPECT_EQ(cuMemAddressFree(base, 4 * kGranularity), CUDA_SUCCESS);
}

TEST_F(VmmTest, CopiesMayCrossAdjacentMappings) {
  CUdeviceptr base = 0;
  ASSERT_EQ(cuMemAddressReserve(&base, 2 * kGranularity, 0, 0, 0), CUDA_SUCCESS);
  const auto prop = device_prop(0);
  CUmemGenericAllocationHandle first = 0;
  CUmemGenericAllocationHandle second = 0;
  ASSERT_EQ(cuMemCreate(&first, kGranularity, &prop, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemCreate(&second, kGranularity, &prop, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemMap(base, kGranularity, 0, first, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemMap(base + kGranularity, kGranularity, 0, second, 0), CUDA_SUCCESS);
  const auto access = read_write(0);
  ASSERT_EQ(cuMemSetAccess(base, 2 * kGranularity, &access, 1), CUDA_SUCCESS);
  std::vector<unsigned char> pattern(4096, 0x77);
  std::vector<unsigned char> back(4096, 0);

  ASSERT_EQ(cuMemcpyHtoD(base + kGranularity - 2048, pattern.data(), pattern.size()), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyDtoH(back.data(), base + kGranularity - 2048, back.size()), CUDA_SUCCESS);

  EXPECT_EQ(back, pattern);
  EXPECT_EQ(cuMemUnmap(base, 2 * kGranularity), CUDA_SUCCESS);  // both whole mappings at once
  cuMemRelease(first);
  cuMemRelease(second);
  cuMemAddressFree(base, 2 * kGranularity);
}

TEST_F(VmmTest, MappingWithoutAccessCannotBeCopiedTo) {
  CUdeviceptr base = 0;
  ASSERT_EQ(cuMemAddressReserve(&base, kGranularity, 0, 0, 0), CUDA_SUCCESS);
  const auto prop = device_prop(0);
  CUmemGenericAllocationHandle handle = 0;
  ASSERT_EQ(cuMemCreate(&handle, kGranularity, &prop, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemMap(base, kGranularity, 0, handle, 0), CUDA_SUCCESS);
  char byte = 1;
  unsigned long long flags = 99;
  CUmemLocation owner{CU_MEM_LOCATION_TYPE_DEVICE, 0};

  EXPECT_EQ(cuMemcpyHtoD(base, &byte, 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemGetAccess(&flags, &owner, base), CUDA_SUCCESS);
  EXPECT_EQ(flags, static_cast<unsigned long long>(CU_MEM_ACCESS_FLAGS_PROT_NONE));
  cuMemUnmap(base, kGranularity);
  cuMemRelease(handle);
  cuMemAddressFree(base, kGranularity);
}

TEST_F(VmmTest, PhysicalMemoryIsChargedUntilReleasedAndUnmapped) {
  const size_t used_at_start = used_bytes();
  CUdeviceptr base = 0;
  ASSERT_EQ(cuMemAddressReserve(&base, kGranularity, 0, 0, 0), CUDA_SUCCESS);
  const auto prop = device_prop(0);
  CUmemGenericAllocationHandle handle = 0;

  ASSERT_EQ(cuMemCreate(&handle, kGranularity, &prop, 0), CUDA_SUCCESS);
  const size_t used_after_create = used_bytes();
  ASSERT_EQ(cuMemMap(base, kGranularity, 0, handle, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemRelease(handle), CUDA_SUCCESS);
  const size_t used_while_still_mapped = used_bytes();
  ASSERT_EQ(cuMemUnmap(base, kGranularity), CUDA_SUCCESS);
  const size_t used_at_end = used_bytes();

  EXPECT_EQ(used_after_create - used_at_start, kGranularity);
  EXPECT_EQ(used_while_still_mapped, used_after_create);
  EXPECT_EQ(used_at_end, used_at_start);
  cuMemAddressFree(base, kGranularity);
}

TEST_F(VmmTest, CreateBeyondTheDeviceMemoryFailsWithOutOfMemory) {
  const auto prop = device_prop(0);
  CUmemGenericAllocationHandle most = 0;
  CUmemGenericAllocationHandle more = 0;
  ASSERT_EQ(cuMemCreate(&most, kMemoryPerDevice - 2 * kGranularity, &prop, 0), CUDA_SUCCESS);

  EXPECT_EQ(cuMemCreate(&more, 4 * kGranularity, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
  ASSERT_EQ(cuMemCreate(&more, 2 * kGranularity, &prop, 0), CUDA_SUCCESS);
  size_t free_bytes = 1;
  size_t total = 0;
  ASSERT_EQ(cuMemGetInfo(&free_bytes, &total), CUDA_SUCCESS);
  EXPECT_EQ(free_bytes, 0u);
  cuMemRelease(more);
  cuMemRelease(most);
  ASSERT_EQ(cuMemGetInfo(&free_bytes, &total), CUDA_SUCCESS);
  EXPECT_EQ(free_bytes, total);
}

TEST_F(VmmTest, HostLocatedMemoryIsNotChargedToTheDevice) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_HOST;
  const size_t used_before = used_bytes();
  CUmemGenericAllocationHandle handle = 0;

  ASSERT_EQ(cuMemCreate(&handle, kGranularity, &prop, 0), CUDA_SUCCESS);

  EXPECT_EQ(used_bytes(), used_before);
  cuMemRelease(handle);
}

TEST_F(VmmTest, ExportedDescriptorImportsToTheSameMemory) {
  const auto prop = device_prop(0, true);
  CUmemGenericAllocationHandle original = 0;
  ASSERT_EQ(cuMemCreate(&original, kGranularity, &prop, 0), CUDA_SUCCESS);
  int descriptor = -1;
  ASSERT_EQ(cuMemExportToShareableHandle(&descriptor, original, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
            CUDA_SUCCESS);
  CUmemGenericAllocationHandle imported = 0;
  ASSERT_EQ(cuMemImportFromShareableHandle(&imported, reinterpret_cast<void*>(static_cast<intptr_t>(descriptor)),
                                           CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
            CUDA_SUCCESS);
  close(descriptor);
  CUdeviceptr first = 0;
  CUdeviceptr second = 0;
  ASSERT_EQ(cuMemAddressReserve(&first, kGranularity, 0, 0, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAddressReserve(&second, kGranularity, 0, 0, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemMap(first, kGranularity, 0, original, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemMap(second, kGranularity, 0, imported, 0), CUDA_SUCCESS);
  const auto access = read_write(0);
  ASSERT_EQ(cuMemSetAccess(first, kGranularity, &access, 1), CUDA_SUCCESS);
  ASSERT_EQ(cuMemSetAccess(second, kGranularity, &access, 1), CUDA_SUCCESS);

  ASSERT_EQ(cuMemsetD32(first + 64, 0x01020304, 1), CUDA_SUCCESS);
  unsigned seen = 0;
  std::memcpy(&seen, reinterpret_cast<void*>(second + 64), sizeof(seen));

  EXPECT_EQ(seen, 0x01020304u);
  cuMemUnmap(first, kGranularity);
  cuMemUnmap(second, kGranularity);
  cuMemRelease(original);
  cuMemRelease(imported);
  cuMemAddressFree(first, kGranularity);
  cuMemAddressFree(second, kGranularity);
}

TEST_F(VmmTest, ExportOfANonExportableAllocationFails) {
  const auto prop = device_prop(0, false);
  CUmemGenericAllocationHandle handle = 0;
  ASSERT_EQ(cuMemCreate(&handle, kGranularity, &prop, 0), CUDA_SUCCESS);
  int descriptor = -1;

  EXPECT_EQ(cuMemExportToShareableHandle(&descriptor, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
            CUDA_ERROR_INVALID_VALUE);
  cuMemRelease(handle);
}

TEST_F(VmmTest, RetainFromAddressGivesTheHandleAndItsProperties) {
  CUdeviceptr base = 0;
  ASSERT_EQ(cuMemAddressReserve(&base, kGranularity, 0, 0, 0), CUDA_SUCCESS);
  const auto prop = device_prop(1);
  CUmemGenericAllocationHandle handle = 0;
  ASSERT_EQ(cuMemCreate(&handle, kGranularity, &prop, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemMap(base, kGranularity, 0, handle, 0), CUDA_SUCCESS);
  CUmemGenericAllocationHandle retained = 0;
  CUmemAllocationProp read_back{};

  ASSERT_EQ(cuMemRetainAllocationHandle(&retained, reinterpret_cast<void*>(base + 100)), CUDA_SUCCESS);
  ASSERT_EQ(cuMemGetAllocationPropertiesFromHandle(&read_back, retained), CUDA_SUCCESS);

  EXPECT_EQ(retained, handle);
  EXPECT_EQ(read_back.location.type, CU_MEM_LOCATION_TYPE_DEVICE);
  EXPECT_EQ(read_back.location.id, 1);
  EXPECT_EQ(cuMemRelease(retained), CUDA_SUCCESS);
  EXPECT_EQ(cuMemRelease(handle), CUDA_SUCCESS);
  EXPECT_EQ(cuMemRelease(handle), CUDA_ERROR_INVALID_VALUE);
  cuMemUnmap(base, kGranularity);
  cuMemAddressFree(base, kGranularity);
}

// One granule of `prop` mapped, `grant` set on it; the access then read for the granted location
// and for `other` (which the grant must leave without access).
void grant_and_read(const CUmemAllocationProp& prop, const CUmemAccessDesc& grant, CUmemLocation other,
                    unsigned long long* granted_flags, unsigned long long* other_flags) {
  CUdeviceptr base = 0;
  ASSERT_EQ(cuMemAddressReserve(&base, kGranularity, 0, 0, 0), CUDA_SUCCESS);
  CUmemGenericAllocationHandle handle = 0;
  ASSERT_EQ(cuMemCreate(&handle, kGranularity, &prop, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemMap(base, kGranularity, 0, handle, 0), CUDA_SUCCESS);
  CUmemLocation granted = grant.location;
  ASSERT_EQ(cuMemSetAccess(base, kGranularity, &grant, 1), CUDA_SUCCESS);
  ASSERT_EQ(cuMemGetAccess(granted_flags, &granted, base), CUDA_SUCCESS);
  ASSERT_EQ(cuMemGetAccess(other_flags, &other, base), CUDA_SUCCESS);
  if (prop.location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
    static_cast<volatile unsigned char*>(reinterpret_cast<void*>(base))[0] = 1;  // the CPU may touch it
  }
  cuMemUnmap(base, kGranularity);
  cuMemRelease(handle);
  cuMemAddressFree(base, kGranularity);
}

TEST_F(VmmTest, PeerGrantIsRecordedPerDevice) {
  unsigned long long peer_flags = 0;
  unsigned long long owner_flags = 99;
  ASSERT_NO_FATAL_FAILURE(grant_and_read(device_prop(0), read_write(2), CUmemLocation{CU_MEM_LOCATION_TYPE_DEVICE, 0},
                                         &peer_flags, &owner_flags));
  EXPECT_EQ(peer_flags, static_cast<unsigned long long>(CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
  EXPECT_EQ(owner_flags, static_cast<unsigned long long>(CU_MEM_ACCESS_FLAGS_PROT_NONE));
}

// Host NUMA nodes are told apart: memory of node 1 granted to node 1 is not granted to node 0.
TEST_F(VmmTest, HostNumaGrantIsRecordedPerNode) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
  prop.location.id = 1;
  CUmemAccessDesc node_one{};
  node_one.location = CUmemLocation{CU_MEM_LOCATION_TYPE_HOST_NUMA, 1};
  node_one.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  unsigned long long one_flags = 0;
  unsigned long long zero_flags = 99;
  ASSERT_NO_FATAL_FAILURE(
      grant_and_read(prop, node_one, CUmemLocation{CU_MEM_LOCATION_TYPE_HOST_NUMA, 0}, &one_flags, &zero_flags));
  EXPECT_EQ(one_flags, static_cast<unsigned long long>(CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
  EXPECT_EQ(zero_flags, static_cast<unsigned long long>(CU_MEM_ACCESS_FLAGS_PROT_NONE));
}

TEST_F(VmmTest, MisuseOfMappingsIsRejected) {
  CUdeviceptr base = 0;
  ASSERT_EQ(cuMemAddressReserve(&base, 4 * kGranularity, 0, 0, 0), CUDA_SUCCESS);
  const auto prop = device_prop(0);
  CUmemGenericAllocationHandle handle = 0;
  ASSERT_EQ(cuMemCreate(&handle, 2 * kGranularity, &prop, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemMap(base, 2 * kGranularity, 0, handle, 0), CUDA_SUCCESS);
  CUmemGenericAllocationHandle unaligned = 0;

  EXPECT_EQ(cuMemCreate(&unaligned, 4096, &prop, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemMap(base + kGranularity, kGranularity, 0, handle, 0), CUDA_ERROR_INVALID_VALUE);  // overlaps
  EXPECT_EQ(cuMemMap(base + 3 * kGranularity, 2 * kGranularity, 0, handle, 0), CUDA_ERROR_INVALID_VALUE);  // past the reservation
  EXPECT_EQ(cuMemMap(base + 2 * kGranularity, kGranularity, 0, 0xdead, 0), CUDA_ERROR_INVALID_VALUE);  // bad handle
  EXPECT_EQ(cuMemUnmap(base, kGranularity), CUDA_ERROR_INVALID_VALUE);  // part of a mapping
  EXPECT_EQ(cuMemAddressFree(base, kGranularity), CUDA_ERROR_INVALID_VALUE);  // not the reservation's size
  EXPECT_EQ(cuMemUnmap(base, 2 * kGranularity), CUDA_SUCCESS);
  cuMemRelease(handle);
  EXPECT_EQ(cuMemAddressFree(base, 4 * kGranularity), CUDA_SUCCESS);
}

TEST_F(VmmTest, ReservationHonoursAlignment) {
  CUdeviceptr base = 0;
  const size_t alignment = std::size_t{64} << 20;

  ASSERT_EQ(cuMemAddressReserve(&base, kGranularity, alignment, 0, 0), CUDA_SUCCESS);

  EXPECT_EQ(base % alignment, 0u);
  cuMemAddressFree(base, kGranularity);
}

TEST_F(VmmTest, VmmPointerAttributesReportTheMappingAndDevice) {
  CUdeviceptr base = 0;
  ASSERT_EQ(cuMemAddressReserve(&base, 2 * kGranularity, 0, 0, 0), CUDA_SUCCESS);
  const auto prop = device_prop(1);
  CUmemGenericAllocationHandle handle = 0;
  ASSERT_EQ(cuMemCreate(&handle, kGranularity, &prop, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemMap(base + kGranularity, kGranularity, 0, handle, 0), CUDA_SUCCESS);
  int ordinal = -1;
  unsigned memory_type = 0;
  CUdeviceptr range_base = 0;
  size_t range_size = 0;

  ASSERT_EQ(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, base + kGranularity + 8), CUDA_SUCCESS);
  ASSERT_EQ(cuPointerGetAttribute(&memory_type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, base + kGranularity), CUDA_SUCCESS);
  ASSERT_EQ(cuMemGetAddressRange(&range_base, &range_size, base + kGranularity + 8), CUDA_SUCCESS);

  EXPECT_EQ(ordinal, 1);
  EXPECT_EQ(memory_type, static_cast<unsigned>(CU_MEMORYTYPE_DEVICE));
  EXPECT_EQ(range_base, base + kGranularity);
  EXPECT_EQ(range_size, kGranularity);
  cuMemUnmap(base + kGranularity, kGranularity);
  cuMemRelease(handle);
  cuMemAddressFree(base, 2 * kGranularity);
}

}  // namespace
}  // namespace fake_test
