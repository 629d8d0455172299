// The device's current pool (cuDeviceGetMemPool / cuDeviceSetMemPool, cuMemGetMemPool /
// cuMemSetMemPool): cuMemAllocAsync allocates from it, and destroying it falls back to the default
// pool (spec: "Destroying the current mempool of a device sets the default mempool of that device
// as the current mempool for that device").
#include "conformance.hpp"

namespace conformance {
namespace {

// Puts the default pool back as device 0's current pool, whatever a test did.
class CurrentPool : public ::testing::Test {
 protected:
  void SetUp() override { CU_ASSERT_OK(cuDeviceGetDefaultMemPool(&default_pool_, device())); }
  void TearDown() override { CU_EXPECT_OK(cuDeviceSetMemPool(device(), default_pool_)); }
  CUmemoryPool default_pool_ = nullptr;
};

TEST_F(CurrentPool, StartsAsTheDefaultPool) {
  CUmemoryPool current = nullptr;
  CU_ASSERT_OK(cuDeviceGetMemPool(&current, device()));
  EXPECT_EQ(default_pool_, current);
}

TEST_F(CurrentPool, AsyncAllocationComesFromTheCurrentPool) {
  OwnedPool pool(device_pool_props());
  CU_ASSERT_OK(pool.status());
  CU_ASSERT_OK(cuDeviceSetMemPool(device(), pool.get()));
  CUmemoryPool current = nullptr;
  CU_ASSERT_OK(cuDeviceGetMemPool(&current, device()));
  EXPECT_EQ(pool.get(), current);

  CONFORMANCE_STREAM(stream);
  CUdeviceptr p = 0;
  CU_ASSERT_OK(cuMemAllocAsync(&p, 3000, stream.get()));
  EXPECT_EQ(3000U, used(pool.get()));
  CU_ASSERT_OK(cuStreamSynchronize(stream.get()));
  CUmemoryPool owner = nullptr;
  CU_EXPECT_OK(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, p));
  EXPECT_EQ(pool.get(), owner);
  CU_EXPECT_OK(cuMemFreeAsync(p, stream.get()));
  CU_EXPECT_OK(cuStreamSynchronize(stream.get()));
  EXPECT_EQ(0U, used(pool.get()));
  CU_EXPECT_OK(cuDeviceSetMemPool(device(), default_pool_));
}

TEST_F(CurrentPool, LocationApiSeesTheSameCurrentPool) {
  OwnedPool pool(device_pool_props());
  CU_ASSERT_OK(pool.status());
  CUmemLocation location{};
  location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  location.id = device();
  CU_ASSERT_OK(cuMemSetMemPool(&location, CU_MEM_ALLOCATION_TYPE_PINNED, pool.get()));
  CUmemoryPool by_device = nullptr;
  CUmemoryPool by_location = nullptr;
  CU_ASSERT_OK(cuDeviceGetMemPool(&by_device, device()));
  CU_ASSERT_OK(cuMemGetMemPool(&by_location, &location, CU_MEM_ALLOCATION_TYPE_PINNED));
  EXPECT_EQ(pool.get(), by_device);
  EXPECT_EQ(pool.get(), by_location);
  CU_EXPECT_OK(cuDeviceSetMemPool(device(), default_pool_));
}

TEST_F(CurrentPool, DestroyingTheCurrentPoolFallsBackToTheDefault) {
  CUmemoryPool pool = nullptr;
  const CUmemPoolProps props = device_pool_props();
  CU_ASSERT_OK(cuMemPoolCreate(&pool, &props));
  CU_ASSERT_OK(cuDeviceSetMemPool(device(), pool));
  CU_ASSERT_OK(cuMemPoolDestroy(pool));
  CUmemoryPool current = nullptr;
  CU_ASSERT_OK(cuDeviceGetMemPool(&current, device()));
  EXPECT_EQ(default_pool_, current);
}

}  // namespace
}  // namespace conformance
