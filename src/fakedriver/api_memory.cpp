// Entry points: linear memory (device, pinned host, managed, registered host), copies and memsets
// (synchronous ones on the default stream, asynchronous ones in stream order), memory info and
// pointer queries. Device memory is host memory here; a copy or memset checks that its device side
// lies in memory the fake handed out (an error instead of a crash in the test process).
#include <cstring>

#include "allocations.hpp"
#include "api_guard.hpp"
#include "driver.hpp"
#include "graph_memory.hpp"
#include "pointer_info.hpp"
#include "stream_ops.hpp"

namespace fake {
namespace {

constexpr DefaultStream kLegacy = DefaultStream::legacy;
constexpr DefaultStream kPerThread = DefaultStream::per_thread;

void* as_pointer(CUdeviceptr address) { return reinterpret_cast<void*>(static_cast<std::uintptr_t>(address)); }

CUresult mem_alloc(CUdeviceptr* out, std::size_t size, MemoryKind kind) {
  Context* context = nullptr;
  if (CUresult status = require_current_context(context); status != CUDA_SUCCESS) return status;
  if (out == nullptr || size == 0) return CUDA_ERROR_INVALID_VALUE;
  std::uintptr_t address = 0;
  if (CUresult status = allocate_memory(kind, size, context, address); status != CUDA_SUCCESS) return status;
  *out = address;
  return CUDA_SUCCESS;
}

CUresult mem_free(CUdeviceptr address) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (address == 0) return CUDA_SUCCESS;
  if (graph_memory_free(address)) return CUDA_SUCCESS;  // a live graph allocation ends (graph_memory.hpp)
  return free_memory(address, true, false);
}

CUresult host_alloc(void** out, std::size_t size) {
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUdeviceptr address = 0;
  if (CUresult status = mem_alloc(&address, size, MemoryKind::host); status != CUDA_SUCCESS) return status;
  *out = as_pointer(address);
  return CUDA_SUCCESS;
}

CUresult host_free(void* pointer) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  return free_memory(reinterpret_cast<std::uintptr_t>(pointer), false, true);
}

CUresult host_register(void* pointer, std::size_t size) {
  Context* context = nullptr;
  if (CUresult status = require_current_context(context); status != CUDA_SUCCESS) return status;
  return register_host_memory(pointer, size, context);
}

CUresult host_get_device_pointer(CUdeviceptr* out, void* pointer, unsigned flags) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (out == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  auto info = lookup_pointer(reinterpret_cast<std::uintptr_t>(pointer));
  if (!info || info->device_memory) return CUDA_ERROR_INVALID_VALUE;
  *out = reinterpret_cast<std::uintptr_t>(pointer);  // unified addressing: the same address
  return CUDA_SUCCESS;
}

CUresult mem_get_info(std::size_t* free_bytes, std::size_t* total_bytes) {
  Context* context = nullptr;
  if (CUresult status = require_current_context(context); status != CUDA_SUCCESS) return status;
  if (free_bytes == nullptr || total_bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const Device& device = Driver::instance().device(context->device());
  const std::uint64_t used = device.used_bytes.load();
  *total_bytes = device.total_bytes;
  *free_bytes = used >= device.total_bytes ? 0 : device.total_bytes - used;
  return CUDA_SUCCESS;
}

CUresult get_address_range(CUdeviceptr* base, std::size_t* size, CUdeviceptr address) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  auto info = lookup_pointer(address);
  if (!info) return CUDA_ERROR_NOT_FOUND;
  if (base != nullptr) *base = info->base;
  if (size != nullptr) *size = info->size;
  return CUDA_SUCCESS;
}

// Copies -------------------------------------------------------------------------------------------

enum class Side { host, device, any };

bool usable(std::uintptr_t address, std::size_t bytes, Side side) {
  if (bytes == 0) return true;
  if (address == 0) return false;
  return side != Side::device || device_range_usable(address, bytes);
}

CUresult copy(std::uintptr_t dst, Side dst_side, std::uintptr_t src, Side src_side, std::size_t bytes,
              CUstream stream, DefaultStream default_stream, bool synchronous) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (!usable(dst, bytes, dst_side) || !usable(src, bytes, src_side)) return CUDA_ERROR_INVALID_VALUE;
  return submit_to_stream(
      stream, default_stream,
      [dst, src, bytes] {
        if (bytes != 0) std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), bytes);
      },
      {}, synchronous);
}

