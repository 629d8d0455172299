// Kernel launch as nvcc 13's host code does it: the registration calls its static constructor
// makes, the <<<>>> configuration stack, __cudaGetKernel and cudaLaunchKernel (and the Ex and
// cooperative forms), each in its legacy and per-thread default-stream variant.
#include <cstdint>
#include <cstring>

#include "api.hpp"
#include "registry.hpp"

// nvcc's fat binary wrapper (fatbinary_section.h's __fatBinC_Wrapper_t).
struct FatBinaryWrapper {
  int magic;
  int version;
  const unsigned long long* data;
  void* filename_or_fatbins;
};

// The entry points nvcc's generated code calls; cuda_runtime_api.h does not declare them all.
extern "C" {
void** __cudaRegisterFatBinary(void* fatCubin);
void __cudaRegisterFatBinaryEnd(void** fatCubinHandle);
void __cudaUnregisterFatBinary(void** fatCubinHandle);
void __cudaRegisterFunction(void** fatCubinHandle, const char* hostFun, char* deviceFun, const char* deviceName,
                            int thread_limit, uint3* tid, uint3* bid, dim3* bDim, dim3* gDim, int* wSize);
void __cudaRegisterVar(void** fatCubinHandle, char* hostVar, char* deviceAddress, const char* deviceName, int ext,
                       size_t size, int constant, int global);
void __cudaRegisterManagedVar(void** fatCubinHandle, void** hostVarPtrAddress, char* deviceAddress,
                              const char* deviceName, int ext, size_t size, int constant, int global);
char __cudaInitModule(void** fatCubinHandle);
unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem, void* stream);
cudaError_t __cudaPopCallConfiguration(dim3* gridDim, dim3* blockDim, size_t* sharedMem, void* stream);
cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* function);
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** args, size_t sharedMem,
                               cudaStream_t stream);
cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** args, size_t sharedMem,
                                    cudaStream_t stream);
cudaError_t cudaLaunchKernel_ptsz(const void* func, dim3 gridDim, dim3 blockDim, void** args, size_t sharedMem,
                                  cudaStream_t stream);
cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t* config, const void* func, void** args);
cudaError_t cudaLaunchCooperativeKernel_ptsz(const void* func, dim3 gridDim, dim3 blockDim, void** args,
                                             size_t sharedMem, cudaStream_t stream);
}

namespace streampool::runtime {
namespace {

constexpr int kFatBinaryMagic = 0x466243b1;

static_assert(sizeof(cudaLaunchAttribute) == sizeof(CUlaunchAttribute));
static_assert(static_cast<int>(cudaLaunchAttributeCooperative) == static_cast<int>(CU_LAUNCH_ATTRIBUTE_COOPERATIVE));

struct CallConfiguration {
  dim3 grid;
  dim3 block;
  std::size_t shared_bytes;
  cudaStream_t stream;
};

// <<<>>> pushes, the kernel's stub pops; nested launches from argument evaluation make it a stack.
// A fixed array, not a vector: a thread_local with a destructor costs a guard and a registration on
// every access, and a <<<>>> nested deeper than this in its own arguments is no real program.
constexpr unsigned kMaxNestedConfigurations = 32;
constinit thread_local CallConfiguration t_configurations[kMaxNestedConfigurations]{};
constinit thread_local unsigned t_configuration_depth = 0;

FatBinary* binary_of(void** handle) noexcept { return reinterpret_cast<FatBinary*>(handle); }

cudaError_t launch(const void* key, dim3 grid, dim3 block, void** args, std::size_t shared_bytes, cudaStream_t stream,
                   bool per_thread, bool cooperative) noexcept {
  CUfunction function = nullptr;
  if (const cudaError_t error = launch_function(key, &function); error != cudaSuccess) [[unlikely]] {
    return finish(error);
  }
  const CUstream driver = driver_stream(stream, per_thread);
  const unsigned shared = static_cast<unsigned>(shared_bytes);
  const CUresult result =
      cooperative ? cuLaunchCooperativeKernel(function, grid.x, grid.y, grid.z, block.x, block.y, block.z, shared,
                                              driver, args)
                  : cuLaunchKernel(function, grid.x, grid.y, grid.z, block.x, block.y, block.z, shared, driver, args,
                                   nullptr);
  if (result == CUDA_SUCCESS) [[likely]] return cudaSuccess;
  // A grid or block the device cannot run stays the driver's INVALID_VALUE: NVIDIA's cudart 13
  // answers cudaErrorInvalidValue for both (measured on driver 580), not InvalidConfiguration.
  return finish(result);
}

cudaError_t launch_ex(const cudaLaunchConfig_t* config, const void* func, void** args, bool per_thread) noexcept {
  if (config == nullptr) return finish(cudaErrorInvalidValue);
  CUfunction function = nullptr;
  if (const cudaError_t error = launch_function(func, &function); error != cudaSuccess) return finish(error);
  CUlaunchConfig driver_config{};
  driver_config.gridDimX = config->gridDim.x;
  driver_config.gridDimY = config->gridDim.y;
  driver_config.gridDimZ = config->gridDim.z;
  driver_config.blockDimX = config->blockDim.x;
  driver_config.blockDimY = config->blockDim.y;
  driver_config.blockDimZ = config->blockDim.z;
  driver_config.sharedMemBytes = static_cast<unsigned>(config->dynamicSmemBytes);
  driver_config.hStream = driver_stream(config->stream, per_thread);
  // The runtime's launch attributes are the driver's, value for value and byte for byte.
  driver_config.attrs = reinterpret_cast<CUlaunchAttribute*>(config->attrs);
  driver_config.numAttrs = config->numAttrs;
  return finish(cuLaunchKernelEx(&driver_config, function, args, nullptr));
}

}  // namespace
}  // namespace streampool::runtime

