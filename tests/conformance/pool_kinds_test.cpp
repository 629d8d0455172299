// Pools of every kind the spec describes besides device memory: pinned host (Host, HostNuma) and
// managed. Their memory is written by the device (a memset on a stream) and read by the CPU, and
// the other way round; statistics and trimming behave as for device pools; the spec's
// restrictions on each kind are enforced. Where the spec names no error code for a refusal, the
// driver alone is only required to refuse, and streampool answers CUDA_ERROR_INVALID_VALUE.
#include "conformance.hpp"

namespace conformance {
namespace {

CUmemPoolProps kind_props(CUmemAllocationType type, CUmemLocationType location, int id) {
  CUmemPoolProps props{};
  props.allocType = type;
  props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
  props.location.type = location;
  props.location.id = id;
  return props;
}

void expect_refused(CUresult result) {
  if (under_streampool()) {
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, result);
  } else {
    EXPECT_NE(CUDA_SUCCESS, result);
  }
}

// A pool in host memory is the CPU's alone until the device is given access (NVIDIA's driver
// refuses device work on it before; streampool maps it for the device at once).
void grant_device(CUmemoryPool pool) {
  const CUmemAccessDesc access = access_for(0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  CU_ASSERT_OK(cuMemPoolSetAccess(pool, &access, 1));
}

// The device fills `bytes` with `fill`, the CPU reads both ends and writes the first byte, and a
// copy sees the CPU's write.
void device_and_cpu_share(CUdeviceptr pointer, std::size_t bytes, CUstream stream) {
  const unsigned char fill = 0x6b;
  CU_ASSERT_OK(cuMemsetD8Async(pointer, fill, bytes, stream));
  CU_ASSERT_OK(cuStreamSynchronize(stream));
  auto* cpu = reinterpret_cast<volatile unsigned char*>(pointer);
  EXPECT_EQ(fill, cpu[0]);
  EXPECT_EQ(fill, cpu[bytes - 1]);
  cpu[0] = 0x19;
  unsigned char copied[2] = {};
  // cuMemcpy, not cuMemcpyDtoH: NVIDIA's driver refuses a host-memory source for DtoH (measured).
  CU_ASSERT_OK(cuMemcpy(reinterpret_cast<CUdeviceptr>(copied), pointer, 2));
  EXPECT_EQ(0x19, copied[0]);
  EXPECT_EQ(fill, copied[1]);
}

TEST(PoolKinds, HostPoolMemoryIsSharedByDeviceAndCpu) {
  OwnedPool pool(kind_props(CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_LOCATION_TYPE_HOST, 0));
  CU_ASSERT_OK(pool.status());
  ASSERT_NO_FATAL_FAILURE(grant_device(pool.get()));
  CONFORMANCE_STREAM(stream);
  CUdeviceptr p = 0;
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&p, 3 * kMiB, pool.get(), stream.get()));
  device_and_cpu_share(p, 3 * kMiB, stream.get());
  CU_EXPECT_OK(cuMemFreeAsync(p, stream.get()));
  CU_EXPECT_OK(cuStreamSynchronize(stream.get()));
}

TEST(PoolKinds, HostNumaPoolMemoryIsSharedByDeviceAndCpuAndReportedAsHost) {
  OwnedPool pool(kind_props(CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_LOCATION_TYPE_HOST_NUMA, 0));
  CU_ASSERT_OK(pool.status());
  ASSERT_NO_FATAL_FAILURE(grant_device(pool.get()));
  CONFORMANCE_STREAM(stream);
  CUdeviceptr p = 0;
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&p, kMiB, pool.get(), stream.get()));
  device_and_cpu_share(p, kMiB, stream.get());
  unsigned memory_type = 0;
  CU_EXPECT_OK(cuPointerGetAttribute(&memory_type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p));
  EXPECT_EQ(static_cast<unsigned>(CU_MEMORYTYPE_HOST), memory_type);
  CU_EXPECT_OK(cuMemFreeAsync(p, stream.get()));
  CU_EXPECT_OK(cuStreamSynchronize(stream.get()));
}