template <class Element>
CUresult fill(CUdeviceptr dst, Element value, std::size_t count, CUstream stream, DefaultStream default_stream,
              bool synchronous) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (dst % sizeof(Element) != 0 || count > ~std::size_t{0} / sizeof(Element) ||
      !usable(dst, count * sizeof(Element), Side::device)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return submit_to_stream(
      stream, default_stream,
      [dst, value, count] {
        auto* elements = reinterpret_cast<Element*>(static_cast<std::uintptr_t>(dst));
        for (std::size_t index = 0; index < count; ++index) elements[index] = value;
      },
      {}, synchronous);
}

std::uintptr_t host_address(const void* pointer) { return reinterpret_cast<std::uintptr_t>(pointer); }

// Pointer attributes -------------------------------------------------------------------------------

CUresult pointer_attribute(void* data, CUpointer_attribute attribute, const PointerInfo& info, CUdeviceptr address) {
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
      *static_cast<CUcontext*>(data) = info.context == nullptr ? nullptr : info.context->handle();
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      *static_cast<unsigned*>(data) = info.device_memory ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
      *static_cast<CUdeviceptr*>(data) = address;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
      if (info.device_memory && !info.managed) return CUDA_ERROR_INVALID_VALUE;  // device memory has no host address
      *static_cast<void**>(data) = as_pointer(address);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
      *static_cast<unsigned long long*>(data) = info.buffer_id;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
      *static_cast<bool*>(data) = info.managed;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      *static_cast<int*>(data) = info.device;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
      *static_cast<bool*>(data) = info.legacy_ipc_capable;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
      *static_cast<CUdeviceptr*>(data) = info.base;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
      *static_cast<std::size_t*>(data) = info.size;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPED:
      *static_cast<bool*>(data) = true;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
      *static_cast<CUmemoryPool*>(data) = nullptr;  // the fake has no native pools
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult pointer_get_attribute(void* data, CUpointer_attribute attribute, CUdeviceptr address) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (data == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto info = lookup_pointer(address);
  if (!info) return CUDA_ERROR_INVALID_VALUE;
  return pointer_attribute(data, attribute, *info, address);
}

// Unlike the single query, an unknown pointer is not an error: its attributes read as zero/NULL.
CUresult pointer_get_attributes(unsigned count, CUpointer_attribute* attributes, void** data, CUdeviceptr address) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (count == 0 || attributes == nullptr || data == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto info = lookup_pointer(address);
  for (unsigned index = 0; index < count; ++index) {
    if (data[index] == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (info) {
      CUresult status = pointer_attribute(data[index], attributes[index], *info, address);
      if (status == CUDA_SUCCESS) continue;
      if (attributes[index] != CU_POINTER_ATTRIBUTE_HOST_POINTER) return status;
    }
    // No value: zero of the attribute's size.
    switch (attributes[index]) {
      case CU_POINTER_ATTRIBUTE_CONTEXT: *static_cast<CUcontext*>(data[index]) = nullptr; break;
      case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: *static_cast<unsigned*>(data[index]) = 0; break;
      case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *static_cast<int*>(data[index]) = -2; break;
      case CU_POINTER_ATTRIBUTE_IS_MANAGED:
      case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
      case CU_POINTER_ATTRIBUTE_MAPPED: *static_cast<bool*>(data[index]) = false; break;
      case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *static_cast<std::size_t*>(data[index]) = 0; break;
      case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
      case CU_POINTER_ATTRIBUTE_HOST_POINTER:
      case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
      case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
      case CU_POINTER_ATTRIBUTE_BUFFER_ID: *static_cast<unsigned long long*>(data[index]) = 0; break;
      default: return CUDA_ERROR_INVALID_VALUE;
    }
  }
  return CUDA_SUCCESS;
}

}  // namespace
}  // namespace fake

using namespace fake;

#undef cuMemHostRegister
FAKE_EXPORT CUresult cuMemHostRegister(void* p, size_t bytesize, unsigned int Flags);
FAKE_EXPORT CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount);
FAKE_EXPORT CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream);
FAKE_EXPORT CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount);
FAKE_EXPORT CUresult cuMemcpyDtoH_v2_ptds(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount);
FAKE_EXPORT CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount);
FAKE_EXPORT CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount,
                                               CUstream hStream);
