// Entry points: virtual memory management (implemented in vmm.cpp).
#include "api_guard.hpp"
#include "driver.hpp"
#include "vmm.hpp"

using namespace fake;

namespace {

CUresult allocation_granularity(size_t* granularity, const CUmemAllocationProp* prop,
                                CUmemAllocationGranularity_flags option) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (granularity == nullptr || prop == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM && option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE && !Driver::instance().valid_device(prop->location.id)) {
    return CUDA_ERROR_INVALID_DEVICE;
  }
  *granularity = kVmmGranularity;  // the H200's, minimum and recommended alike
  return CUDA_SUCCESS;
}

}  // namespace

FAKE_EXPORT CUresult cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp* prop,
                                                   CUmemAllocationGranularity_flags option) {
  FAKE_ENTRY(allocation_granularity(granularity, prop, option));
}
FAKE_EXPORT CUresult cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                         unsigned long long flags) {
  FAKE_ENTRY(vmm_address_reserve(ptr, size, alignment, addr, flags));
}
FAKE_EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) { FAKE_ENTRY(vmm_address_free(ptr, size)); }
FAKE_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size, const CUmemAllocationProp* prop,
                                 unsigned long long flags) {
  FAKE_ENTRY(vmm_create(handle, size, prop, flags));
}
FAKE_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle) { FAKE_ENTRY(vmm_release(handle)); }
FAKE_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                              unsigned long long flags) {
  FAKE_ENTRY(vmm_map(ptr, size, offset, handle, flags));
}
FAKE_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) { FAKE_ENTRY(vmm_unmap(ptr, size)); }
FAKE_EXPORT CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count) {
  FAKE_ENTRY(vmm_set_access(ptr, size, desc, count));
}
FAKE_EXPORT CUresult cuMemGetAccess(unsigned long long* flags, const CUmemLocation* location, CUdeviceptr ptr) {
  FAKE_ENTRY(vmm_get_access(flags, location, ptr));
}
FAKE_EXPORT CUresult cuMemExportToShareableHandle(void* shareableHandle, CUmemGenericAllocationHandle handle,
                                                  CUmemAllocationHandleType handleType, unsigned long long flags) {
  FAKE_ENTRY(vmm_export(shareableHandle, handle, handleType, flags));
}
FAKE_EXPORT CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle* handle, void* osHandle,
                                                    CUmemAllocationHandleType shHandleType) {
  FAKE_ENTRY(vmm_import(handle, osHandle, shHandleType));
}
FAKE_EXPORT CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle* handle, void* addr) {
  FAKE_ENTRY(vmm_retain_handle(handle, addr));
}
FAKE_EXPORT CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp* prop,
                                                            CUmemGenericAllocationHandle handle) {
  FAKE_ENTRY(vmm_properties(prop, handle));
}
