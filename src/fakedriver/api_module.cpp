// Entry points: modules and kernel launches, for programs built with nvcc over a runtime (NVIDIA's
// cudart or streampool's). Any image loads; functions and globals are handed out by the name asked
// for (a global is a zeroed host buffer of kGlobalBytes); launches are recorded, not executed:
// function name, grid, block, dynamic shared memory, stream and the arguments' bytes, queryable by
// tests through streampool_fake_launch_count / streampool_fake_launch_at /
// streampool_fake_launch_arguments. Arguments passed as kernelParams are copied by the parameter
// layout the module's cubin gives (kernel_params.hpp); those passed in `extra`
// (CU_LAUNCH_PARAM_BUFFER_POINTER / _SIZE) as the buffer they are. A launch on a capturing stream
// becomes a kernel node of the capture's graph instead (recorded, without arguments, when the
// graph is launched).
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
#include "driver.hpp"
#include "graph.hpp"
#include "kernel_params.hpp"
#include "launch_record.hpp"
#include "stream.hpp"
#include "stream_ops.hpp"

namespace fake {
namespace {

constexpr std::size_t kGlobalBytes = 64 * 1024;

struct Function {
  std::string name;
  bool parameters_known = false;
  std::vector<ParameterSlot> parameters;  // by ordinal, where known
};

struct Module {
  ParameterLayouts layouts;
  std::map<std::string, std::unique_ptr<Function>> functions;
  std::map<std::string, std::unique_ptr<std::array<unsigned char, kGlobalBytes>>> globals;
};

struct Launch {
  std::string name;
  unsigned grid[3];
  unsigned block[3];
  unsigned shared_bytes;
  CUstream stream;
  bool arguments_recorded = false;
  std::vector<unsigned char> arguments;  // the kernel's parameter buffer, as the launch filled it
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
  auto loaded = std::make_unique<Module>();
  loaded->layouts = parameter_layouts(image);
  std::lock_guard lock(state().mutex);
  state().modules.push_back(std::move(loaded));
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
  if (!slot) {
    slot = std::make_unique<Function>(Function{name, false, {}});
    if (auto layout = module->layouts.find(name); layout != module->layouts.end()) {
      slot->parameters_known = true;
      slot->parameters = layout->second;
    }
  }
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

// The parameter buffer of a launch given `extra` (CU_LAUNCH_PARAM_BUFFER_POINTER and _SIZE pairs up
// to CU_LAUNCH_PARAM_END); false when it names no buffer.
bool arguments_from_extra(void** extra, std::vector<unsigned char>& out) {
  const void* buffer = nullptr;
  const std::size_t* size = nullptr;
  for (std::size_t at = 0; extra[at] != CU_LAUNCH_PARAM_END; at += 2) {
    if (extra[at] == CU_LAUNCH_PARAM_BUFFER_POINTER) buffer = extra[at + 1];
    if (extra[at] == CU_LAUNCH_PARAM_BUFFER_SIZE) size = static_cast<const std::size_t*>(extra[at + 1]);
  }
  if (buffer == nullptr || size == nullptr) return false;
  const auto* bytes = static_cast<const unsigned char*>(buffer);
  out.assign(bytes, bytes + *size);
  return true;
}

// The parameter buffer of a launch given kernelParams (one pointer per parameter, by ordinal), laid
// out as the function's cubin says; false when the layout is not known.
bool arguments_from_params(const Function& function, void** params, std::vector<unsigned char>& out) {
  if (!function.parameters_known) return false;
  std::size_t bytes = 0;
  for (const ParameterSlot& slot : function.parameters) bytes = std::max<std::size_t>(bytes, slot.offset + slot.size);
  out.assign(bytes, 0);
  if (bytes != 0 && params == nullptr) return false;
  for (std::size_t ordinal = 0; ordinal < function.parameters.size(); ++ordinal) {
    const ParameterSlot& slot = function.parameters[ordinal];
    if (slot.size != 0) std::memcpy(out.data() + slot.offset, params[ordinal], slot.size);
  }
  return true;
}

CUresult launch(CUfunction handle, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                unsigned shared, CUstream stream, void** params, void** extra) {
  if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0) return CUDA_ERROR_INVALID_VALUE;
  if (static_cast<unsigned long long>(bx) * by * bz > 1024) return CUDA_ERROR_INVALID_VALUE;
  if (params != nullptr && extra != nullptr) return CUDA_ERROR_INVALID_VALUE;  // cuda.h: one or the other
  const unsigned grid[3] = {gx, gy, gz};
  const unsigned block[3] = {bx, by, bz};
  std::shared_ptr<Stream> resolved;
  if (CUresult status = resolve_stream(stream, DefaultStream::legacy, resolved); status != CUDA_SUCCESS) return status;
  // On a capturing stream the launch becomes a kernel node of the capture's graph: it is recorded
  // each time the graph is launched, not now.
  if (capturing(resolved)) {
    {
      std::lock_guard lock(state().mutex);
      if (!known_function(handle)) return CUDA_ERROR_INVALID_HANDLE;
    }
    GraphNode node;
    node.kind = GraphNodeKind::kernel;
    node.type = CU_GRAPH_NODE_TYPE_KERNEL;
    node.function = handle;
    std::copy(grid, grid + 3, node.grid);
    std::copy(block, block + 3, node.block);
    node.shared_bytes = shared;
    const CUgraph graph = resolved->capture().graph;
    return add_graph_node(graph, nullptr, 0, std::move(node)) != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  }
  std::lock_guard lock(state().mutex);
  if (!known_function(handle)) return CUDA_ERROR_INVALID_HANDLE;
  const auto* function = reinterpret_cast<const Function*>(handle);
  Launch record{function->name, {gx, gy, gz}, {bx, by, bz}, shared, stream, false, {}};
  record.arguments_recorded = extra != nullptr ? arguments_from_extra(extra, record.arguments)
                                               : arguments_from_params(*function, params, record.arguments);
  if (!record.arguments_recorded) record.arguments.clear();
  state().launches.push_back(std::move(record));
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

bool is_function(CUfunction function) {
  std::lock_guard lock(state().mutex);
  return known_function(function);
}

CUresult record_launch(CUfunction function, const unsigned grid[3], const unsigned block[3], unsigned shared_bytes,
                       CUstream stream) {
  std::lock_guard lock(state().mutex);
  if (!known_function(function)) return CUDA_ERROR_INVALID_HANDLE;
  const auto* recorded = reinterpret_cast<const Function*>(function);
  state().launches.push_back(
      Launch{recorded->name, {grid[0], grid[1], grid[2]}, {block[0], block[1], block[2]}, shared_bytes, stream, false, {}});
  return CUDA_SUCCESS;
}

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
  FAKE_ENTRY(fake::launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream,
                          kernelParams, extra));
}
FAKE_EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                               unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                                               unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                                               void** kernelParams) {
  FAKE_ENTRY(fake::launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream,
                          kernelParams, nullptr));
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

// Copies launch `index`'s parameter buffer (at most buffer_bytes of it) and stores its full size in
// *argument_bytes; returns 0, or -1 when there is no such launch or its arguments were not recorded
// (no parameter layout known for its function).
FAKE_EXPORT int streampool_fake_launch_arguments(unsigned long long index, void* buffer, unsigned long long buffer_bytes,
                                                 unsigned long long* argument_bytes) {
  std::lock_guard lock(fake::state().mutex);
  const auto& launches = fake::state().launches;
  if (index >= launches.size() || !launches[index].arguments_recorded) return -1;
  const auto& arguments = launches[index].arguments;
  if (argument_bytes != nullptr) *argument_bytes = arguments.size();
  if (buffer != nullptr && !arguments.empty()) {
    std::memcpy(buffer, arguments.data(), std::min<std::size_t>(arguments.size(), buffer_bytes));
  }
  return 0;
}

FAKE_EXPORT void streampool_fake_launch_reset() {
  std::lock_guard lock(fake::state().mutex);
  fake::state().launches.clear();
}
