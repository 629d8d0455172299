// The stream-ordered allocator: the default and current pools, created pools, their attributes and
// thresholds, cudaMallocFromPoolAsync, access descriptors, trimming, and data that copies carry
// through pool memory (no kernel needed).
#include <cstdint>
#include <numeric>
#include <vector>

#include "conformance.cuh"

using conformance::clear_last_error;

namespace {

constexpr std::size_t kBytes = 1u << 20;

cudaMemPoolProps device_pool_props(int device) {
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  return props;
}

std::uint64_t pool_attribute(cudaMemPool_t pool, cudaMemPoolAttr which) {
  std::uint64_t value = ~0ull;
  EXPECT_CUDA(cudaMemPoolGetAttribute(pool, which, &value));
  return value;
}

class Pools : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_CUDA(cudaSetDevice(0));
    ASSERT_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }
  void TearDown() override { EXPECT_CUDA(cudaStreamDestroy(stream_)); }
  cudaStream_t stream_ = nullptr;
};

TEST_F(Pools, DevicesSupportMemoryPools) {
  int supported = 0;
  ASSERT_CUDA(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, 0));
  EXPECT_EQ(supported, 1);
}

TEST_F(Pools, CurrentPoolIsTheDefaultPoolUntilSet) {
  cudaMemPool_t default_pool = nullptr, current = nullptr;
  ASSERT_CUDA(cudaDeviceGetDefaultMemPool(&default_pool, 0));
  ASSERT_CUDA(cudaDeviceGetMemPool(&current, 0));
  EXPECT_NE(default_pool, nullptr);
  EXPECT_EQ(current, default_pool);
}

TEST_F(Pools, MallocAsyncMemoryCarriesDataInStreamOrder) {
  std::vector<int> values(kBytes / sizeof(int)), back(values.size());
  std::iota(values.begin(), values.end(), 11);
  void *first = nullptr, *second = nullptr;

  ASSERT_CUDA(cudaMallocAsync(&first, kBytes, stream_));
  ASSERT_CUDA(cudaMallocAsync(&second, kBytes, stream_));
  ASSERT_CUDA(cudaMemcpyAsync(first, values.data(), kBytes, cudaMemcpyHostToDevice, stream_));
  ASSERT_CUDA(cudaMemcpyAsync(second, first, kBytes, cudaMemcpyDeviceToDevice, stream_));
  ASSERT_CUDA(cudaFreeAsync(first, stream_));
  ASSERT_CUDA(cudaMemcpyAsync(back.data(), second, kBytes, cudaMemcpyDeviceToHost, stream_));
  ASSERT_CUDA(cudaFreeAsync(second, stream_));
  ASSERT_CUDA(cudaStreamSynchronize(stream_));

  EXPECT_EQ(back, values);
}

TEST_F(Pools, PoolMemoryIsDeviceMemoryOfItsDevice) {
  void* memory = nullptr;
  ASSERT_CUDA(cudaMallocAsync(&memory, kBytes, stream_));
  ASSERT_CUDA(cudaStreamSynchronize(stream_));
  cudaPointerAttributes attributes{};

  ASSERT_CUDA(cudaPointerGetAttributes(&attributes, memory));

  EXPECT_EQ(attributes.type, cudaMemoryTypeDevice);
  EXPECT_EQ(attributes.device, 0);
  ASSERT_CUDA(cudaFreeAsync(memory, stream_));
  ASSERT_CUDA(cudaStreamSynchronize(stream_));
}

TEST_F(Pools, CreatedPoolCountsWhatItServesAndTrimsToNothing) {
  const cudaMemPoolProps props = device_pool_props(0);
  cudaMemPool_t pool = nullptr;
  ASSERT_CUDA(cudaMemPoolCreate(&pool, &props));
  void* memory = nullptr;

  ASSERT_CUDA(cudaMallocFromPoolAsync(&memory, kBytes, pool, stream_));
  ASSERT_CUDA(cudaStreamSynchronize(stream_));
  EXPECT_GE(pool_attribute(pool, cudaMemPoolAttrUsedMemCurrent), kBytes);
  EXPECT_GE(pool_attribute(pool, cudaMemPoolAttrReservedMemCurrent), kBytes);
  EXPECT_GE(pool_attribute(pool, cudaMemPoolAttrUsedMemHigh), kBytes);
  ASSERT_CUDA(cudaFreeAsync(memory, stream_));
  ASSERT_CUDA(cudaStreamSynchronize(stream_));
  EXPECT_EQ(pool_attribute(pool, cudaMemPoolAttrUsedMemCurrent), 0u);
  ASSERT_CUDA(cudaMemPoolTrimTo(pool, 0));
  EXPECT_EQ(pool_attribute(pool, cudaMemPoolAttrReservedMemCurrent), 0u);

  EXPECT_CUDA(cudaMemPoolDestroy(pool));
}

