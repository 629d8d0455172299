// Devices and lazy primary-context initialisation, as cudart does it: nothing happens until the
// first call that needs a context; then the current device's primary context is retained (once per
// process) and made current on the calling thread. A thread that made a context current through the
// driver API keeps it: the runtime works in whatever context is current.
#include <atomic>
#include <cstring>
#include <mutex>

#include "api.hpp"
#include "registry.hpp"

namespace streampool::runtime {

// Bumped by every reset: threads that found their context ready before look again (api.hpp).
std::atomic<unsigned> detail::g_epoch{1};
constinit thread_local unsigned detail::t_ready_epoch __attribute__((tls_model("initial-exec"))) = 0;

namespace {

constexpr int kMaxDevices = 64;

struct PrimaryContext {
  std::mutex mutex;
  CUcontext handle = nullptr;  // stays known after a reset: the driver keeps the handle of a device's primary
  bool active = false;         // retained by us and not reset since
};

PrimaryContext g_primary[kMaxDevices];
constinit thread_local int t_device = 0;
// The context this thread's ready state was found with, and whether it is t_device's primary
// context made current by the runtime: cudaGetDevice and cudaSetDevice of the same device answer
// from these after one cuCtxGetCurrent (the program may switch contexts through the driver API).
constinit thread_local CUcontext t_context = nullptr;
constinit thread_local bool t_context_is_primary = false;
// The number of devices, once the driver answered it (it does not change in a process).
std::atomic<int> g_device_count{0};

CUresult init_driver() noexcept {
  static const CUresult result = cuInit(0);
  return result;
}

cudaError_t device_count(int* count) noexcept {
  *count = g_device_count.load(std::memory_order_acquire);
  if (*count > 0) [[likely]] return cudaSuccess;
  const CUresult init = init_driver();
  if (init != CUDA_SUCCESS) return to_runtime_error(init);
  const CUresult result = cuDeviceGetCount(count);
  if (result != CUDA_SUCCESS) return to_runtime_error(result);
  if (*count <= 0) return cudaErrorNoDevice;
  g_device_count.store(*count, std::memory_order_release);
  return cudaSuccess;
}

cudaError_t check_device(int device) noexcept {
  int count = 0;
  const cudaError_t error = device_count(&count);
  if (error != cudaSuccess) return error;
  return device >= 0 && device < count && device < kMaxDevices ? cudaSuccess : cudaErrorInvalidDevice;
}

// Retains `device`'s primary context if this process has not (or a reset dropped it).
cudaError_t activate_primary(int device, CUcontext* context) noexcept {
  PrimaryContext& primary = g_primary[device];
  std::lock_guard lock(primary.mutex);
  if (!primary.active) {
    CUdevice handle = 0;
    CUresult result = cuDeviceGet(&handle, device);
    if (result == CUDA_SUCCESS) result = cuDevicePrimaryCtxRetain(&primary.handle, handle);
    if (result != CUDA_SUCCESS) return to_runtime_error(result);
    primary.active = true;
  }
  *context = primary.handle;
  return cudaSuccess;
}

// The device whose primary context `context` is, when it is one we retained and a reset dropped.
int reset_primary_of(CUcontext context) noexcept {
  for (int device = 0; device < kMaxDevices; ++device) {
    PrimaryContext& primary = g_primary[device];
    std::lock_guard lock(primary.mutex);
    if (primary.handle == context) return primary.active ? -1 : device;
  }
  return -1;
}

cudaError_t make_current(int device) noexcept {
  CUcontext context = nullptr;
  cudaError_t error = activate_primary(device, &context);
  if (error != cudaSuccess) return error;
  const CUresult result = cuCtxSetCurrent(context);
  if (result != CUDA_SUCCESS) return to_runtime_error(result);
  t_device = device;
  t_context = context;
  t_context_is_primary = true;
  detail::t_ready_epoch = detail::g_epoch.load(std::memory_order_acquire);
  return cudaSuccess;
}

[[gnu::noinline]] cudaError_t ensure_context_slow() noexcept {
  const CUresult init = init_driver();
  if (init != CUDA_SUCCESS) return to_runtime_error(init);
  CUcontext current = nullptr;
  if (cuCtxGetCurrent(&current) == CUDA_SUCCESS && current != nullptr) {
    const int dropped = reset_primary_of(current);
    if (dropped >= 0) return make_current(dropped);
    CUdevice device = 0;
    if (cuCtxGetDevice(&device) == CUDA_SUCCESS) t_device = device;
    t_context = current;
    t_context_is_primary = false;  // perhaps it is; the slow paths then find out
    detail::t_ready_epoch = detail::g_epoch.load(std::memory_order_acquire);
    return cudaSuccess;
  }
  const cudaError_t valid = check_device(t_device);
  if (valid != cudaSuccess) return valid;
  return make_current(t_device);
}

}  // namespace

cudaError_t ensure_context_checked() noexcept {
  if (!context_ready()) {
    const cudaError_t error = ensure_context_slow();
    if (error != cudaSuccess) return error;
  }
  return sticky_error(t_device);
}

int current_device() noexcept { return t_device; }

cudaError_t primary_context(int device, CUcontext* context) noexcept {
  if (const cudaError_t error = check_device(device); error != cudaSuccess) {
    return error == cudaErrorNoDevice ? error : cudaErrorInvalidDevice;
  }
  return activate_primary(device, context);
}

void forget_context(int device) noexcept {
  if (device < 0 || device >= kMaxDevices) return;
  {
    std::lock_guard lock(g_primary[device].mutex);
    g_primary[device].active = false;
  }
  detail::g_epoch.fetch_add(1, std::memory_order_acq_rel);
}

}  // namespace streampool::runtime

