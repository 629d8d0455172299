// Device questions and settings beyond the attributes (properties.cpp): shared-memory bank
// configuration (of the context and of a kernel), the widest 1D linear texture of a format, which
// atomic operations work to the host and between peers, flushing GPUDirect RDMA writes,
// notifications the driver sends (over budget), NvSciSync attributes. Each is the driver's call on
// the device's handle; a device that is none is cudaErrorInvalidDevice.
#include "api.hpp"
#include "channel_format.hpp"
#include "registry.hpp"

namespace streampool::runtime {
namespace {

static_assert(static_cast<int>(cudaSharedMemBankSizeEightByte) ==
              static_cast<int>(CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE));
static_assert(static_cast<int>(cudaAtomicOperationOr) == static_cast<int>(CU_ATOMIC_OPERATION_OR) &&
              sizeof(cudaAtomicOperation) == sizeof(CUatomicOperation));
static_assert(static_cast<int>(cudaFlushGPUDirectRDMAWritesTargetCurrentDevice) ==
                  static_cast<int>(CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX) &&
              static_cast<int>(cudaFlushGPUDirectRDMAWritesToAllDevices) ==
                  static_cast<int>(CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_ALL_DEVICES));
static_assert(sizeof(cudaAsyncNotificationInfo_t) == sizeof(CUasyncNotificationInfo) &&
              static_cast<int>(cudaAsyncNotificationTypeOverBudget) ==
                  static_cast<int>(CU_ASYNC_NOTIFICATION_TYPE_OVER_BUDGET));
static_assert(cudaNvSciSyncAttrSignal == CUDA_NVSCISYNC_ATTR_SIGNAL && cudaNvSciSyncAttrWait == CUDA_NVSCISYNC_ATTR_WAIT);

// The driver's handle of a runtime device number, or cudaErrorInvalidDevice.
cudaError_t device_handle(int device, CUdevice* handle) noexcept {
  int count = 0;
  if (const CUresult result = cuDeviceGetCount(&count); result != CUDA_SUCCESS) return to_runtime_error(result);
  if (device < 0 || device >= count) return cudaErrorInvalidDevice;
  return cuDeviceGet(handle, device) == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidDevice;
}

const CUatomicOperation* driver_operations(const cudaAtomicOperation* operations) noexcept {
  return reinterpret_cast<const CUatomicOperation*>(operations);
}

}  // namespace
}  // namespace streampool::runtime

using namespace streampool::runtime;

// Bank-size configuration is deprecated in the driver (current GPUs have one bank size), which still
// answers it; the runtime passes it on.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
CUDART_EXPORT cudaError_t cudaDeviceGetSharedMemConfig(cudaSharedMemConfig* pConfig) {
  if (pConfig == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuCtxGetSharedMemConfig(reinterpret_cast<CUsharedconfig*>(pConfig)));
}
CUDART_EXPORT cudaError_t cudaDeviceSetSharedMemConfig(cudaSharedMemConfig config) {
  STREAMPOOL_WITH_CONTEXT(cuCtxSetSharedMemConfig(static_cast<CUsharedconfig>(config)));
}
CUDART_EXPORT cudaError_t cudaFuncSetSharedMemConfig(const void* func, cudaSharedMemConfig config) {
  CUfunction function = nullptr;
  if (const cudaError_t error = resolve_function(func, &function); error != cudaSuccess) return finish(error);
  return finish(cuFuncSetSharedMemConfig(function, static_cast<CUsharedconfig>(config)));
}
#pragma GCC diagnostic pop

CUDART_EXPORT cudaError_t cudaDeviceGetTexture1DLinearMaxWidth(size_t* maxWidthInElements,
                                                               const cudaChannelFormatDesc* fmtDesc, int device) {
  if (maxWidthInElements == nullptr || fmtDesc == nullptr) return finish(cudaErrorInvalidValue);
  DriverFormat format{};
  if (const cudaError_t error = driver_format(*fmtDesc, &format); error != cudaSuccess) return finish(error);
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  CUdevice handle = 0;
  if (const cudaError_t error = device_handle(device, &handle); error != cudaSuccess) return finish(error);
  return finish(cuDeviceGetTexture1DLinearMaxWidth(maxWidthInElements, format.format, format.channels, handle));
}

