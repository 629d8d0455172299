// Entry points: initialisation, driver version, devices.
#include <cstdio>
#include <cstring>

#include "api_guard.hpp"
#include "driver.hpp"

namespace fake {
namespace {

// Attribute values of the fake device: an H100/H200-like part (compute capability 9.0). The fake has
// no native memory pools (streampool provides them); it has VMM and POSIX-fd sharing.
int attribute_value(CUdevice_attribute attribute, CUdevice device) {
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: return 64;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: return 2147483647;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: return 49152;
    case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: return 65536;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: return 32;
    case CU_DEVICE_ATTRIBUTE_MAX_PITCH: return 2147483647;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: return 65536;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: return 1980000;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT: return 512;
    case CU_DEVICE_ATTRIBUTE_GPU_OVERLAP: return 1;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: return 132;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: return 1;
    case CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT: return 512;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: return 1;
    case CU_DEVICE_ATTRIBUTE_ECC_ENABLED: return 1;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: return 0x10 + device;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: return 2619000;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: return 5120;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: return 52428800;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: return 2048;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: return 3;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: return 1;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT: return 32;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: return 9;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: return 0;
    case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: return 233472;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: return 65536;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: return 1;
    case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID: return device;
    case CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO: return 2;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: return 1;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM: return 1;
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: return 1;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: return 232448;
    case CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST: return 1;
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: return 32;
    case CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE: return 32505856;
    case CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE: return 134213632;
    case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK: return 1024;
    case CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: return 0;
    case CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES: return 0;
    case CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH: return 1;
    case CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS: return 1;
    case CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR: return 1;
    case CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT: return 4;
    case CU_DEVICE_ATTRIBUTE_NUMA_ID: return -1;
    case CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID: return -1;
    case CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: return 1;
    default: return 0;
  }
}

CUresult device_get_name(char* name, int length, CUdevice device) {
  if (CUresult status = require_device(device); status != CUDA_SUCCESS) return status;
  if (name == nullptr || length <= 0) return CUDA_ERROR_INVALID_VALUE;
  std::snprintf(name, static_cast<std::size_t>(length), "%s", "streampool fake device");
  return CUDA_SUCCESS;
}

CUresult device_get_uuid(CUuuid* uuid, CUdevice device) {
  if (CUresult status = require_device(device); status != CUDA_SUCCESS) return status;
  if (uuid == nullptr) return CUDA_ERROR_INVALID_VALUE;
  static constexpr char kPrefix[] = "streampoolfake";  // 14 bytes, then the ordinal
  std::memcpy(uuid->bytes, kPrefix, 14);
  uuid->bytes[14] = static_cast<char>(device >> 8);
  uuid->bytes[15] = static_cast<char>(device & 0xff);
  return CUDA_SUCCESS;
}

CUresult device_get_pci_bus_id(char* text, int length, CUdevice device) {
  if (CUresult status = require_device(device); status != CUDA_SUCCESS) return status;
  if (text == nullptr || length <= 0) return CUDA_ERROR_INVALID_VALUE;
  std::snprintf(text, static_cast<std::size_t>(length), "00000000:%02X:00.0", 0x10 + device);
  return CUDA_SUCCESS;
}

CUresult device_get_by_pci_bus_id(CUdevice* device, const char* text) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (device == nullptr || text == nullptr) return CUDA_ERROR_INVALID_VALUE;
  unsigned domain = 0, bus = 0, slot = 0, function = 0;
  if (std::sscanf(text, "%x:%x:%x.%x", &domain, &bus, &slot, &function) != 4) return CUDA_ERROR_INVALID_VALUE;
  const int ordinal = static_cast<int>(bus) - 0x10;
  if (domain != 0 || slot != 0 || !Driver::instance().valid_device(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

}  // namespace
}  // namespace fake

using namespace fake;

#undef cuDeviceGetUuid
FAKE_EXPORT CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice dev);

FAKE_EXPORT CUresult cuInit(unsigned int Flags) { FAKE_ENTRY(Driver::instance().initialize(Flags)); }

FAKE_EXPORT CUresult cuDriverGetVersion(int* driverVersion) {
  FAKE_ENTRY(driverVersion == nullptr ? CUDA_ERROR_INVALID_VALUE : (*driverVersion = kDriverVersion, CUDA_SUCCESS));
}

FAKE_EXPORT CUresult cuDeviceGetCount(int* count) {
  FAKE_ENTRY([&] {
    if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
    if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *count = Driver::instance().device_count();
    return CUDA_SUCCESS;
  }());
}

FAKE_EXPORT CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  FAKE_ENTRY([&] {
    if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
    if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (!Driver::instance().valid_device(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
  }());
}

FAKE_EXPORT CUresult cuDeviceGetName(char* name, int len, CUdevice dev) { FAKE_ENTRY(device_get_name(name, len, dev)); }

FAKE_EXPORT CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  FAKE_ENTRY([&] {
    if (CUresult status = require_device(dev); status != CUDA_SUCCESS) return status;
    if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *bytes = Driver::instance().device(dev).total_bytes;
    return CUDA_SUCCESS;
  }());
}

FAKE_EXPORT CUresult cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice dev) {
  FAKE_ENTRY([&] {
    if (CUresult status = require_device(dev); status != CUDA_SUCCESS) return status;
    if (pi == nullptr || attrib <= 0 || attrib >= CU_DEVICE_ATTRIBUTE_MAX) return CUDA_ERROR_INVALID_VALUE;
    *pi = attribute_value(attrib, dev);
    return CUDA_SUCCESS;
  }());
}

FAKE_EXPORT CUresult cuDeviceComputeCapability(int* major, int* minor, CUdevice dev) {
  FAKE_ENTRY([&] {
    if (CUresult status = require_device(dev); status != CUDA_SUCCESS) return status;
    if (major == nullptr || minor == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *major = 9;
    *minor = 0;
    return CUDA_SUCCESS;
  }());
}

FAKE_EXPORT CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) { FAKE_ENTRY(device_get_uuid(uuid, dev)); }
FAKE_EXPORT CUresult cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice dev) { FAKE_ENTRY(device_get_uuid(uuid, dev)); }

FAKE_EXPORT CUresult cuDeviceCanAccessPeer(int* canAccessPeer, CUdevice dev, CUdevice peerDev) {
  FAKE_ENTRY([&] {
    if (CUresult status = require_device(dev); status != CUDA_SUCCESS) return status;
    if (CUresult status = require_device(peerDev); status != CUDA_SUCCESS) return status;
    if (canAccessPeer == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *canAccessPeer = dev != peerDev ? 1 : 0;
    return CUDA_SUCCESS;
  }());
}

FAKE_EXPORT CUresult cuDeviceGetPCIBusId(char* pciBusId, int len, CUdevice dev) {
  FAKE_ENTRY(device_get_pci_bus_id(pciBusId, len, dev));
}

FAKE_EXPORT CUresult cuDeviceGetByPCIBusId(CUdevice* dev, const char* pciBusId) {
  FAKE_ENTRY(device_get_by_pci_bus_id(dev, pciBusId));
}
