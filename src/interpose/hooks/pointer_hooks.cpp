// Pool pointers wherever a pointer can go.
//
//   cuMemFree_v2 of a pool pointer frees it to its pool: it synchronises the current context as
//     cuMemFree does, then Engine::free_completed. Unlike the driver (whose USED_MEM_CURRENT never
//     drops after cudaFree of a pool pointer), the statistics stay exact.
//   cuPointerGetAttribute(s): MEMPOOL_HANDLE, RANGE_START_ADDR and RANGE_SIZE describe the pool
//     allocation (not the granules mapped behind it), IS_LEGACY_CUDA_IPC_CAPABLE is 0; a pinned host
//     pool's memory is MEMORY_TYPE host with HOST_POINTER the pointer itself; everything else comes
//     from the real driver, which sees the VMM mapping underneath.
//   An imported allocation (another process's pool) is freed by unmapping it (ipc.hpp).
//   cuMemGetAddressRange_v2: the allocation itself.
//   A block served for cuMemAlloc (STREAMPOOL_SERVE_MALLOC, serve/serve_malloc.hpp) is described
//   as the driver describes cuMemAlloc memory: device memory of its device and the context it was
//   served in, no pool (MEMPOOL_HANDLE null); its cuMemFree is serve_hooks::mem_free.
// Pointers the engine does not own go to the real driver untouched.
#include <vector>

#include "call_counters.hpp"
#include "insight/leak_hooks.hpp"
#include "process_state.hpp"
#include "driver/stream_registry.hpp"
#include "ipc/ipc.hpp"
#include "tracking.hpp"
#include "report/trace_points.hpp"
#include "serve/serve_malloc.hpp"

namespace streampool::interpose {

namespace {

// The live allocation holding `address`, if the engine has one.
bool pool_block(CUdeviceptr address, core::BlockInfo* info) {
  auto* pointer = reinterpret_cast<void*>(address);
  return address != 0 && engine().owns(pointer) && engine().lookup(pointer, info);
}

// A served block's answers, where they differ from a pool block's; false for the others.
bool answer_served_attribute(CUpointer_attribute attribute, const core::BlockInfo& info, void* data) noexcept {
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
      *static_cast<CUmemoryPool*>(data) = nullptr;
      return true;
    case CU_POINTER_ATTRIBUTE_CONTEXT:
      *static_cast<CUcontext*>(data) = serve_hooks::context_of(info.base);
      return true;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      *static_cast<unsigned int*>(data) = CU_MEMORYTYPE_DEVICE;
      return true;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      *static_cast<int*>(data) = engine().props(info.pool).location_id;
      return true;
    default:
      return false;
  }
}

// Writes streampool's answer for one attribute; false when the real driver's answer stands.
bool answer_attribute(CUpointer_attribute attribute, const core::BlockInfo& info, void* data) noexcept {
  if (serve_hooks::is_serving_pool(info.pool) && answer_served_attribute(attribute, info, data)) return true;
  // Pinned host pools hold host memory, mapped at the same address for the CPU and every device.
  const bool host_memory = engine().props(info.pool).kind == core::PoolKind::pinned_host;
  if (host_memory) {
    switch (attribute) {
      case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *static_cast<unsigned int*>(data) = CU_MEMORYTYPE_HOST;
        return true;
      case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        *static_cast<void**>(data) = reinterpret_cast<void*>(info.base);
        return true;
      default:
        break;
    }
  }
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
      *static_cast<CUmemoryPool*>(data) = reinterpret_cast<CUmemoryPool>(info.pool);
      return true;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
      *static_cast<CUdeviceptr*>(data) = static_cast<CUdeviceptr>(info.base);
      return true;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
      *static_cast<size_t*>(data) = info.requested_bytes;
      return true;
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
      // The driver writes a bool here; clearing the first byte is right for bool and int alike.
      *static_cast<unsigned char*>(data) = 0;
      return true;
    default:
      return false;
  }
}