CUDART_EXPORT cudaError_t cudaDeviceGetHostAtomicCapabilities(unsigned int* capabilities,
                                                              const cudaAtomicOperation* operations,
                                                              unsigned int count, int device) {
  if (count != 0 && (capabilities == nullptr || operations == nullptr)) return finish(cudaErrorInvalidValue);
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  CUdevice handle = 0;
  if (const cudaError_t error = device_handle(device, &handle); error != cudaSuccess) return finish(error);
  return finish(cuDeviceGetHostAtomicCapabilities(capabilities, driver_operations(operations), count, handle));
}

CUDART_EXPORT cudaError_t cudaDeviceGetP2PAtomicCapabilities(unsigned int* capabilities,
                                                             const cudaAtomicOperation* operations,
                                                             unsigned int count, int srcDevice, int dstDevice) {
  if (count != 0 && (capabilities == nullptr || operations == nullptr)) return finish(cudaErrorInvalidValue);
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  CUdevice source = 0;
  CUdevice target = 0;
  if (const cudaError_t error = device_handle(srcDevice, &source); error != cudaSuccess) return finish(error);
  if (const cudaError_t error = device_handle(dstDevice, &target); error != cudaSuccess) return finish(error);
  return finish(cuDeviceGetP2PAtomicCapabilities(capabilities, driver_operations(operations), count, source, target));
}

CUDART_EXPORT cudaError_t cudaDeviceFlushGPUDirectRDMAWrites(cudaFlushGPUDirectRDMAWritesTarget target,
                                                             cudaFlushGPUDirectRDMAWritesScope scope) {
  STREAMPOOL_WITH_CONTEXT(cuFlushGPUDirectRDMAWrites(static_cast<CUflushGPUDirectRDMAWritesTarget>(target),
                                                     static_cast<CUflushGPUDirectRDMAWritesScope>(scope)));
}

// The runtime's callback and notification are the driver's, argument for argument.
CUDART_EXPORT cudaError_t cudaDeviceRegisterAsyncNotification(int device, cudaAsyncCallback callbackFunc,
                                                              void* userData, cudaAsyncCallbackHandle_t* callback) {
  if (callbackFunc == nullptr || callback == nullptr) return finish(cudaErrorInvalidValue);
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  CUdevice handle = 0;
  if (const cudaError_t error = device_handle(device, &handle); error != cudaSuccess) return finish(error);
  return finish(cuDeviceRegisterAsyncNotification(handle, reinterpret_cast<CUasyncCallback>(callbackFunc), userData,
                                                  reinterpret_cast<CUasyncCallbackHandle*>(callback)));
}

CUDART_EXPORT cudaError_t cudaDeviceUnregisterAsyncNotification(int device, cudaAsyncCallbackHandle_t callback) {
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  CUdevice handle = 0;
  if (const cudaError_t error = device_handle(device, &handle); error != cudaSuccess) return finish(error);
  return finish(cuDeviceUnregisterAsyncNotification(handle, reinterpret_cast<CUasyncCallbackHandle>(callback)));
}

CUDART_EXPORT cudaError_t cudaDeviceGetNvSciSyncAttributes(void* nvSciSyncAttrList, int device, int flags) {
  if (nvSciSyncAttrList == nullptr) return finish(cudaErrorInvalidValue);
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  CUdevice handle = 0;
  if (const cudaError_t error = device_handle(device, &handle); error != cudaSuccess) return finish(error);
  return finish(cuDeviceGetNvSciSyncAttributes(nvSciSyncAttrList, handle, flags));
}

// The runtime's own device list for implicit device choice; the driver has nothing like it, and
// streampool's runtime always starts on device 0 (or the one cudaSetDevice names).
CUDART_EXPORT cudaError_t cudaSetValidDevices(int* device_arr, int len) {
  (void)device_arr, (void)len;
  return finish(cudaErrorNotSupported);
}
