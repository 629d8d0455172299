// The registry of fat binaries, kernels and variables, and the lazy per-context module loading.
#include "registry.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <shared_mutex>
#include <unordered_map>

namespace streampool::runtime {
namespace {

struct Registry {
  std::shared_mutex mutex;
  std::vector<FatBinary*> binaries;
  std::unordered_map<const void*, Kernel*> kernels_by_host;
  std::unordered_map<const void*, Variable*> variables_by_host;
  std::vector<const Kernel*> kernels;  // sorted: validates cudaKernel_t handles
  std::unordered_map<const void*, CUlibrary> library_kernels;  // CUkernel -> the library it came from
};

// Never destroyed: unregistration at exit may run after other static destructors.
Registry& registry() {
  static Registry* const instance = new Registry;
  return *instance;
}

// Bumped by every registration of a kernel and by forget_modules (a reset): a launch cache entry
// made before is stale. Registration happens at program start and when a library is loaded, so
// in steady state the generation does not move.
std::atomic<unsigned> g_generation{1};

// The per-thread launch cache: direct-mapped by the key's address. Kernels are never freed, so an
// entry of the current generation can be trusted without going back to the registry.
struct LaunchCacheEntry {
  const void* key;
  CUcontext context;
  CUfunction function;
  unsigned generation;
};
constexpr std::size_t kLaunchCacheEntries = 64;  // a power of two
constinit thread_local LaunchCacheEntry t_launch_cache[kLaunchCacheEntries]{};

LaunchCacheEntry& launch_cache_slot(const void* key) noexcept {
  const auto bits = reinterpret_cast<std::uintptr_t>(key);
  return t_launch_cache[((bits >> 4) ^ (bits >> 12)) & (kLaunchCacheEntries - 1)];
}

CUresult current_context(CUcontext* context) noexcept {
  const CUresult result = cuCtxGetCurrent(context);
  if (result == CUDA_SUCCESS && *context == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  return result;
}

// The binary's module in `context`, loading it on first use (binary->mutex held).
CUresult module_locked(FatBinary* binary, CUcontext context, CUmodule* module, bool* loaded_now) {
  *loaded_now = false;
  for (const auto& [owner, handle] : binary->modules) {
    if (owner == context) {
      *module = handle;
      return CUDA_SUCCESS;
    }
  }
  const CUresult result = cuModuleLoadData(module, binary->image);
  if (result != CUDA_SUCCESS) return result;
  binary->modules.emplace_back(context, *module);
  *loaded_now = true;
  return CUDA_SUCCESS;
}

CUresult point_managed_variables(FatBinary* binary, CUmodule module) {
  for (Variable* variable : binary->managed) {
    CUdeviceptr address = 0;
    std::size_t bytes = 0;
    const CUresult result = cuModuleGetGlobal(&address, &bytes, module, variable->name.c_str());
    if (result != CUDA_SUCCESS) return result;
    *variable->managed_host_pointer = reinterpret_cast<void*>(address);
  }
  return CUDA_SUCCESS;
}

CUresult module_of(FatBinary* binary, CUmodule* module) {
  CUcontext context = nullptr;
  CUresult result = current_context(&context);
  if (result != CUDA_SUCCESS) return result;
  std::lock_guard lock(binary->mutex);
  bool loaded_now = false;
  result = module_locked(binary, context, module, &loaded_now);
  if (result == CUDA_SUCCESS && loaded_now) result = point_managed_variables(binary, *module);
  return result;
}

// A module image the device cannot run is cudart's cudaErrorNoKernelImageForDevice / InvalidDeviceFunction.
cudaError_t load_error(CUresult result) noexcept {
  if (result == CUDA_ERROR_NO_BINARY_FOR_GPU || result == CUDA_ERROR_INVALID_IMAGE) {
    return cudaErrorNoKernelImageForDevice;
  }
  if (result == CUDA_ERROR_NOT_FOUND) return cudaErrorInvalidDeviceFunction;
  return to_runtime_error(result);
}

}  // namespace

FatBinary* register_fat_binary(const void* image) {
  auto* binary = new FatBinary;
  binary->image = image;
  Registry& reg = registry();
  std::unique_lock lock(reg.mutex);
  reg.binaries.push_back(binary);
  return binary;
}

void register_kernel(FatBinary* binary, const void* host_function, const char* name) {
  auto* kernel = new Kernel;
  kernel->binary = binary;
  kernel->host_function = host_function;
  kernel->name = name;
  Registry& reg = registry();
  std::unique_lock lock(reg.mutex);
  reg.kernels_by_host[host_function] = kernel;
  reg.kernels.insert(std::upper_bound(reg.kernels.begin(), reg.kernels.end(), kernel), kernel);
  g_generation.fetch_add(1, std::memory_order_acq_rel);  // a host stub may now name another kernel
}

void register_variable(FatBinary* binary, const void* host_variable, const char* name, std::size_t size,
                       void** managed_host_pointer) {
  auto* variable = new Variable;
  variable->binary = binary;
  variable->name = name;
  variable->size = size;
  variable->managed_host_pointer = managed_host_pointer;
  Registry& reg = registry();
  std::unique_lock lock(reg.mutex);
  reg.variables_by_host[host_variable] = variable;
  if (managed_host_pointer != nullptr) {
    std::lock_guard binary_lock(binary->mutex);
    binary->managed.push_back(variable);
  }
}

void unregister_fat_binary(FatBinary* binary) noexcept {
  // At exit: the driver may be gone already, so modules are left to the process's end. The
  // kernels stay findable (another atexit handler may still launch), so nothing is freed.
  (void)binary;
}

Kernel* find_kernel(const void* function) noexcept {
  if (function == nullptr) return nullptr;
  Registry& reg = registry();
  std::shared_lock lock(reg.mutex);
  const auto found = reg.kernels_by_host.find(function);
  if (found != reg.kernels_by_host.end()) return found->second;
  const auto* handle = static_cast<const Kernel*>(function);
  if (std::binary_search(reg.kernels.begin(), reg.kernels.end(), handle)) return const_cast<Kernel*>(handle);
  return nullptr;
}

const void* host_function_of(CUfunction function) noexcept {
  if (function == nullptr) return nullptr;
  Registry& reg = registry();
  std::shared_lock lock(reg.mutex);
  for (const auto& [host, kernel] : reg.kernels_by_host) {
    std::lock_guard kernel_lock(kernel->mutex);
    for (const auto& [owner, handle] : kernel->functions) {
      if (handle == function) return host;
    }
  }
  return nullptr;
}

cudaError_t kernel_function(Kernel* kernel, CUfunction* function) noexcept {
  try {
    CUcontext context = nullptr;
    CUresult result = current_context(&context);
    if (result != CUDA_SUCCESS) return to_runtime_error(result);
    {
      std::lock_guard lock(kernel->mutex);
      for (const auto& [owner, handle] : kernel->functions) {
        if (owner == context) {
          *function = handle;
          return cudaSuccess;
        }
      }
    }
    CUmodule module = nullptr;
    result = module_of(kernel->binary, &module);
    if (result != CUDA_SUCCESS) return load_error(result);
    result = cuModuleGetFunction(function, module, kernel->name.c_str());
    if (result != CUDA_SUCCESS) return load_error(result);
    std::lock_guard lock(kernel->mutex);
    kernel->functions.emplace_back(context, *function);
    return cudaSuccess;
  } catch (...) {
    return cudaErrorMemoryAllocation;
  }
}

void register_library_kernels(CUlibrary library, const CUkernel* kernels, std::size_t count) noexcept {
  try {
    Registry& reg = registry();
    std::unique_lock lock(reg.mutex);
    for (std::size_t i = 0; i < count; ++i) {
      if (kernels[i] != nullptr) reg.library_kernels[kernels[i]] = library;
    }
  } catch (...) {
    // Out of memory: the kernel stays unknown to launches, which then answer kUnknownKernel.
  }
}

void forget_library(CUlibrary library) noexcept {
  Registry& reg = registry();
  {
    std::unique_lock lock(reg.mutex);
    std::erase_if(reg.library_kernels, [library](const auto& entry) { return entry.second == library; });
  }
  g_generation.fetch_add(1, std::memory_order_acq_rel);  // a cached function of the library is gone
}

bool is_library_kernel(const void* key) noexcept {
  if (key == nullptr) return false;
  Registry& reg = registry();
  std::shared_lock lock(reg.mutex);
  return reg.library_kernels.contains(key);
}

cudaError_t resolve_function(const void* key, CUfunction* function) noexcept {
  Kernel* kernel = find_kernel(key);
  if (kernel == nullptr && !is_library_kernel(key)) return kUnknownKernel;
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return error;
  if (kernel != nullptr) return kernel_function(kernel, function);
  const CUresult result = cuKernelGetFunction(function, static_cast<CUkernel>(const_cast<void*>(key)));
  return result == CUDA_SUCCESS ? cudaSuccess : to_runtime_error(result);
}

cudaError_t launch_function(const void* key, CUfunction* function) noexcept {
  CUcontext context = nullptr;
  if (context_ready() && cuCtxGetCurrent(&context) == CUDA_SUCCESS && context != nullptr) [[likely]] {
    const unsigned generation = g_generation.load(std::memory_order_acquire);
    const LaunchCacheEntry& entry = launch_cache_slot(key);
    if (entry.key == key && entry.context == context && entry.generation == generation) [[likely]] {
      *function = entry.function;
      return sticky_error(current_device());
    }
  }
  // The first launch of this kernel by this thread in this context, or the context is not ready yet.
  const unsigned generation = g_generation.load(std::memory_order_acquire);
  if (const cudaError_t error = resolve_function(key, function); error != cudaSuccess) return error;
  if (cuCtxGetCurrent(&context) == CUDA_SUCCESS && context != nullptr) {
    launch_cache_slot(key) = LaunchCacheEntry{key, context, *function, generation};
  }
  return cudaSuccess;
}

cudaError_t variable_address(const void* symbol, CUdeviceptr* address, std::size_t* size) noexcept {
  try {
    Variable* variable = nullptr;
    {
      Registry& reg = registry();
      std::shared_lock lock(reg.mutex);
      const auto found = reg.variables_by_host.find(symbol);
      if (found != reg.variables_by_host.end()) variable = found->second;
    }
    if (variable == nullptr) return cudaErrorInvalidSymbol;
    CUmodule module = nullptr;
    CUresult result = module_of(variable->binary, &module);
    if (result != CUDA_SUCCESS) return load_error(result);
    std::size_t bytes = 0;
    result = cuModuleGetGlobal(address, &bytes, module, variable->name.c_str());
    if (result != CUDA_SUCCESS) return result == CUDA_ERROR_NOT_FOUND ? cudaErrorInvalidSymbol : to_runtime_error(result);
    *size = variable->size;
    return cudaSuccess;
  } catch (...) {
    return cudaErrorMemoryAllocation;
  }
}

cudaError_t load_in_current_context(FatBinary* binary) noexcept {
  try {
    CUmodule module = nullptr;
    const CUresult result = module_of(binary, &module);
    return result == CUDA_SUCCESS ? cudaSuccess : load_error(result);
  } catch (...) {
    return cudaErrorMemoryAllocation;
  }
}

void forget_modules(CUcontext context) noexcept {
  try {
    Registry& reg = registry();
    std::shared_lock lock(reg.mutex);
    for (FatBinary* binary : reg.binaries) {
      std::lock_guard binary_lock(binary->mutex);
      std::erase_if(binary->modules, [&](const auto& entry) { return entry.first == context; });
    }
    for (const Kernel* handle : reg.kernels) {
      auto* kernel = const_cast<Kernel*>(handle);
      std::lock_guard kernel_lock(kernel->mutex);
      std::erase_if(kernel->functions, [&](const auto& entry) { return entry.first == context; });
    }
  } catch (...) {
  }
  // After the erasure: a launch that read the old generation cannot keep what it found.
  g_generation.fetch_add(1, std::memory_order_acq_rel);  // every thread's launch cache is stale
}

}  // namespace streampool::runtime
