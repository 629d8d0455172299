// cuMemPoolSetAccess / GetAccess for the pool's own device and for a device that does not
// exist. Measured on driver 580 (tools/gpu/probe_pool_access.py): the owner keeps read-write.
#include "conformance.hpp"

namespace conformance {
namespace {

TEST(PoolAccess, TheOwningDeviceKeepsReadWriteWhateverIsAsked) {
  OwnedPool pool(device_pool_props());
  CU_ASSERT_OK(pool.status());
  const int own = static_cast<int>(device());
  CUmemAccessDesc read_write = access_for(own, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  CUmemAccessDesc read_only = access_for(own, CU_MEM_ACCESS_FLAGS_PROT_READ);
  CUmemAccessDesc none = access_for(own, CU_MEM_ACCESS_FLAGS_PROT_NONE);
  EXPECT_EQ(CUDA_SUCCESS, cuMemPoolSetAccess(pool.get(), &read_write, 1));
  EXPECT_EQ(CUDA_ERROR_NOT_SUPPORTED, cuMemPoolSetAccess(pool.get(), &read_only, 1));
  EXPECT_EQ(CUDA_ERROR_INVALID_DEVICE, cuMemPoolSetAccess(pool.get(), &none, 1));
  EXPECT_EQ(CU_MEM_ACCESS_FLAGS_PROT_READWRITE, pool_access(pool.get(), own));
}

TEST(PoolAccess, ADeviceThatDoesNotExistIsAnInvalidDevice) {
  OwnedPool pool(device_pool_props());
  CU_ASSERT_OK(pool.status());
  int count = 0;
  CU_ASSERT_OK(cuDeviceGetCount(&count));
  CUmemAccessDesc missing = access_for(count + 6, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  EXPECT_EQ(CUDA_ERROR_INVALID_DEVICE, cuMemPoolSetAccess(pool.get(), &missing, 1));
  CUmemLocation location{};
  location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  location.id = count + 6;
  CUmemAccess_flags flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemPoolGetAccess(&flags, pool.get(), &location));
}

}  // namespace
}  // namespace conformance