using namespace streampool::runtime;

CUDART_EXPORT cudaError_t cudaGetDeviceCount(int* count) {
  if (count == nullptr) return finish(cudaErrorInvalidValue);
  return finish(device_count(count));
}

CUDART_EXPORT cudaError_t cudaSetDevice(int device) {
  // Already current: libraries (PyTorch's device guards) call this around every operation.
  if (device == t_device && t_context_is_primary && context_ready()) [[likely]] {
    CUcontext current = nullptr;
    if (cuCtxGetCurrent(&current) == CUDA_SUCCESS && current == t_context) return cudaSuccess;
  }
  const cudaError_t valid = check_device(device);
  if (valid != cudaSuccess) return finish(valid == cudaErrorNoDevice ? valid : cudaErrorInvalidDevice);
  return finish(make_current(device));
}

CUDART_EXPORT cudaError_t cudaInitDevice(int device, unsigned int deviceFlags, unsigned int flags) {
  if (flags != 0) return finish(cudaErrorInvalidValue);
  const cudaError_t valid = check_device(device);
  if (valid != cudaSuccess) return finish(valid);
  if (deviceFlags != 0) {
    const CUresult result = cuDevicePrimaryCtxSetFlags(device, deviceFlags & 0x1fU);
    if (result != CUDA_SUCCESS) return finish(result);
  }
  CUcontext context = nullptr;
  return finish(activate_primary(device, &context));
}

CUDART_EXPORT cudaError_t cudaGetDevice(int* device) {
  if (device == nullptr) return finish(cudaErrorInvalidValue);
  CUcontext current = nullptr;
  if (init_driver() == CUDA_SUCCESS && cuCtxGetCurrent(&current) == CUDA_SUCCESS && current != nullptr) {
    if (current == t_context && context_ready()) [[likely]] {
      *device = t_device;
      return cudaSuccess;
    }
    CUdevice handle = 0;
    if (cuCtxGetDevice(&handle) == CUDA_SUCCESS) {
      *device = handle;
      return cudaSuccess;
    }
  }
  *device = t_device;
  return cudaSuccess;
}

CUDART_EXPORT cudaError_t cudaSetDeviceFlags(unsigned int flags) {
  const cudaError_t valid = check_device(t_device);
  if (valid != cudaSuccess) return finish(valid);
  if ((flags & ~0x1fU) != 0) return finish(cudaErrorInvalidValue);
  const CUresult result = cuDevicePrimaryCtxSetFlags(t_device, flags & ~static_cast<unsigned>(cudaDeviceMapHost));
  if (result != CUDA_SUCCESS) return finish(result);
  return finish(ensure_context());
}

CUDART_EXPORT cudaError_t cudaGetDeviceFlags(unsigned int* flags) {
  if (flags == nullptr) return finish(cudaErrorInvalidValue);
  const cudaError_t valid = check_device(t_device);
  if (valid != cudaSuccess) return finish(valid);
  unsigned int context_flags = 0;
  int active = 0;
  const CUresult result = cuDevicePrimaryCtxGetState(t_device, &context_flags, &active);
  if (result != CUDA_SUCCESS) return finish(result);
  *flags = context_flags | cudaDeviceMapHost;  // mapping host memory is always on since CUDA 4
  return cudaSuccess;
}

CUDART_EXPORT cudaError_t cudaDeviceSynchronize() { STREAMPOOL_WITH_CONTEXT(cuCtxSynchronize()); }

CUDART_EXPORT cudaError_t cudaDeviceReset() {
  const cudaError_t valid = check_device(t_device);
  if (valid != cudaSuccess) return finish(valid);
  const int device = t_device;
  CUcontext context = nullptr;
  {
    std::lock_guard lock(g_primary[device].mutex);
    context = g_primary[device].handle;
  }
  if (context != nullptr) forget_modules(context);
  const CUresult result = cuDevicePrimaryCtxReset(device);
  forget_context(device);
  clear_sticky(device);
  return finish(result);
}