CUresult mem_free(CUdeviceptr dptr) noexcept {
  count_call(Hook::cuMemFree_v2);
  const driver::DriverTable& table = driver::real();
  HookScope scope;
  if (bypass(scope)) return forward(table.cuMemFree_v2, dptr);
  try {
    auto* pointer = reinterpret_cast<void*>(dptr);
    if (ipc::is_imported_pointer(dptr)) return ipc::free_imported(dptr);
    // Not a pool's: the driver's, given back to the cap if it was counted there.
    if (dptr == 0 || !engine().owns(pointer)) return control_hooks::mem_free_forwarded(dptr);
    core::BlockInfo info;
    if (!engine().lookup(pointer, &info) || info.base != static_cast<std::uintptr_t>(dptr)) {
      return CUDA_ERROR_INVALID_VALUE;  // an interior pointer, or one already freed
    }
    if (serve_hooks::is_serving_pool(info.pool)) return serve_hooks::mem_free(dptr, info);
    // cuMemFree synchronises: once it returned, every use of the block has finished.
    // Only the current context is synchronised: the ticket covers its streams alone.
    core::SyncTicket ticket = ticket_for_context(current_context(), true);
    CUresult result = forward(table.cuCtxSynchronize);
    if (result == CUDA_ERROR_DEINITIALIZED) return CUDA_SUCCESS;  // at exit, after the driver's teardown
    if (result != CUDA_SUCCESS) return result;
    engine().commit(ticket);
    const std::size_t registered_bytes =
        insight_hooks::nvtx_enabled() ? insight_hooks::nvtx_freeing(static_cast<std::uintptr_t>(dptr)) : 0;
    core::Status status = engine().free_completed(pointer);
    if (core::ok(status)) ipc::allocation_freed(dptr);
    if (!core::ok(status) && registered_bytes != 0) {
      insight_hooks::nvtx_allocated(static_cast<std::uintptr_t>(dptr), registered_bytes);  // still the program's
    }
    if (insight_hooks::leaks_on() && core::ok(status)) [[unlikely]] insight_hooks::freed_at_once(dptr);
    return to_cuda(status);
  } catch (...) {
    return CUDA_ERROR_UNKNOWN;
  }
}

CUresult pointer_get_attribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) noexcept {
  count_call(Hook::cuPointerGetAttribute);
  const driver::DriverTable& table = driver::real();
  HookScope scope;
  if (bypass(scope)) return forward(table.cuPointerGetAttribute, data, attribute, ptr);
  try {
    core::BlockInfo info;
    if (data != nullptr && pool_block(ptr, &info)) {
      if (attribute == CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE) {
        CUresult result = forward(table.cuPointerGetAttribute, data, attribute, ptr);
        if (result == CUDA_SUCCESS) answer_attribute(attribute, info, data);
        return result;
      }
      if (answer_attribute(attribute, info, data)) return CUDA_SUCCESS;
    }
  } catch (...) {
  }
  return forward(table.cuPointerGetAttribute, data, attribute, ptr);
}

CUresult pointer_get_attributes(unsigned int count, CUpointer_attribute* attributes, void** data,
                                CUdeviceptr ptr) noexcept {
  count_call(Hook::cuPointerGetAttributes);
  HookScope scope;
  const driver::DriverTable& table = driver::real();
  CUresult result = forward(table.cuPointerGetAttributes, count, attributes, data, ptr);
  if (bypass(scope) || result != CUDA_SUCCESS || attributes == nullptr || data == nullptr) return result;
  try {
    core::BlockInfo info;
    if (!pool_block(ptr, &info)) return result;
    for (unsigned int i = 0; i < count; ++i) {
      if (data[i] != nullptr) answer_attribute(attributes[i], info, data[i]);
    }
  } catch (...) {
  }
  return result;
}

CUresult mem_get_address_range(CUdeviceptr* pbase, size_t* psize, CUdeviceptr dptr) noexcept {
  count_call(Hook::cuMemGetAddressRange_v2);
  const driver::DriverTable& table = driver::real();
  HookScope scope;
  if (bypass(scope)) return forward(table.cuMemGetAddressRange_v2, pbase, psize, dptr);
  try {
    core::BlockInfo info;
    if (pool_block(dptr, &info)) {
      if (pbase != nullptr) *pbase = static_cast<CUdeviceptr>(info.base);
      if (psize != nullptr) *psize = info.requested_bytes;
      return CUDA_SUCCESS;
    }
  } catch (...) {
  }
  return forward(table.cuMemGetAddressRange_v2, pbase, psize, dptr);
}

}  // namespace

}  // namespace streampool::interpose

namespace sp = streampool::interpose;

STREAMPOOL_HOOK CUresult cuMemFree_v2(CUdeviceptr dptr) {
  return sp::traced_free(streampool::trace::Op::free_completed, false, dptr, nullptr, [&] { return sp::mem_free(dptr); });
}

STREAMPOOL_HOOK CUresult cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  return sp::pointer_get_attribute(data, attribute, ptr);
}

STREAMPOOL_HOOK CUresult cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute* attributes,
                                                void** data, CUdeviceptr ptr) {
  return sp::pointer_get_attributes(numAttributes, attributes, data, ptr);
}

STREAMPOOL_HOOK CUresult cuMemGetAddressRange_v2(CUdeviceptr* pbase, size_t* psize, CUdeviceptr dptr) {
  return sp::mem_get_address_range(pbase, psize, dptr);
}