using namespace streampool::runtime;

CUDART_EXPORT void** __cudaRegisterFatBinary(void* fatCubin) {
  const auto* wrapper = static_cast<const FatBinaryWrapper*>(fatCubin);
  // A bare fat binary (not nvcc's wrapper) is accepted as it is.
  const void* image = wrapper != nullptr && wrapper->magic == kFatBinaryMagic ? static_cast<const void*>(wrapper->data)
                                                                             : fatCubin;
  try {
    return reinterpret_cast<void**>(register_fat_binary(image));
  } catch (...) {
    return nullptr;
  }
}

CUDART_EXPORT void __cudaRegisterFatBinaryEnd(void** fatCubinHandle) { (void)fatCubinHandle; }

CUDART_EXPORT void __cudaUnregisterFatBinary(void** fatCubinHandle) {
  if (fatCubinHandle != nullptr) unregister_fat_binary(binary_of(fatCubinHandle));
}

CUDART_EXPORT void __cudaRegisterFunction(void** fatCubinHandle, const char* hostFun, char* deviceFun,
                                          const char* deviceName, int thread_limit, uint3* tid, uint3* bid,
                                          dim3* bDim, dim3* gDim, int* wSize) {
  (void)deviceFun, (void)thread_limit, (void)tid, (void)bid, (void)bDim, (void)gDim, (void)wSize;
  if (fatCubinHandle == nullptr || hostFun == nullptr || deviceName == nullptr) return;
  try {
    register_kernel(binary_of(fatCubinHandle), hostFun, deviceName);
  } catch (...) {
  }
}

CUDART_EXPORT void __cudaRegisterVar(void** fatCubinHandle, char* hostVar, char* deviceAddress,
                                     const char* deviceName, int ext, size_t size, int constant, int global) {
  (void)deviceAddress, (void)ext, (void)constant, (void)global;
  if (fatCubinHandle == nullptr || hostVar == nullptr || deviceName == nullptr) return;
  try {
    register_variable(binary_of(fatCubinHandle), hostVar, deviceName, size, nullptr);
  } catch (...) {
  }
}

