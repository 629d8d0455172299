// Device locality domains (CUDA 13.4): a device whose SMs and memory form several partitions
// names each partition by a domain id, and a pool can be placed in one (location type
// kMemLocationTypeDeviceLocalityDomain, the id read as `localized`).
//
// streampool places memory per device, never per partition. On a device with a single domain,
// domain 0 *is* the device (the spec: such a pool equals a full-device pool, and its
// LOCALITY_DOMAIN_ID reads -1), so those locations are served as the device. A device with several
// domains would need memory placed in one partition: streampool answers NOT_SUPPORTED there rather
// than hand out memory from the wrong partition.
#pragma once

#include "cuda_compat.hpp"

namespace streampool::driver {

// The `localized` member of a CUmemLocation's id union, as CUDA 13.4 lays it out over `int id`.
struct LocalizedLocation {
  int device = 0;
  int domain = 0;
  bool reserved_clear = true;  // the two reserved bytes are zero
};
LocalizedLocation localized_of(int location_id) noexcept;

// The device's number of locality domains: the driver's answer to
// CU_DEVICE_ATTRIBUTE_LOCALITY_DOMAIN_COUNT, or 1 from a driver that predates the attribute.
int locality_domain_count(CUdevice device) noexcept;

// A locality-domain location as the device it stands for. CUDA_SUCCESS with *device set for
// domain 0 of a single-domain device; INVALID_VALUE for a device or domain that does not exist or
// set reserved bytes; NOT_SUPPORTED for a domain of a device with several.
CUresult device_of_locality_domain(int location_id, CUdevice* device) noexcept;

}  // namespace streampool::driver
