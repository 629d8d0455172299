// Linear memory: allocation and accounting, copies and memsets in stream order, pointer queries.
#include <array>
#include <atomic>
#include <cstring>
#include <vector>

#include "fake_test_support.hpp"

namespace fake_test {
namespace {

using MemoryTest = FakeDriverTest;

TEST_F(MemoryTest, CopiesRoundTripThroughDeviceMemory) {
  CUdeviceptr first = 0;
  CUdeviceptr second = 0;
  ASSERT_EQ(cuMemAlloc(&first, 4096), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAlloc(&second, 4096), CUDA_SUCCESS);
  std::vector<unsigned char> source(4096);
  for (std::size_t index = 0; index < source.size(); ++index) source[index] = static_cast<unsigned char>(index * 7);
  std::vector<unsigned char> back(4096, 0);

  ASSERT_EQ(cuMemcpyHtoD(first, source.data(), source.size()), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyDtoD(second, first, source.size()), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyDtoH(back.data(), second, back.size()), CUDA_SUCCESS);

  EXPECT_EQ(back, source);
  EXPECT_EQ(cuMemFree(first), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree(second), CUDA_SUCCESS);
}

TEST_F(MemoryTest, AsyncCopyAndMemsetRunInStreamOrder) {
  CUstream stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  CUdeviceptr buffer = 0;
  ASSERT_EQ(cuMemAlloc(&buffer, 64), CUDA_SUCCESS);
  std::array<unsigned, 16> back{};
  int sleep_for = 60;

  ASSERT_EQ(cuLaunchHostFunc(stream, sleep_ms, &sleep_for), CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD32Async(buffer, 0xdeadbeef, 16, stream), CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD8Async(buffer, 0x11, 4, stream), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyDtoHAsync(back.data(), buffer, sizeof(back), stream), CUDA_SUCCESS);
  EXPECT_EQ(back[0], 0u);  // nothing ran yet: the stream is still sleeping
  ASSERT_EQ(cuStreamSynchronize(stream), CUDA_SUCCESS);

  EXPECT_EQ(back[0], 0x11111111u);
  EXPECT_EQ(back[15], 0xdeadbeefu);
  cuMemFree(buffer);
  cuStreamDestroy(stream);
}

TEST_F(MemoryTest, Memset16FillsHalfWordsAndRejectsMisalignment) {
  CUdeviceptr buffer = 0;
  ASSERT_EQ(cuMemAlloc(&buffer, 16), CUDA_SUCCESS);
  std::array<unsigned short, 8> back{};

  ASSERT_EQ(cuMemsetD16(buffer, 0xabcd, 8), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyDtoH(back.data(), buffer, sizeof(back)), CUDA_SUCCESS);

  EXPECT_EQ(back[7], 0xabcd);
  EXPECT_EQ(cuMemsetD16(buffer + 1, 0, 2), CUDA_ERROR_INVALID_VALUE);
  cuMemFree(buffer);
}

TEST_F(MemoryTest, CopyToMemoryTheDriverDidNotHandOutFails) {
  std::array<char, 16> host{};
  CUdeviceptr buffer = 0;
  ASSERT_EQ(cuMemAlloc(&buffer, 16), CUDA_SUCCESS);

  EXPECT_EQ(cuMemcpyHtoD(0x1000, host.data(), host.size()), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemcpyHtoD(buffer, host.data(), 32), CUDA_ERROR_INVALID_VALUE);  // runs past the end
  EXPECT_EQ(cuMemsetD8(0x1000, 0, 4), CUDA_ERROR_INVALID_VALUE);
  cuMemFree(buffer);
}

TEST_F(MemoryTest, MemGetInfoCountsDeviceAllocations) {
  size_t free_before = 0;
  size_t total = 0;
  ASSERT_EQ(cuMemGetInfo(&free_before, &total), CUDA_SUCCESS);
  CUdeviceptr buffer = 0;

  ASSERT_EQ(cuMemAlloc(&buffer, 64 << 20), CUDA_SUCCESS);
  size_t free_during = 0;
  ASSERT_EQ(cuMemGetInfo(&free_during, &total), CUDA_SUCCESS);
  ASSERT_EQ(cuMemFree(buffer), CUDA_SUCCESS);
  size_t free_after = 0;
  ASSERT_EQ(cuMemGetInfo(&free_after, &total), CUDA_SUCCESS);

  EXPECT_EQ(total, kMemoryPerDevice);
  EXPECT_EQ(free_before - free_during, std::size_t{64} << 20);
  EXPECT_EQ(free_after, free_before);
}

TEST_F(MemoryTest, AllocationBeyondTheDeviceMemoryFailsWithOutOfMemory) {
  CUdeviceptr most = 0;
  CUdeviceptr more = 0;
  ASSERT_EQ(cuMemAlloc(&most, kMemoryPerDevice - (std::size_t{16} << 20)), CUDA_SUCCESS);

  EXPECT_EQ(cuMemAlloc(&more, std::size_t{32} << 20), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(cuMemAlloc(&more, std::size_t{8} << 20), CUDA_SUCCESS);
  cuMemFree(more);
  cuMemFree(most);
}

TEST_F(MemoryTest, FreeOfUnknownOrInteriorPointerFails) {
  CUdeviceptr buffer = 0;
  ASSERT_EQ(cuMemAlloc(&buffer, 1024), CUDA_SUCCESS);

  EXPECT_EQ(cuMemFree(buffer + 16), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemFree(0x5000), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemFree(buffer), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree(buffer), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(MemoryTest, PointerAttributesDescribeDeviceAllocation) {
  CUdeviceptr buffer = 0;
  ASSERT_EQ(cuMemAlloc(&buffer, 1000), CUDA_SUCCESS);
  unsigned memory_type = 0;
  CUcontext owner = nullptr;
  CUdeviceptr device_pointer = 0;
  CUdeviceptr range_start = 0;
  size_t range_size = 0;
  int ordinal = -1;
  bool managed = true;
  CUmemoryPool pool = reinterpret_cast<CUmemoryPool>(0x1);
  void* host_pointer = nullptr;

  EXPECT_EQ(cuPointerGetAttribute(&memory_type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, buffer + 10), CUDA_SUCCESS);
  EXPECT_EQ(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, buffer), CUDA_SUCCESS);
  EXPECT_EQ(cuPointerGetAttribute(&device_pointer, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, buffer + 10), CUDA_SUCCESS);
  EXPECT_EQ(cuPointerGetAttribute(&range_start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, buffer + 10), CUDA_SUCCESS);
  EXPECT_EQ(cuPointerGetAttribute(&range_size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, buffer + 10), CUDA_SUCCESS);
  EXPECT_EQ(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, buffer), CUDA_SUCCESS);
  EXPECT_EQ(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, buffer), CUDA_SUCCESS);
  EXPECT_EQ(cuPointerGetAttribute(&pool, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, buffer), CUDA_SUCCESS);
  EXPECT_EQ(cuPointerGetAttribute(&host_pointer, CU_POINTER_ATTRIBUTE_HOST_POINTER, buffer), CUDA_ERROR_INVALID_VALUE);

  EXPECT_EQ(memory_type, static_cast<unsigned>(CU_MEMORYTYPE_DEVICE));
  EXPECT_EQ(owner, context_);
  EXPECT_EQ(device_pointer, buffer + 10);
  EXPECT_EQ(range_start, buffer);
  EXPECT_EQ(range_size, 1000u);
  EXPECT_EQ(ordinal, 0);
  EXPECT_FALSE(managed);
  EXPECT_EQ(pool, nullptr);
  cuMemFree(buffer);
}

TEST_F(MemoryTest, HostAndManagedAllocationsReportTheirKinds) {
  void* host = nullptr;
  CUdeviceptr managed = 0;
  ASSERT_EQ(cuMemAllocHost(&host, 256), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAllocManaged(&managed, 256, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  unsigned host_type = 0;
  void* host_pointer = nullptr;
  bool is_managed = false;

  EXPECT_EQ(cuPointerGetAttribute(&host_type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, reinterpret_cast<CUdeviceptr>(host)),
            CUDA_SUCCESS);
  EXPECT_EQ(cuPointerGetAttribute(&host_pointer, CU_POINTER_ATTRIBUTE_HOST_POINTER, reinterpret_cast<CUdeviceptr>(host)),
            CUDA_SUCCESS);
  EXPECT_EQ(cuPointerGetAttribute(&is_managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, managed), CUDA_SUCCESS);

  EXPECT_EQ(host_type, static_cast<unsigned>(CU_MEMORYTYPE_HOST));
  EXPECT_EQ(host_pointer, host);
  EXPECT_TRUE(is_managed);
  EXPECT_EQ(cuMemFree(reinterpret_cast<CUdeviceptr>(host)), CUDA_ERROR_INVALID_VALUE);  // host memory needs cuMemFreeHost
  EXPECT_EQ(cuMemFreeHost(host), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree(managed), CUDA_SUCCESS);
}

TEST_F(MemoryTest, UnknownPointerIsAnErrorForOneAttributeButZeroForSeveral) {
  std::array<char, 8> not_driver_memory{};
  const auto address = reinterpret_cast<CUdeviceptr>(not_driver_memory.data());
  unsigned memory_type = 99;
  CUcontext owner = reinterpret_cast<CUcontext>(0x1);
  std::array<CUpointer_attribute, 2> attributes{CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_CONTEXT};
  std::array<void*, 2> data{&memory_type, &owner};

  EXPECT_EQ(cuPointerGetAttribute(&memory_type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, address), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuPointerGetAttributes(2, attributes.data(), data.data(), address), CUDA_SUCCESS);
  EXPECT_EQ(memory_type, 0u);
  EXPECT_EQ(owner, nullptr);
}

TEST_F(MemoryTest, AddressRangeOfInteriorPointerIsTheWholeAllocation) {
  CUdeviceptr buffer = 0;
  ASSERT_EQ(cuMemAlloc(&buffer, 1 << 20), CUDA_SUCCESS);
  CUdeviceptr base = 0;
  size_t size = 0;

  ASSERT_EQ(cuMemGetAddressRange(&base, &size, buffer + 100), CUDA_SUCCESS);

  EXPECT_EQ(base, buffer);
  EXPECT_EQ(size, std::size_t{1} << 20);
  EXPECT_EQ(cuMemGetAddressRange(&base, &size, 0x1000), CUDA_ERROR_NOT_FOUND);
  cuMemFree(buffer);
}

TEST_F(MemoryTest, NativeAsyncAllocatorAllocatesAtOnceAndFreesInStreamOrder) {
  CUstream stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  CUdeviceptr buffer = 0;
  CUdeviceptr empty = 1;
  int sleep_for = 80;
  size_t free_before = 0;
  size_t free_pending = 0;
  size_t free_after = 0;
  size_t total = 0;
  ASSERT_EQ(cuMemGetInfo(&free_before, &total), CUDA_SUCCESS);

  ASSERT_EQ(cuMemAllocAsync(&buffer, 4 << 20, stream), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAllocAsync(&empty, 0, stream), CUDA_SUCCESS);
  ASSERT_EQ(cuLaunchHostFunc(stream, sleep_ms, &sleep_for), CUDA_SUCCESS);
  ASSERT_EQ(cuMemFreeAsync(buffer, stream), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFreeAsync(buffer, stream), CUDA_ERROR_INVALID_VALUE);  // double free
  ASSERT_EQ(cuMemGetInfo(&free_pending, &total), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(stream), CUDA_SUCCESS);
  ASSERT_EQ(cuMemGetInfo(&free_after, &total), CUDA_SUCCESS);

  EXPECT_NE(buffer, 0u);
  EXPECT_EQ(empty, 0u);
  EXPECT_EQ(free_before - free_pending, std::size_t{4} << 20);
  EXPECT_EQ(free_after, free_before);
  EXPECT_EQ(cuMemFreeAsync(0, stream), CUDA_SUCCESS);
  cuStreamDestroy(stream);
}

TEST_F(MemoryTest, NativePoolsAreNotSupported) {
  CUmemoryPool pool = nullptr;
  EXPECT_EQ(cuDeviceGetDefaultMemPool(&pool, 0), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(cuDeviceGetMemPool(&pool, 0), CUDA_ERROR_NOT_SUPPORTED);
}

}  // namespace
}  // namespace fake_test
