// Peer access to a pool (cuMemPoolSetAccess / GetAccess) over a fake driver with two devices:
// a grant reaches every granule the pool has mapped and every granule it maps later, and a
// revocation reaches all of them. What the driver itself was told is read back with
// cuMemGetAccess on the pool's pointers.
#include <cstdlib>

#include "hooks_test_api.hpp"

namespace hooks_test {
namespace {

// Two fake devices, set before the fake driver reads its configuration (on the first cuInit).
const bool two_devices = [] { return setenv("STREAMPOOL_FAKE_DEVICES", "2", 0) == 0; }();

class PeerAccess : public DriverTest {
 protected:
  static CUmemLocation device_location(int id) {
    CUmemLocation location{};
    location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    location.id = id;
    return location;
  }
  CUresult set_peer_access(CUmemoryPool pool, int peer, CUmemAccess_flags flags) {
    CUmemAccessDesc desc{};
    desc.location = device_location(peer);
    desc.flags = flags;
    return SP(cuMemPoolSetAccess)(pool, &desc, 1);
  }
  unsigned long long driver_access(CUdeviceptr ptr, int device_id) {
    CUmemLocation location = device_location(device_id);
    unsigned long long flags = 99;
    EXPECT_EQ(SP(cuMemGetAccess)(&flags, &location, ptr), CUDA_SUCCESS);
    return flags;
  }
  CUmemAccess_flags pool_access(CUmemoryPool pool, int device_id) {
    CUmemLocation location = device_location(device_id);
    CUmemAccess_flags flags = CU_MEM_ACCESS_FLAGS_PROT_MAX;
    EXPECT_EQ(SP(cuMemPoolGetAccess)(&flags, pool, &location), CUDA_SUCCESS);
    return flags;
  }
};

TEST_F(PeerAccess, TheFakeDriverHasTwoDevicesThatCanAccessEachOther) {
  ASSERT_TRUE(two_devices);
  int count = 0;
  ASSERT_EQ(SP(cuDeviceGetCount)(&count), CUDA_SUCCESS);
  EXPECT_EQ(count, 2);
  int can_access = 0;
  ASSERT_EQ(SP(cuDeviceCanAccessPeer)(&can_access, 0, 1), CUDA_SUCCESS);
  EXPECT_EQ(can_access, 1);
}

TEST_F(PeerAccess, AGrantCoversMappedAndLaterGranulesAndARevocationAllOfThem) {
  CUmemoryPool pool = create_device_pool();
  CUdeviceptr first = 0;
  ASSERT_EQ(SP(cuMemAllocFromPoolAsync)(&first, 1 << 20, pool, stream), CUDA_SUCCESS);
  EXPECT_EQ(pool_access(pool, 1), CU_MEM_ACCESS_FLAGS_PROT_NONE);
  EXPECT_EQ(driver_access(first, 1), CU_MEM_ACCESS_FLAGS_PROT_NONE);

  ASSERT_EQ(set_peer_access(pool, 1, CU_MEM_ACCESS_FLAGS_PROT_READWRITE), CUDA_SUCCESS);
  EXPECT_EQ(pool_access(pool, 1), CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  EXPECT_EQ(driver_access(first, 1), CU_MEM_ACCESS_FLAGS_PROT_READWRITE);

  CUdeviceptr later = 0;  // beyond the first 32 MiB chunk: granules mapped after the grant
  ASSERT_EQ(SP(cuMemAllocFromPoolAsync)(&later, 64 << 20, pool, stream), CUDA_SUCCESS);
  EXPECT_EQ(driver_access(later, 1), CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  EXPECT_EQ(driver_access(later + (63 << 20), 1), CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  EXPECT_EQ(driver_access(later, 0), CU_MEM_ACCESS_FLAGS_PROT_READWRITE);  // the owner keeps its access

  ASSERT_EQ(set_peer_access(pool, 1, CU_MEM_ACCESS_FLAGS_PROT_NONE), CUDA_SUCCESS);
  EXPECT_EQ(pool_access(pool, 1), CU_MEM_ACCESS_FLAGS_PROT_NONE);
  EXPECT_EQ(driver_access(first, 1), CU_MEM_ACCESS_FLAGS_PROT_NONE);
  EXPECT_EQ(driver_access(later + (63 << 20), 1), CU_MEM_ACCESS_FLAGS_PROT_NONE);

  EXPECT_EQ(SP(cuMemFreeAsync)(first, stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuMemFreeAsync)(later, stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuMemPoolDestroy)(pool), CUDA_SUCCESS);
}

TEST_F(PeerAccess, TheOwnerAlwaysReadsBackReadWrite) {
  CUmemoryPool pool = create_device_pool();
  EXPECT_EQ(pool_access(pool, 0), CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  EXPECT_EQ(SP(cuMemPoolDestroy)(pool), CUDA_SUCCESS);
}

}  // namespace
}  // namespace hooks_test
