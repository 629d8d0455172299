// Entry points: modules and kernel launches, for programs built with nvcc over a runtime (NVIDIA's
// cudart or streampool's). Any image loads; functions and globals are handed out by the name asked
// for (a global is a zeroed host buffer of kGlobalBytes); launches are recorded, not executed:
// function name, grid, block, dynamic shared memory and stream, queryable by tests through
// streampool_fake_launch_count / streampool_fake_launch_at.
#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "api_guard.hpp"

namespace fake {
namespace {

constexpr std::size_t kGlobalBytes = 64 * 1024;

struct Function {
  std::string name;
};

struct Module {
  std::map<std::string, std::unique_ptr<Function>> functions;
  std::map<std::string, std::unique_ptr<std::array<unsigned char, kGlobalBytes>>> globals;
};

struct Launch {
  std::string name;
  unsigned grid[3];
  unsigned block[3];
  unsigned shared_bytes;
  CUstream stream;
};

struct ModuleState {
  std::mutex mutex;
  std::vector<std::unique_ptr<Module>> modules;
  std::vector<Launch> launches;
};

ModuleState& state() {
  static ModuleState* const instance = new ModuleState;  // never destroyed: entry points may run at exit
  return *instance;
}

Module* find_module(CUmodule handle) {
  for (const auto& module : state().modules) {
    if (reinterpret_cast<CUmodule>(module.get()) == handle) return module.get();
  }
  return nullptr;
}

bool known_function(CUfunction handle) {
  for (const auto& module : state().modules) {
    for (const auto& [name, function] : module->functions) {
      if (reinterpret_cast<CUfunction>(function.get()) == handle) return true;
    }
  }
  return false;
}

CUresult load(CUmodule* module, const void* image) {
  if (module == nullptr || image == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(state().mutex);
  state().modules.push_back(std::make_unique<Module>());
  *module = reinterpret_cast<CUmodule>(state().modules.back().get());
  return CUDA_SUCCESS;
}

CUresult unload(CUmodule handle) {
  std::lock_guard lock(state().mutex);
  auto& modules = state().modules;
  for (auto it = modules.begin(); it != modules.end(); ++it) {
    if (reinterpret_cast<CUmodule>(it->get()) == handle) {
      modules.erase(it);
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_INVALID_HANDLE;
}

CUresult get_function(CUfunction* out, CUmodule handle, const char* name) {
  if (out == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(state().mutex);
  Module* module = find_module(handle);
  if (module == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  auto& slot = module->functions[name];
  if (!slot) slot = std::make_unique<Function>(Function{name});
  *out = reinterpret_cast<CUfunction>(slot.get());
  return CUDA_SUCCESS;
}

CUresult get_global(CUdeviceptr* address, std::size_t* bytes, CUmodule handle, const char* name) {
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(state().mutex);
  Module* module = find_module(handle);
  if (module == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  auto& slot = module->globals[name];
  if (!slot) slot = std::make_unique<std::array<unsigned char, kGlobalBytes>>();
  if (address != nullptr) *address = reinterpret_cast<CUdeviceptr>(slot->data());
  if (bytes != nullptr) *bytes = kGlobalBytes;
  return CUDA_SUCCESS;
}

CUresult launch(CUfunction handle, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                unsigned shared, CUstream stream) {
  if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0) return CUDA_ERROR_INVALID_VALUE;
  if (static_cast<unsigned long long>(bx) * by * bz > 1024) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(state().mutex);
  if (!known_function(handle)) return CUDA_ERROR_INVALID_HANDLE;
  const auto* function = reinterpret_cast<const Function*>(handle);
  state().launches.push_back(Launch{function->name, {gx, gy, gz}, {bx, by, bz}, shared, stream});
  return CUDA_SUCCESS;
}

CUresult function_attribute(int* value, CUfunction_attribute attribute, CUfunction handle) {
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  {
    std::lock_guard lock(state().mutex);
    if (!known_function(handle)) return CUDA_ERROR_INVALID_HANDLE;
  }
  switch (attribute) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = 1024; break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION:
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *value = 90; break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *value = 48 * 1024; break;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: *value = -1; break;
    default: *value = 0; break;
  }
  return CUDA_SUCCESS;
}

// CUDA_MODULE_LOADING=EAGER asks the driver to load every function of a module with it; anything
// else (or nothing) is lazy loading, the default since CUDA 12.2. The fake loads nothing either
// way, but a runtime asks (NVIDIA's cudart 13 at start) to decide when to load its modules.
CUresult loading_mode(CUmoduleLoadingMode* mode) {
  if (mode == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const char* setting = std::getenv("CUDA_MODULE_LOADING");
  *mode = setting != nullptr && std::strcmp(setting, "EAGER") == 0 ? CU_MODULE_EAGER_LOADING : CU_MODULE_LAZY_LOADING;
  return CUDA_SUCCESS;
}

}  // namespace
}  // namespace fake

FAKE_EXPORT CUresult cuModuleGetLoadingMode(CUmoduleLoadingMode* mode) { FAKE_ENTRY(fake::loading_mode(mode)); }
FAKE_EXPORT CUresult cuModuleLoadData(CUmodule* module, const void* image) { FAKE_ENTRY(fake::load(module, image)); }
FAKE_EXPORT CUresult cuModuleLoadFatBinary(CUmodule* module, const void* fatCubin) {
  FAKE_ENTRY(fake::load(module, fatCubin));
}
FAKE_EXPORT CUresult cuModuleUnload(CUmodule hmod) { FAKE_ENTRY(fake::unload(hmod)); }
FAKE_EXPORT CUresult cuModuleGetFunction(CUfunction* hfunc, CUmodule hmod, const char* name) {
  FAKE_ENTRY(fake::get_function(hfunc, hmod, name));
}
FAKE_EXPORT CUresult cuModuleGetGlobal_v2(CUdeviceptr* dptr, size_t* bytes, CUmodule hmod, const char* name) {
  FAKE_ENTRY(fake::get_global(dptr, bytes, hmod, name));
}
FAKE_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                                    unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                                    unsigned int sharedMemBytes, CUstream hStream, void** kernelParams, void** extra) {
  (void)kernelParams, (void)extra;
  FAKE_ENTRY(fake::launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream));
}
FAKE_EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                               unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                                               unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                                               void** kernelParams) {
  (void)kernelParams;
  FAKE_ENTRY(fake::launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream));
}
FAKE_EXPORT CUresult cuFuncGetAttribute(int* pi, CUfunction_attribute attrib, CUfunction hfunc) {
  FAKE_ENTRY(fake::function_attribute(pi, attrib, hfunc));
}

// Test hooks: the launches recorded so far, oldest first.
FAKE_EXPORT unsigned long long streampool_fake_launch_count() {
  std::lock_guard lock(fake::state().mutex);
  return fake::state().launches.size();
}

// Copies launch `index`'s function name (NUL-terminated, truncated to name_bytes) and its grid and
// block; returns 0, or -1 when there is no such launch.
FAKE_EXPORT int streampool_fake_launch_at(unsigned long long index, char* name, unsigned long long name_bytes,
                                          unsigned int grid[3], unsigned int block[3]) {
  std::lock_guard lock(fake::state().mutex);
  const auto& launches = fake::state().launches;
  if (index >= launches.size()) return -1;
  const fake::Launch& launch = launches[index];
  if (name != nullptr && name_bytes > 0) {
    const std::size_t length = std::min<std::size_t>(launch.name.size(), name_bytes - 1);
    std::memcpy(name, launch.name.data(), length);
    name[length] = '\0';
  }
  for (int axis = 0; axis < 3; ++axis) {
    if (grid != nullptr) grid[axis] = launch.grid[axis];
    if (block != nullptr) block[axis] = launch.block[axis];
  }
  return 0;
}

FAKE_EXPORT void streampool_fake_launch_reset() {
  std::lock_guard lock(fake::state().mutex);
  fake::state().launches.clear();
}
