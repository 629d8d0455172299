#include "locality_domains.hpp"

#include "device_context.hpp"
#include "driver_table.hpp"

namespace streampool::driver {

LocalizedLocation localized_of(int location_id) noexcept {
  // The union's bytes in memory order: deviceId, localityDomainId, reserved[2].
  const auto bytes = static_cast<unsigned>(location_id);
  return LocalizedLocation{static_cast<int>(bytes & 0xffU), static_cast<int>((bytes >> 8) & 0xffU),
                           (bytes >> 16) == 0};
}

int locality_domain_count(CUdevice device) noexcept {
  const auto query = real().cuDeviceGetAttribute;
  int count = 0;
  if (query == nullptr ||
      query(&count, static_cast<CUdevice_attribute>(kDeviceAttributeLocalityDomainCount), device) != CUDA_SUCCESS ||
      count < 1) {
    return 1;  // a driver that does not know the attribute knows one domain per device
  }
  return count;
}

CUresult device_of_locality_domain(int location_id, CUdevice* device) noexcept {
  const LocalizedLocation localized = localized_of(location_id);
  if (!localized.reserved_clear || !valid_device(localized.device)) return CUDA_ERROR_INVALID_VALUE;
  const int domains = locality_domain_count(localized.device);
  if (localized.domain >= domains) return CUDA_ERROR_INVALID_VALUE;
  if (domains > 1) return CUDA_ERROR_NOT_SUPPORTED;
  *device = localized.device;
  return CUDA_SUCCESS;
}

}  // namespace streampool::driver
