// Driver entry points (streampool's hooks for the allocator family: the routing of libstreampool.so's
// cuGetProcAddress, linked in), pointer attributes and IPC.
#include <cstring>

#include "api.hpp"

extern "C" {
cudaError_t cudaGetDriverEntryPoint_ptsz(const char* symbol, void** funcPtr, unsigned long long flags,
                                         cudaDriverEntryPointQueryResult* driverStatus);
cudaError_t cudaGetDriverEntryPointByVersion_ptsz(const char* symbol, void** funcPtr, unsigned int cudaVersion,
                                                  unsigned long long flags,
                                                  cudaDriverEntryPointQueryResult* driverStatus);
}

namespace streampool::runtime {
namespace {

static_assert(static_cast<int>(cudaEnableLegacyStream) == static_cast<int>(CU_GET_PROC_ADDRESS_LEGACY_STREAM) &&
              static_cast<int>(cudaEnablePerThreadDefaultStream) ==
                  static_cast<int>(CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM));

// The per-thread forms (what a program built with --default-stream per-thread calls) answer the
// per-thread variants (cuMemcpyAsync_ptsz ...) for the default search, as that program's own calls
// would be; an explicit legacy or per-thread flag is kept.
unsigned long long per_thread_flags(unsigned long long flags) noexcept {
  return flags == cudaEnableDefault ? static_cast<unsigned long long>(cudaEnablePerThreadDefaultStream) : flags;
}

cudaError_t entry_point(const char* symbol, void** function, int version, unsigned long long flags,
                        cudaDriverEntryPointQueryResult* status) noexcept {
  if (symbol == nullptr || function == nullptr) return finish(cudaErrorInvalidValue);
  int count = 0;
  if (const cudaError_t error = cudaGetDeviceCount(&count); error != cudaSuccess && error != cudaErrorNoDevice) {
    return error;
  }
  CUdriverProcAddressQueryResult driver_status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  const CUresult result = cuGetProcAddress_v2(symbol, function, version, flags, &driver_status);
  if (status != nullptr) *status = static_cast<cudaDriverEntryPointQueryResult>(driver_status);
  // A symbol that is not there is an answer (in *status), not a failure, as in cudart.
  if (result == CUDA_ERROR_NOT_FOUND && status != nullptr) return cudaSuccess;
  return finish(result);
}

}  // namespace
}  // namespace streampool::runtime

using namespace streampool::runtime;

CUDART_EXPORT cudaError_t cudaGetDriverEntryPoint(const char* symbol, void** funcPtr, unsigned long long flags,
                                                  cudaDriverEntryPointQueryResult* driverStatus) {
  return entry_point(symbol, funcPtr, CUDART_VERSION, flags, driverStatus);
}

CUDART_EXPORT cudaError_t cudaGetDriverEntryPointByVersion(const char* symbol, void** funcPtr, unsigned int cudaVersion,
                                                           unsigned long long flags,
                                                           cudaDriverEntryPointQueryResult* driverStatus) {
  return entry_point(symbol, funcPtr, static_cast<int>(cudaVersion), flags, driverStatus);
}

CUDART_EXPORT cudaError_t cudaGetDriverEntryPoint_ptsz(const char* symbol, void** funcPtr, unsigned long long flags,
                                                       cudaDriverEntryPointQueryResult* driverStatus) {
  return entry_point(symbol, funcPtr, CUDART_VERSION, per_thread_flags(flags), driverStatus);
}

CUDART_EXPORT cudaError_t cudaGetDriverEntryPointByVersion_ptsz(const char* symbol, void** funcPtr,
                                                                unsigned int cudaVersion, unsigned long long flags,
                                                                cudaDriverEntryPointQueryResult* driverStatus) {
  return entry_point(symbol, funcPtr, static_cast<int>(cudaVersion), per_thread_flags(flags), driverStatus);
}