TEST_F(Pools, ReleaseThresholdReadsBackAndKeepsFreedMemoryReserved) {
  const cudaMemPoolProps props = device_pool_props(0);
  cudaMemPool_t pool = nullptr;
  ASSERT_CUDA(cudaMemPoolCreate(&pool, &props));
  EXPECT_EQ(pool_attribute(pool, cudaMemPoolAttrReleaseThreshold), 0u);
  std::uint64_t threshold = 64u << 20;

  ASSERT_CUDA(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  void* memory = nullptr;
  ASSERT_CUDA(cudaMallocFromPoolAsync(&memory, kBytes, pool, stream_));
  ASSERT_CUDA(cudaFreeAsync(memory, stream_));
  ASSERT_CUDA(cudaStreamSynchronize(stream_));

  EXPECT_EQ(pool_attribute(pool, cudaMemPoolAttrReleaseThreshold), threshold);
  EXPECT_GE(pool_attribute(pool, cudaMemPoolAttrReservedMemCurrent), kBytes);  // below the threshold: kept
  EXPECT_CUDA(cudaMemPoolDestroy(pool));
}

TEST_F(Pools, HighWatermarksResetToZero) {
  const cudaMemPoolProps props = device_pool_props(0);
  cudaMemPool_t pool = nullptr;
  ASSERT_CUDA(cudaMemPoolCreate(&pool, &props));
  void* memory = nullptr;
  ASSERT_CUDA(cudaMallocFromPoolAsync(&memory, kBytes, pool, stream_));
  ASSERT_CUDA(cudaFreeAsync(memory, stream_));
  ASSERT_CUDA(cudaStreamSynchronize(stream_));
  ASSERT_GE(pool_attribute(pool, cudaMemPoolAttrUsedMemHigh), kBytes);
  std::uint64_t zero = 0;

  ASSERT_CUDA(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &zero));

  EXPECT_EQ(pool_attribute(pool, cudaMemPoolAttrUsedMemHigh), 0u);
  EXPECT_CUDA(cudaMemPoolDestroy(pool));
}

TEST_F(Pools, HighWatermarksAcceptOnlyZeroAndCurrentValuesAreReadOnly) {
  clear_last_error();
  cudaMemPool_t pool = nullptr;
  ASSERT_CUDA(cudaDeviceGetDefaultMemPool(&pool, 0));
  std::uint64_t one = 1;

  EXPECT_EQ(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReservedMemHigh, &one), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &one), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &one), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &one), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
}

TEST_F(Pools, SetMemPoolMakesMallocAsyncServeFromThePool) {
  const cudaMemPoolProps props = device_pool_props(0);
  cudaMemPool_t pool = nullptr, default_pool = nullptr, current = nullptr;
  ASSERT_CUDA(cudaMemPoolCreate(&pool, &props));
  ASSERT_CUDA(cudaDeviceGetDefaultMemPool(&default_pool, 0));

  ASSERT_CUDA(cudaDeviceSetMemPool(0, pool));
  ASSERT_CUDA(cudaDeviceGetMemPool(&current, 0));
  void* memory = nullptr;
  ASSERT_CUDA(cudaMallocAsync(&memory, kBytes, stream_));
  ASSERT_CUDA(cudaStreamSynchronize(stream_));
  const std::uint64_t used = pool_attribute(pool, cudaMemPoolAttrUsedMemCurrent);
  ASSERT_CUDA(cudaFreeAsync(memory, stream_));
  ASSERT_CUDA(cudaStreamSynchronize(stream_));
  ASSERT_CUDA(cudaDeviceSetMemPool(0, default_pool));

  EXPECT_EQ(current, pool);
  EXPECT_GE(used, kBytes);
  EXPECT_CUDA(cudaMemPoolDestroy(pool));
}

