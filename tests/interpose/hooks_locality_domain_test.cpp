// Pools at a device locality domain (CUDA 13.4's CU_MEM_LOCATION_TYPE_DEVICE_LOCALITY_DOMAIN), over
// the fake driver, which like driver 580 predates locality domains: each device is one domain, so
// domain 0 is the whole device and anything else does not exist.
#include <cstring>

#include "hooks_test_api.hpp"

namespace {

constexpr auto kLocalityDomain = static_cast<CUmemLocationType>(6);
constexpr auto kLocalityDomainCount = static_cast<CUdevice_attribute>(149);
constexpr auto kLocationType = static_cast<CUmemPool_attribute>(12);
constexpr auto kLocationId = static_cast<CUmemPool_attribute>(11);
constexpr auto kLocalityDomainId = static_cast<CUmemPool_attribute>(15);

// The `localized` member over CUmemLocation's id: deviceId, localityDomainId, two reserved bytes.
CUmemLocation localized(int device, int domain, int reserved = 0) {
  CUmemLocation where{};
  where.type = kLocalityDomain;
  unsigned char bytes[4] = {static_cast<unsigned char>(device), static_cast<unsigned char>(domain),
                            static_cast<unsigned char>(reserved), 0};
  std::memcpy(&where.id, bytes, sizeof bytes);
  return where;
}

class LocalityDomains : public hooks_test::DriverTest {
 protected:
  CUresult create(const CUmemLocation& where, CUmemoryPool* pool,
                  CUmemAllocationType type = CU_MEM_ALLOCATION_TYPE_PINNED) {
    CUmemPoolProps props{};
    props.allocType = type;
    props.location = where;
    return SP(cuMemPoolCreate)(pool, &props);
  }
};

TEST_F(LocalityDomains, EachDeviceReportsOneDomainWhereTheDriverPredatesTheAttribute) {
  int count = 0;
  int count_of_missing_device = 0;

  const CUresult result = SP(cuDeviceGetAttribute)(&count, kLocalityDomainCount, 0);
  const CUresult missing = SP(cuDeviceGetAttribute)(&count_of_missing_device, kLocalityDomainCount, 99);

  EXPECT_EQ(result, CUDA_SUCCESS);
  EXPECT_EQ(count, 1);
  EXPECT_NE(missing, CUDA_SUCCESS);
}

TEST_F(LocalityDomains, DomainZeroPoolIsAFullDevicePoolThatServesAllocations) {
  CUmemoryPool pool = nullptr;
  ASSERT_EQ(create(localized(0, 0), &pool), CUDA_SUCCESS);
  int location_type = -7;
  int location_id = -7;
  int domain_id = -7;
  CUdeviceptr pointer = 0;

  ASSERT_EQ(SP(cuMemPoolGetAttribute)(pool, kLocationType, &location_type), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemPoolGetAttribute)(pool, kLocationId, &location_id), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemPoolGetAttribute)(pool, kLocalityDomainId, &domain_id), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemAllocFromPoolAsync)(&pointer, 1 << 20, pool, stream), CUDA_SUCCESS);
  const CUresult set = SP(cuMemsetD8Async)(pointer, 0x3c, 1 << 20, stream);
  unsigned char last = 0;
  ASSERT_EQ(SP(cuMemcpyDtoHAsync_v2)(&last, pointer + (1 << 20) - 1, 1, stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);

  EXPECT_EQ(location_type, CU_MEM_LOCATION_TYPE_DEVICE);  // the spec: equivalent to a device pool
  EXPECT_EQ(location_id, 0);
  EXPECT_EQ(domain_id, -1);  // the spec: -1 for such pools
  EXPECT_EQ(set, CUDA_SUCCESS);
  EXPECT_EQ(last, 0x3c);
  EXPECT_EQ(SP(cuMemFreeAsync)(pointer, stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuMemPoolDestroy)(pool), CUDA_SUCCESS);
}

TEST_F(LocalityDomains, DomainsAndDevicesThatDoNotExistAndManagedPoolsAreInvalid) {
  CUmemoryPool pool = nullptr;

  EXPECT_EQ(create(localized(0, 1), &pool), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(create(localized(99, 0), &pool), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(create(localized(0, 0, 1), &pool), CUDA_ERROR_INVALID_VALUE);  // reserved bytes set
  EXPECT_EQ(create(localized(0, 0), &pool, CU_MEM_ALLOCATION_TYPE_MANAGED), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(LocalityDomains, DomainZeroNamesTheDevicesDefaultAndCurrentPool) {
  CUmemoryPool device_default = nullptr;
  ASSERT_EQ(SP(cuDeviceGetDefaultMemPool)(&device_default, 0), CUDA_SUCCESS);
  CUmemLocation where = localized(0, 0);
  CUmemoryPool domain_default = nullptr;
  ASSERT_EQ(SP(cuMemGetDefaultMemPool)(&domain_default, &where, CU_MEM_ALLOCATION_TYPE_PINNED), CUDA_SUCCESS);
  CUmemoryPool created = nullptr;
  ASSERT_EQ(create(localized(0, 0), &created), CUDA_SUCCESS);

  // Made current through the domain, it is the device's current pool, and the other way round.
  ASSERT_EQ(SP(cuMemSetMemPool)(&where, CU_MEM_ALLOCATION_TYPE_PINNED, created), CUDA_SUCCESS);
  CUmemoryPool device_current = nullptr;
  ASSERT_EQ(SP(cuDeviceGetMemPool)(&device_current, 0), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuDeviceSetMemPool)(0, device_default), CUDA_SUCCESS);
  CUmemoryPool domain_current = nullptr;
  ASSERT_EQ(SP(cuMemGetMemPool)(&domain_current, &where, CU_MEM_ALLOCATION_TYPE_PINNED), CUDA_SUCCESS);
  CUmemoryPool managed = nullptr;
  const CUresult managed_lookup = SP(cuMemGetDefaultMemPool)(&managed, &where, CU_MEM_ALLOCATION_TYPE_MANAGED);
  CUmemLocation second_domain = localized(0, 1);
  const CUresult missing_lookup = SP(cuMemGetMemPool)(&managed, &second_domain, CU_MEM_ALLOCATION_TYPE_PINNED);

  EXPECT_EQ(domain_default, device_default);
  EXPECT_EQ(device_current, created);
  EXPECT_EQ(domain_current, device_default);
  EXPECT_EQ(managed_lookup, CUDA_ERROR_INVALID_VALUE);  // the spec: not with Managed
  EXPECT_EQ(missing_lookup, CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(SP(cuMemPoolDestroy)(created), CUDA_SUCCESS);
}

}  // namespace