CUDART_EXPORT cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (value == nullptr) return finish(cudaErrorInvalidValue);
  const cudaError_t valid = check_device(device);
  if (valid != cudaSuccess) return finish(valid);
  return finish(cuDeviceGetAttribute(value, static_cast<CUdevice_attribute>(attr), device));
}

CUDART_EXPORT cudaError_t cudaDeviceGetLimit(size_t* value, cudaLimit limit) {
  if (value == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuCtxGetLimit(value, static_cast<CUlimit>(limit)));
}

CUDART_EXPORT cudaError_t cudaDeviceSetLimit(cudaLimit limit, size_t value) {
  STREAMPOOL_WITH_CONTEXT(cuCtxSetLimit(static_cast<CUlimit>(limit), value));
}

CUDART_EXPORT cudaError_t cudaDeviceGetCacheConfig(cudaFuncCache* config) {
  if (config == nullptr) return finish(cudaErrorInvalidValue);
  CUfunc_cache cache = CU_FUNC_CACHE_PREFER_NONE;
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  const CUresult result = cuCtxGetCacheConfig(&cache);
  *config = static_cast<cudaFuncCache>(cache);
  return finish(result);
}

CUDART_EXPORT cudaError_t cudaDeviceSetCacheConfig(cudaFuncCache config) {
  STREAMPOOL_WITH_CONTEXT(cuCtxSetCacheConfig(static_cast<CUfunc_cache>(config)));
}

CUDART_EXPORT cudaError_t cudaDeviceGetStreamPriorityRange(int* leastPriority, int* greatestPriority) {
  STREAMPOOL_WITH_CONTEXT(cuCtxGetStreamPriorityRange(leastPriority, greatestPriority));
}

CUDART_EXPORT cudaError_t cudaDeviceCanAccessPeer(int* canAccessPeer, int device, int peerDevice) {
  if (canAccessPeer == nullptr) return finish(cudaErrorInvalidValue);
  if (const cudaError_t error = check_device(device); error != cudaSuccess) return finish(error);
  if (const cudaError_t error = check_device(peerDevice); error != cudaSuccess) return finish(error);
  if (device == peerDevice) {
    *canAccessPeer = 0;
    return cudaSuccess;
  }
  return finish(cuDeviceCanAccessPeer(canAccessPeer, device, peerDevice));
}

CUDART_EXPORT cudaError_t cudaDeviceEnablePeerAccess(int peerDevice, unsigned int flags) {
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  if (const cudaError_t error = check_device(peerDevice); error != cudaSuccess) return finish(error);
  CUcontext peer = nullptr;
  if (const cudaError_t error = activate_primary(peerDevice, &peer); error != cudaSuccess) return finish(error);
  return finish(cuCtxEnablePeerAccess(peer, flags));
}

CUDART_EXPORT cudaError_t cudaDeviceDisablePeerAccess(int peerDevice) {
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  if (const cudaError_t error = check_device(peerDevice); error != cudaSuccess) return finish(error);
  CUcontext peer = nullptr;
  if (const cudaError_t error = activate_primary(peerDevice, &peer); error != cudaSuccess) return finish(error);
  return finish(cuCtxDisablePeerAccess(peer));
}

CUDART_EXPORT cudaError_t cudaDeviceGetPCIBusId(char* pciBusId, int len, int device) {
  if (const cudaError_t error = check_device(device); error != cudaSuccess) return finish(error);
  return finish(cuDeviceGetPCIBusId(pciBusId, len, device));
}

CUDART_EXPORT cudaError_t cudaDeviceGetByPCIBusId(int* device, const char* pciBusId) {
  if (device == nullptr || pciBusId == nullptr) return finish(cudaErrorInvalidValue);
  int count = 0;
  if (const cudaError_t error = device_count(&count); error != cudaSuccess) return finish(error);
  CUdevice handle = 0;
  const CUresult result = cuDeviceGetByPCIBusId(&handle, pciBusId);
  if (result == CUDA_SUCCESS) *device = handle;
  return finish(result);
}

CUDART_EXPORT cudaError_t cudaDeviceGetP2PAttribute(int* value, cudaDeviceP2PAttr attr, int srcDevice, int dstDevice) {
  if (value == nullptr) return finish(cudaErrorInvalidValue);
  if (const cudaError_t error = check_device(srcDevice); error != cudaSuccess) return finish(error);
  if (const cudaError_t error = check_device(dstDevice); error != cudaSuccess) return finish(error);
  return finish(cuDeviceGetP2PAttribute(value, static_cast<CUdevice_P2PAttribute>(attr), srcDevice, dstDevice));
}
