// Attributes: the 15 pool attributes (CUmemPool_attribute 1..15; 9..15 are CUDA 13.x's, which
// driver 580 still refuses but streampool answers from the spec) through the engine, for every kind
// of pool (device, host, host NUMA, managed, imported), and the two device attributes that describe
// the pool family.
#include "call_counters.hpp"
#include "driver/device_context.hpp"
#include "process_state.hpp"
#include "raw_enum.hpp"
#include "report/trace_points.hpp"

namespace streampool::interpose {

namespace {

// Attributes and the pool attribute enum arrive as ints (raw_enum.hpp): any value is answered.
bool known_attribute(int attribute) noexcept {
  return attribute >= driver::kMempoolAttrFirst && attribute <= driver::kMempoolAttrLast;
}

// Set and Get accept the same calls: the pool a call names, or nullptr when its value pointer,
// attribute or pool handle is one the driver answers CUDA_ERROR_INVALID_VALUE for.
core::Pool* attribute_call_pool(CUmemoryPool handle, int attribute, const void* value) {
  auto* pool = reinterpret_cast<core::Pool*>(handle);
  if (value == nullptr || !known_attribute(attribute) || !engine().is_pool(pool)) return nullptr;
  return pool;
}

CUresult pool_set_attribute(CUmemoryPool handle, int attribute, void* value) noexcept {
  count_call(Hook::cuMemPoolSetAttribute);
  HookScope scope;
  if (bypass(scope)) return forward(as_int_abi(driver::real().cuMemPoolSetAttribute), handle, attribute, value);
  try {
    core::Pool* pool = attribute_call_pool(handle, attribute, value);
    if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return to_cuda(engine().set_attribute(pool, static_cast<core::PoolAttribute>(attribute), value));
  } catch (...) {
    return CUDA_ERROR_UNKNOWN;
  }
}

CUresult pool_get_attribute(CUmemoryPool handle, int attribute, void* value) noexcept {
  count_call(Hook::cuMemPoolGetAttribute);
  HookScope scope;
  if (bypass(scope)) return forward(as_int_abi(driver::real().cuMemPoolGetAttribute), handle, attribute, value);
  try {
    core::Pool* pool = attribute_call_pool(handle, attribute, value);
    if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return to_cuda(engine().get_attribute(pool, static_cast<core::PoolAttribute>(attribute), value));
  } catch (...) {
    return CUDA_ERROR_UNKNOWN;
  }
}

// What streampool's pools on `device` can export: POSIX file descriptors where the driver can
// create VMM memory exportable as such (pools shared between processes rest on it).
unsigned exportable_handle_types(CUdevice device) noexcept {
  const auto query = as_int_abi(driver::real().cuDeviceGetAttribute);
  int vmm = 0;
  int posix_fd = 0;
  if (query == nullptr || query(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, device) != CUDA_SUCCESS ||
      query(&posix_fd, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, device) != CUDA_SUCCESS ||
      vmm == 0 || posix_fd == 0) {
    return 0;
  }
  return driver::kSupportedPoolHandleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
}

CUresult device_get_attribute(int* value, int attribute, CUdevice device) noexcept {
  count_call(Hook::cuDeviceGetAttribute);
  HookScope scope;
  CUresult result = forward(as_int_abi(driver::real().cuDeviceGetAttribute), value, attribute, device);
  if (bypass(scope)) return result;
  if (result == CUDA_ERROR_INVALID_VALUE && attribute == driver::kDeviceAttributeLocalityDomainCount &&
      value != nullptr && driver::valid_device(device)) {
    // A driver older than the attribute: its devices are single-domain, and streampool serves
    // domain 0 of each (driver/locality_domains.hpp).
    *value = 1;
    return CUDA_SUCCESS;
  }
  if (result != CUDA_SUCCESS) return result;
  if (attribute == CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED) {
    *value = 1;  // streampool serves the pool family on every device
  } else if (attribute == CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES) {
    *value = static_cast<int>(exportable_handle_types(device));
  }
  return result;
}

}  // namespace

}  // namespace streampool::interpose

namespace sp = streampool::interpose;

STREAMPOOL_HOOK CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  // Traced: the attribute and its value (the three reuse flags are ints, the others 64-bit).
  const int attribute = sp::raw_enum(attr);
  std::uint64_t traced_value = 0;
  if (value != nullptr && sp::tracing()) {
    traced_value = attribute >= 1 && attribute <= 3 ? static_cast<std::uint64_t>(*static_cast<const int*>(value))
                                                    : *static_cast<const std::uint64_t*>(value);
  }
  return sp::traced(streampool::trace::Op::pool_set_attribute, 0, nullptr, reinterpret_cast<std::uintptr_t>(pool),
                    traced_value, static_cast<std::uint64_t>(attribute),
                    [&] { return sp::pool_set_attribute(pool, attribute, value); });
}

STREAMPOOL_HOOK CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  return sp::pool_get_attribute(pool, sp::raw_enum(attr), value);
}

STREAMPOOL_HOOK CUresult cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice dev) {
  return sp::device_get_attribute(pi, sp::raw_enum(attrib), dev);
}