FAKE_EXPORT CUresult cuMemcpyDtoHAsync_v2_ptsz(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                                               CUstream hStream);
FAKE_EXPORT CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                                               CUstream hStream);
FAKE_EXPORT CUresult cuMemsetD8_v2_ptds(CUdeviceptr dstDevice, unsigned char uc, size_t N);
FAKE_EXPORT CUresult cuMemsetD16_v2_ptds(CUdeviceptr dstDevice, unsigned short us, size_t N);
FAKE_EXPORT CUresult cuMemsetD32_v2_ptds(CUdeviceptr dstDevice, unsigned int ui, size_t N);
FAKE_EXPORT CUresult cuMemsetD8Async_ptsz(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream);
FAKE_EXPORT CUresult cuMemsetD16Async_ptsz(CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream);
FAKE_EXPORT CUresult cuMemsetD32Async_ptsz(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream);

FAKE_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  FAKE_ENTRY(mem_alloc(dptr, bytesize, MemoryKind::device));
}
FAKE_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) { FAKE_ENTRY(mem_free(dptr)); }
FAKE_EXPORT CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
  FAKE_ENTRY((flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST) ? CUDA_ERROR_INVALID_VALUE
                                                                             : mem_alloc(dptr, bytesize, MemoryKind::managed));
}
FAKE_EXPORT CUresult cuMemAllocHost_v2(void** pp, size_t bytesize) { FAKE_ENTRY(host_alloc(pp, bytesize)); }
FAKE_EXPORT CUresult cuMemHostAlloc(void** pp, size_t bytesize, unsigned int Flags) {
  static_cast<void>(Flags);  // portable / device-mapped / write-combined: all the same host memory here
  FAKE_ENTRY(host_alloc(pp, bytesize));
}
FAKE_EXPORT CUresult cuMemFreeHost(void* p) { FAKE_ENTRY(host_free(p)); }
FAKE_EXPORT CUresult cuMemHostRegister(void* p, size_t bytesize, unsigned int Flags) {
  static_cast<void>(Flags);
  FAKE_ENTRY(host_register(p, bytesize));
}
FAKE_EXPORT CUresult cuMemHostRegister_v2(void* p, size_t bytesize, unsigned int Flags) {
  static_cast<void>(Flags);
  FAKE_ENTRY(host_register(p, bytesize));
}
FAKE_EXPORT CUresult cuMemHostUnregister(void* p) {
  FAKE_ENTRY(require_initialized() != CUDA_SUCCESS ? require_initialized() : unregister_host_memory(p));
}
FAKE_EXPORT CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr* pdptr, void* p, unsigned int Flags) {
  FAKE_ENTRY(host_get_device_pointer(pdptr, p, Flags));
}
FAKE_EXPORT CUresult cuMemGetInfo_v2(size_t* free, size_t* total) { FAKE_ENTRY(mem_get_info(free, total)); }
FAKE_EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr* pbase, size_t* psize, CUdeviceptr dptr) {
  FAKE_ENTRY(get_address_range(pbase, psize, dptr));
}

// Synchronous copies run on the default stream and return when done.
FAKE_EXPORT CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount) {
  FAKE_ENTRY(copy(dst, Side::any, src, Side::any, ByteCount, nullptr, kLegacy, true));
}
FAKE_EXPORT CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount) {
  FAKE_ENTRY(copy(dst, Side::any, src, Side::any, ByteCount, nullptr, kPerThread, true));
}
FAKE_EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount) {
  FAKE_ENTRY(copy(dstDevice, Side::device, host_address(srcHost), Side::host, ByteCount, nullptr, kLegacy, true));
}
FAKE_EXPORT CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount) {
  FAKE_ENTRY(copy(dstDevice, Side::device, host_address(srcHost), Side::host, ByteCount, nullptr, kPerThread, true));
}
FAKE_EXPORT CUresult cuMemcpyDtoH_v2(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
  FAKE_ENTRY(copy(host_address(dstHost), Side::host, srcDevice, Side::device, ByteCount, nullptr, kLegacy, true));
}
FAKE_EXPORT CUresult cuMemcpyDtoH_v2_ptds(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
  FAKE_ENTRY(copy(host_address(dstHost), Side::host, srcDevice, Side::device, ByteCount, nullptr, kPerThread, true));
}
FAKE_EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount) {
  FAKE_ENTRY(copy(dstDevice, Side::device, srcDevice, Side::device, ByteCount, nullptr, kLegacy, true));
}
FAKE_EXPORT CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount) {
  FAKE_ENTRY(copy(dstDevice, Side::device, srcDevice, Side::device, ByteCount, nullptr, kPerThread, true));
}