CUDART_EXPORT cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attributes, const void* ptr) {
  if (attributes == nullptr) return finish(cudaErrorInvalidValue);
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  CUmemorytype memory_type = static_cast<CUmemorytype>(0);
  CUdeviceptr device_pointer = 0;
  void* host_pointer = nullptr;
  int ordinal = -1;
  unsigned int managed = 0;
  CUpointer_attribute asked[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
                                 CU_POINTER_ATTRIBUTE_HOST_POINTER, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                 CU_POINTER_ATTRIBUTE_IS_MANAGED};
  void* answers[] = {&memory_type, &device_pointer, &host_pointer, &ordinal, &managed};
  const CUresult result = cuPointerGetAttributes(5, asked, answers, reinterpret_cast<CUdeviceptr>(ptr));
  std::memset(attributes, 0, sizeof(*attributes));
  if (result != CUDA_SUCCESS || memory_type == 0) {
    // Memory the driver does not know: unregistered host memory, not an error since CUDA 11.
    if (result != CUDA_SUCCESS && result != CUDA_ERROR_INVALID_VALUE) return finish(result);
    attributes->type = cudaMemoryTypeUnregistered;
    attributes->device = -2;
    attributes->hostPointer = const_cast<void*>(ptr);
    return cudaSuccess;
  }
  attributes->type = managed != 0 ? cudaMemoryTypeManaged
                                  : (memory_type == CU_MEMORYTYPE_HOST ? cudaMemoryTypeHost : cudaMemoryTypeDevice);
  attributes->device = ordinal;
  attributes->devicePointer = reinterpret_cast<void*>(device_pointer);
  attributes->hostPointer = host_pointer;
  return cudaSuccess;
}

CUDART_EXPORT cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t* handle, void* devPtr) {
  if (handle == nullptr) return finish(cudaErrorInvalidValue);
  static_assert(sizeof(cudaIpcMemHandle_t) == sizeof(CUipcMemHandle));
  STREAMPOOL_WITH_CONTEXT(cuIpcGetMemHandle(reinterpret_cast<CUipcMemHandle*>(handle), reinterpret_cast<CUdeviceptr>(devPtr)));
}

CUDART_EXPORT cudaError_t cudaIpcOpenMemHandle(void** devPtr, cudaIpcMemHandle_t handle, unsigned int flags) {
  if (devPtr == nullptr) return finish(cudaErrorInvalidValue);
  CUipcMemHandle driver_handle;
  std::memcpy(&driver_handle, &handle, sizeof(driver_handle));
  STREAMPOOL_WITH_CONTEXT(cuIpcOpenMemHandle(reinterpret_cast<CUdeviceptr*>(devPtr), driver_handle, flags));
}

CUDART_EXPORT cudaError_t cudaIpcCloseMemHandle(void* devPtr) {
  STREAMPOOL_WITH_CONTEXT(cuIpcCloseMemHandle(reinterpret_cast<CUdeviceptr>(devPtr)));
}

CUDART_EXPORT cudaError_t cudaIpcGetEventHandle(cudaIpcEventHandle_t* handle, cudaEvent_t event) {
  if (handle == nullptr) return finish(cudaErrorInvalidValue);
  static_assert(sizeof(cudaIpcEventHandle_t) == sizeof(CUipcEventHandle));
  STREAMPOOL_WITH_CONTEXT(cuIpcGetEventHandle(reinterpret_cast<CUipcEventHandle*>(handle), event));
}

CUDART_EXPORT cudaError_t cudaIpcOpenEventHandle(cudaEvent_t* event, cudaIpcEventHandle_t handle) {
  if (event == nullptr) return finish(cudaErrorInvalidValue);
  CUipcEventHandle driver_handle;
  std::memcpy(&driver_handle, &handle, sizeof(driver_handle));
  STREAMPOOL_WITH_CONTEXT(cuIpcOpenEventHandle(event, driver_handle));
}