TEST(PoolKinds, ManagedPoolMemoryIsSharedByDeviceAndCpuAndReportedAsManaged) {
  OwnedPool pool(kind_props(CU_MEM_ALLOCATION_TYPE_MANAGED, CU_MEM_LOCATION_TYPE_DEVICE, device()));
  CU_ASSERT_OK(pool.status());
  CONFORMANCE_STREAM(stream);
  CUdeviceptr p = 0;
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&p, 2 * kMiB, pool.get(), stream.get()));
  device_and_cpu_share(p, 2 * kMiB, stream.get());
  unsigned managed = 0;  // the driver writes a bool; the zeroed int reads the same
  CU_EXPECT_OK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, p));
  EXPECT_NE(0U, managed);
  CU_EXPECT_OK(cuMemFreeAsync(p, stream.get()));
  CU_EXPECT_OK(cuStreamSynchronize(stream.get()));
}

TEST(PoolKinds, HostPoolStatisticsAndTrimmingBehaveAsForDevicePools) {
  OwnedPool pool(kind_props(CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_LOCATION_TYPE_HOST, 0));
  CU_ASSERT_OK(pool.status());
  CONFORMANCE_STREAM(stream);
  CUdeviceptr p = 0;
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&p, 5 * kMiB, pool.get(), stream.get()));
  EXPECT_EQ(5 * kMiB, used(pool.get()));
  EXPECT_GE(reserved(pool.get()), 5 * kMiB);
  CU_ASSERT_OK(cuMemFreeAsync(p, stream.get()));
  CU_ASSERT_OK(cuStreamSynchronize(stream.get()));
  EXPECT_EQ(0U, used(pool.get()));
  EXPECT_EQ(5 * kMiB, used_high(pool.get()));
  CU_ASSERT_OK(cuMemPoolTrimTo(pool.get(), 0));
  EXPECT_EQ(0U, reserved(pool.get()));
}

TEST(PoolKinds, HostNumaNodeTheMachineLacksIsRefused) {
  CUmemPoolProps props = kind_props(CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_LOCATION_TYPE_HOST_NUMA, 4095);
  CUmemoryPool pool = nullptr;
  expect_refused(cuMemPoolCreate(&pool, &props));
}

TEST(PoolKinds, HostNumaCurrentIsInvalidForPools) {
  CUmemPoolProps props = kind_props(CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT, 0);
  CUmemoryPool pool = nullptr;
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemPoolCreate(&pool, &props));
}

TEST(PoolKinds, HostPoolsAreNotIpcCapable) {
  CUmemPoolProps props = kind_props(CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_LOCATION_TYPE_HOST, 0);
  props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  CUmemoryPool pool = nullptr;
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemPoolCreate(&pool, &props));
}

TEST(PoolKinds, ManagedPoolsTakeNoMaxSize) {
  CUmemPoolProps props = kind_props(CU_MEM_ALLOCATION_TYPE_MANAGED, CU_MEM_LOCATION_TYPE_NONE, 0);
  props.maxSize = 64 * kMiB;
  CUmemoryPool pool = nullptr;
  expect_refused(cuMemPoolCreate(&pool, &props));
}

TEST(PoolKinds, ManagedPoolsTakeNoHandleTypes) {
  CUmemPoolProps props = kind_props(CU_MEM_ALLOCATION_TYPE_MANAGED, CU_MEM_LOCATION_TYPE_NONE, 0);
  props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  CUmemoryPool pool = nullptr;
  expect_refused(cuMemPoolCreate(&pool, &props));
}

TEST(PoolKinds, HostLocationApiSetsAndGetsTheCurrentHostPool) {
  OwnedPool pool(kind_props(CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_LOCATION_TYPE_HOST, 0));
  CU_ASSERT_OK(pool.status());
  CUmemLocation host{};
  host.type = CU_MEM_LOCATION_TYPE_HOST;
  CUmemoryPool default_pool = nullptr;
  CU_ASSERT_OK(cuMemGetDefaultMemPool(&default_pool, &host, CU_MEM_ALLOCATION_TYPE_PINNED));
  CU_ASSERT_OK(cuMemSetMemPool(&host, CU_MEM_ALLOCATION_TYPE_PINNED, pool.get()));
  CUmemoryPool current = nullptr;
  CU_ASSERT_OK(cuMemGetMemPool(&current, &host, CU_MEM_ALLOCATION_TYPE_PINNED));
  EXPECT_EQ(pool.get(), current);
  CU_EXPECT_OK(cuMemSetMemPool(&host, CU_MEM_ALLOCATION_TYPE_PINNED, default_pool));
  CU_ASSERT_OK(cuMemGetMemPool(&current, &host, CU_MEM_ALLOCATION_TYPE_PINNED));
  EXPECT_EQ(default_pool, current);
}

}  // namespace
}  // namespace conformance