// Asynchronous copies run in stream order.
FAKE_EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream) {
  FAKE_ENTRY(copy(dst, Side::any, src, Side::any, ByteCount, hStream, kLegacy, false));
}
FAKE_EXPORT CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream) {
  FAKE_ENTRY(copy(dst, Side::any, src, Side::any, ByteCount, hStream, kPerThread, false));
}
FAKE_EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount,
                                          CUstream hStream) {
  FAKE_ENTRY(copy(dstDevice, Side::device, host_address(srcHost), Side::host, ByteCount, hStream, kLegacy, false));
}
FAKE_EXPORT CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount,
                                               CUstream hStream) {
  FAKE_ENTRY(copy(dstDevice, Side::device, host_address(srcHost), Side::host, ByteCount, hStream, kPerThread, false));
}
FAKE_EXPORT CUresult cuMemcpyDtoHAsync_v2(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream) {
  FAKE_ENTRY(copy(host_address(dstHost), Side::host, srcDevice, Side::device, ByteCount, hStream, kLegacy, false));
}
FAKE_EXPORT CUresult cuMemcpyDtoHAsync_v2_ptsz(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                                               CUstream hStream) {
  FAKE_ENTRY(copy(host_address(dstHost), Side::host, srcDevice, Side::device, ByteCount, hStream, kPerThread, false));
}
FAKE_EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                                          CUstream hStream) {
  FAKE_ENTRY(copy(dstDevice, Side::device, srcDevice, Side::device, ByteCount, hStream, kLegacy, false));
}
FAKE_EXPORT CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                                               CUstream hStream) {
  FAKE_ENTRY(copy(dstDevice, Side::device, srcDevice, Side::device, ByteCount, hStream, kPerThread, false));
}

FAKE_EXPORT CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N) {
  FAKE_ENTRY(fill(dstDevice, uc, N, nullptr, kLegacy, true));
}
FAKE_EXPORT CUresult cuMemsetD8_v2_ptds(CUdeviceptr dstDevice, unsigned char uc, size_t N) {
  FAKE_ENTRY(fill(dstDevice, uc, N, nullptr, kPerThread, true));
}
FAKE_EXPORT CUresult cuMemsetD16_v2(CUdeviceptr dstDevice, unsigned short us, size_t N) {
  FAKE_ENTRY(fill(dstDevice, us, N, nullptr, kLegacy, true));
}
FAKE_EXPORT CUresult cuMemsetD16_v2_ptds(CUdeviceptr dstDevice, unsigned short us, size_t N) {
  FAKE_ENTRY(fill(dstDevice, us, N, nullptr, kPerThread, true));
}
FAKE_EXPORT CUresult cuMemsetD32_v2(CUdeviceptr dstDevice, unsigned int ui, size_t N) {
  FAKE_ENTRY(fill(dstDevice, ui, N, nullptr, kLegacy, true));
}
FAKE_EXPORT CUresult cuMemsetD32_v2_ptds(CUdeviceptr dstDevice, unsigned int ui, size_t N) {
  FAKE_ENTRY(fill(dstDevice, ui, N, nullptr, kPerThread, true));
}
FAKE_EXPORT CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream) {
  FAKE_ENTRY(fill(dstDevice, uc, N, hStream, kLegacy, false));
}
FAKE_EXPORT CUresult cuMemsetD8Async_ptsz(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream) {
  FAKE_ENTRY(fill(dstDevice, uc, N, hStream, kPerThread, false));
}
FAKE_EXPORT CUresult cuMemsetD16Async(CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream) {
  FAKE_ENTRY(fill(dstDevice, us, N, hStream, kLegacy, false));
}
FAKE_EXPORT CUresult cuMemsetD16Async_ptsz(CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream) {
  FAKE_ENTRY(fill(dstDevice, us, N, hStream, kPerThread, false));
}
FAKE_EXPORT CUresult cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream) {
  FAKE_ENTRY(fill(dstDevice, ui, N, hStream, kLegacy, false));
}
FAKE_EXPORT CUresult cuMemsetD32Async_ptsz(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream) {
  FAKE_ENTRY(fill(dstDevice, ui, N, hStream, kPerThread, false));
}

FAKE_EXPORT CUresult cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  FAKE_ENTRY(pointer_get_attribute(data, attribute, ptr));
}
FAKE_EXPORT CUresult cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute* attributes, void** data,
                                            CUdeviceptr ptr) {
  FAKE_ENTRY(pointer_get_attributes(numAttributes, attributes, data, ptr));
}