TEST_F(Pools, CreatedPoolAllowsEveryKindOfReuseByDefault) {
  const cudaMemPoolProps props = device_pool_props(0);
  cudaMemPool_t pool = nullptr;
  ASSERT_CUDA(cudaMemPoolCreate(&pool, &props));
  for (cudaMemPoolAttr which : {cudaMemPoolReuseFollowEventDependencies, cudaMemPoolReuseAllowOpportunistic,
                                cudaMemPoolReuseAllowInternalDependencies}) {
    int enabled = -1;
    ASSERT_CUDA(cudaMemPoolGetAttribute(pool, which, &enabled));
    EXPECT_EQ(enabled, 1) << which;
  }
  EXPECT_CUDA(cudaMemPoolDestroy(pool));
}

TEST_F(Pools, DestroyingTheCurrentPoolMakesTheDefaultPoolCurrent) {
  const cudaMemPoolProps props = device_pool_props(0);
  cudaMemPool_t pool = nullptr, default_pool = nullptr, current = nullptr;
  ASSERT_CUDA(cudaMemPoolCreate(&pool, &props));
  ASSERT_CUDA(cudaDeviceGetDefaultMemPool(&default_pool, 0));
  ASSERT_CUDA(cudaDeviceSetMemPool(0, pool));

  ASSERT_CUDA(cudaMemPoolDestroy(pool));

  ASSERT_CUDA(cudaDeviceGetMemPool(&current, 0));
  EXPECT_EQ(current, default_pool);
}

TEST_F(Pools, PoolDestroyedWithAnAllocationOutstandingKeepsItUntilFreed) {
  const cudaMemPoolProps props = device_pool_props(0);
  cudaMemPool_t pool = nullptr;
  ASSERT_CUDA(cudaMemPoolCreate(&pool, &props));
  void* memory = nullptr;
  ASSERT_CUDA(cudaMallocFromPoolAsync(&memory, kBytes, pool, stream_));
  ASSERT_CUDA(cudaStreamSynchronize(stream_));

  ASSERT_CUDA(cudaMemPoolDestroy(pool));

  std::vector<unsigned char> values(kBytes, 0x6d), back(kBytes);
  ASSERT_CUDA(cudaMemcpyAsync(memory, values.data(), kBytes, cudaMemcpyHostToDevice, stream_));
  ASSERT_CUDA(cudaMemcpyAsync(back.data(), memory, kBytes, cudaMemcpyDeviceToHost, stream_));
  ASSERT_CUDA(cudaFreeAsync(memory, stream_));
  ASSERT_CUDA(cudaStreamSynchronize(stream_));
  EXPECT_EQ(back, values);
}

TEST_F(Pools, DefaultPoolCannotBeDestroyed) {
  clear_last_error();
  cudaMemPool_t default_pool = nullptr;
  ASSERT_CUDA(cudaDeviceGetDefaultMemPool(&default_pool, 0));

  EXPECT_EQ(cudaMemPoolDestroy(default_pool), cudaErrorInvalidValue);

  void* memory = nullptr;
  EXPECT_CUDA(cudaMallocAsync(&memory, kBytes, stream_));  // the default pool still serves
  EXPECT_CUDA(cudaFreeAsync(memory, stream_));
  EXPECT_CUDA(cudaStreamSynchronize(stream_));
  clear_last_error();
}

TEST_F(Pools, OwningDeviceHasReadWriteAccess) {
  cudaMemPool_t pool = nullptr;
  ASSERT_CUDA(cudaDeviceGetDefaultMemPool(&pool, 0));
  cudaMemLocation location{};
  location.type = cudaMemLocationTypeDevice;
  location.id = 0;
  cudaMemAccessFlags flags = cudaMemAccessFlagsProtNone;

  ASSERT_CUDA(cudaMemPoolGetAccess(&flags, pool, &location));

  EXPECT_EQ(flags, cudaMemAccessFlagsProtReadWrite);
}