CUDART_EXPORT void __cudaRegisterManagedVar(void** fatCubinHandle, void** hostVarPtrAddress, char* deviceAddress,
                                            const char* deviceName, int ext, size_t size, int constant, int global) {
  (void)deviceAddress, (void)ext, (void)constant, (void)global;
  if (fatCubinHandle == nullptr || hostVarPtrAddress == nullptr || deviceName == nullptr) return;
  try {
    register_variable(binary_of(fatCubinHandle), hostVarPtrAddress, deviceName, size, hostVarPtrAddress);
  } catch (...) {
  }
}

// Called on the first host access of a __managed__ variable: the module must be loaded so that the
// variable's host pointer points at its managed memory.
CUDART_EXPORT char __cudaInitModule(void** fatCubinHandle) {
  if (fatCubinHandle == nullptr) return 0;
  if (ensure_context() != cudaSuccess) return 0;
  return load_in_current_context(binary_of(fatCubinHandle)) == cudaSuccess ? 1 : 0;
}

CUDART_EXPORT unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem, void* stream) {
  if (t_configuration_depth == kMaxNestedConfigurations) [[unlikely]] {
    finish(cudaErrorLaunchOutOfResources);
    return 1;  // the <<<>>> expression then skips the launch
  }
  t_configurations[t_configuration_depth++] = {gridDim, blockDim, sharedMem, static_cast<cudaStream_t>(stream)};
  return 0;
}

CUDART_EXPORT cudaError_t __cudaPopCallConfiguration(dim3* gridDim, dim3* blockDim, size_t* sharedMem, void* stream) {
  if (t_configuration_depth == 0) [[unlikely]] return finish(cudaErrorMissingConfiguration);
  const CallConfiguration& configuration = t_configurations[--t_configuration_depth];
  *gridDim = configuration.grid;
  *blockDim = configuration.block;
  *sharedMem = configuration.shared_bytes;
  *static_cast<cudaStream_t*>(stream) = configuration.stream;
  return cudaSuccess;
}

CUDART_EXPORT cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* function) {
  if (kernel == nullptr) return finish(cudaErrorInvalidValue);
  Kernel* found = find_kernel(function);
  if (found == nullptr) return finish(kUnknownKernel);
  *kernel = reinterpret_cast<cudaKernel_t>(found);
  return cudaSuccess;
}

CUDART_EXPORT cudaError_t cudaGetKernel(cudaKernel_t* kernelPtr, const void* entryFuncAddr) {
  return __cudaGetKernel(kernelPtr, entryFuncAddr);
}

CUDART_EXPORT cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** args,
                                             size_t sharedMem, cudaStream_t stream) {
  return launch(kernel, gridDim, blockDim, args, sharedMem, stream, false, false);
}

CUDART_EXPORT cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** args,
                                                  size_t sharedMem, cudaStream_t stream) {
  return launch(kernel, gridDim, blockDim, args, sharedMem, stream, true, false);
}

CUDART_EXPORT cudaError_t cudaLaunchKernel(const void* func, dim3 gridDim, dim3 blockDim, void** args,
                                           size_t sharedMem, cudaStream_t stream) {
  return launch(func, gridDim, blockDim, args, sharedMem, stream, false, false);
}

CUDART_EXPORT cudaError_t cudaLaunchKernel_ptsz(const void* func, dim3 gridDim, dim3 blockDim, void** args,
                                                size_t sharedMem, cudaStream_t stream) {
  return launch(func, gridDim, blockDim, args, sharedMem, stream, true, false);
}

CUDART_EXPORT cudaError_t cudaLaunchCooperativeKernel(const void* func, dim3 gridDim, dim3 blockDim, void** args,
                                                      size_t sharedMem, cudaStream_t stream) {
  return launch(func, gridDim, blockDim, args, sharedMem, stream, false, true);
}

CUDART_EXPORT cudaError_t cudaLaunchCooperativeKernel_ptsz(const void* func, dim3 gridDim, dim3 blockDim,
                                                           void** args, size_t sharedMem, cudaStream_t stream) {
  return launch(func, gridDim, blockDim, args, sharedMem, stream, true, true);
}

CUDART_EXPORT cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* func, void** args) {
  return launch_ex(config, func, args, false);
}

CUDART_EXPORT cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t* config, const void* func, void** args) {
  return launch_ex(config, func, args, true);
}