TEST_F(Pools, OwningDeviceKeepsReadWriteWhateverIsAsked) {
  clear_last_error();
  const cudaMemPoolProps props = device_pool_props(0);
  cudaMemPool_t pool = nullptr;
  ASSERT_CUDA(cudaMemPoolCreate(&pool, &props));
  cudaMemAccessDesc access{};
  access.location.type = cudaMemLocationTypeDevice;
  access.location.id = 0;

  access.flags = cudaMemAccessFlagsProtReadWrite;
  EXPECT_CUDA(cudaMemPoolSetAccess(pool, &access, 1));
  access.flags = cudaMemAccessFlagsProtRead;
  EXPECT_EQ(cudaMemPoolSetAccess(pool, &access, 1), cudaErrorNotSupported);
  access.flags = cudaMemAccessFlagsProtNone;
  EXPECT_EQ(cudaMemPoolSetAccess(pool, &access, 1), cudaErrorInvalidDevice);

  cudaMemAccessFlags flags = cudaMemAccessFlagsProtNone;
  ASSERT_CUDA(cudaMemPoolGetAccess(&flags, pool, &access.location));
  EXPECT_EQ(flags, cudaMemAccessFlagsProtReadWrite);
  EXPECT_CUDA(cudaMemPoolDestroy(pool));
  clear_last_error();
}

TEST_F(Pools, MallocAsyncOfNothingAndFreeAsyncOfNullSucceed) {
  void* memory = reinterpret_cast<void*>(1);

  EXPECT_CUDA(cudaMallocAsync(&memory, 0, stream_));
  EXPECT_EQ(memory, nullptr);
  EXPECT_CUDA(cudaFreeAsync(nullptr, stream_));
  EXPECT_CUDA(cudaStreamSynchronize(stream_));
}

TEST_F(Pools, SecondFreeAndFreeOfAnInteriorPointerAreInvalidValue) {
  clear_last_error();
  char* memory = nullptr;
  ASSERT_CUDA(cudaMallocAsync(&memory, kBytes, stream_));

  EXPECT_EQ(cudaFreeAsync(memory + 512, stream_), cudaErrorInvalidValue);
  ASSERT_CUDA(cudaFreeAsync(memory, stream_));
  EXPECT_EQ(cudaFreeAsync(memory, stream_), cudaErrorInvalidValue);

  EXPECT_CUDA(cudaStreamSynchronize(stream_));
  clear_last_error();
}

TEST_F(Pools, PlainCudaFreeReleasesAPoolAllocation) {
  const cudaMemPoolProps props = device_pool_props(0);
  cudaMemPool_t pool = nullptr;
  ASSERT_CUDA(cudaMemPoolCreate(&pool, &props));
  void* memory = nullptr;
  ASSERT_CUDA(cudaMallocFromPoolAsync(&memory, kBytes, pool, stream_));
  ASSERT_CUDA(cudaStreamSynchronize(stream_));

  EXPECT_CUDA(cudaFree(memory));

  void* again = nullptr;
  EXPECT_CUDA(cudaMallocFromPoolAsync(&again, kBytes, pool, stream_));
  EXPECT_CUDA(cudaFreeAsync(again, stream_));
  EXPECT_CUDA(cudaStreamSynchronize(stream_));
  EXPECT_CUDA(cudaMemPoolDestroy(pool));
}

TEST_F(Pools, InvalidArgumentsAreInvalidValue) {
  clear_last_error();
  cudaMemPool_t pool = nullptr;
  std::uint64_t value = 0;
  cudaMemPool_t default_pool = nullptr;
  ASSERT_CUDA(cudaDeviceGetDefaultMemPool(&default_pool, 0));

  EXPECT_EQ(cudaMemPoolCreate(&pool, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemPoolGetAttribute(default_pool, static_cast<cudaMemPoolAttr>(0x7fff), &value),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaMallocAsync(nullptr, kBytes, stream_), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
}

TEST_F(Pools, DefaultPoolOfAMissingDeviceIsInvalidDevice) {
  clear_last_error();
  int count = 0;
  ASSERT_CUDA(cudaGetDeviceCount(&count));
  cudaMemPool_t pool = nullptr;
  EXPECT_EQ(cudaDeviceGetDefaultMemPool(&pool, count), cudaErrorInvalidDevice);
  clear_last_error();
}

}  // namespace
