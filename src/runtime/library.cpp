// Libraries the program loads itself (cudaLibraryLoadData, cudaLibraryLoadFromFile): the driver's
// context-independent CUlibrary, whose kernels (a cudaKernel_t is the driver's CUkernel) launch and
// answer questions wherever a kernel is named (registry.hpp), and whose globals, managed variables
// and unified functions are looked up by name. Also the kernel questions and settings that name a
// device or a parameter: cudaKernelSetAttributeForDevice, cudaFuncGetParamInfo, the cluster
// occupancy queries.
#include <vector>

#include "api.hpp"
#include "registry.hpp"

namespace streampool::runtime {
namespace {

static_assert(static_cast<int>(cudaJitMaxRegisters) == static_cast<int>(CU_JIT_MAX_REGISTERS) &&
              static_cast<int>(cudaJitFallbackStrategy) == static_cast<int>(CU_JIT_FALLBACK_STRATEGY) &&
              static_cast<int>(cudaJitMinCtaPerSm) == static_cast<int>(CU_JIT_MIN_CTA_PER_SM));
static_assert(static_cast<int>(cudaLibraryHostUniversalFunctionAndDataTable) ==
                  static_cast<int>(CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE) &&
              static_cast<int>(cudaLibraryBinaryIsPreserved) == static_cast<int>(CU_LIBRARY_BINARY_IS_PRESERVED));

CUjit_option* jit_options(cudaJitOption* options) noexcept { return reinterpret_cast<CUjit_option*>(options); }
CUlibraryOption* library_options(cudaLibraryOption* options) noexcept {
  return reinterpret_cast<CUlibraryOption*>(options);
}
CUlibrary driver_library(cudaLibrary_t library) noexcept { return reinterpret_cast<CUlibrary>(library); }

// The driver's launch configuration for an occupancy question (stream and attributes as given).
CUlaunchConfig driver_config(const cudaLaunchConfig_t& config) noexcept {
  CUlaunchConfig converted{};
  converted.gridDimX = config.gridDim.x;
  converted.gridDimY = config.gridDim.y;
  converted.gridDimZ = config.gridDim.z;
  converted.blockDimX = config.blockDim.x;
  converted.blockDimY = config.blockDim.y;
  converted.blockDimZ = config.blockDim.z;
  converted.sharedMemBytes = static_cast<unsigned>(config.dynamicSmemBytes);
  converted.hStream = config.stream;
  converted.attrs = reinterpret_cast<CUlaunchAttribute*>(config.attrs);
  converted.numAttrs = config.numAttrs;
  return converted;
}

// Makes `device`'s primary context current for `body`, then puts the thread's context back.
template <class Body>
cudaError_t in_device_context(int device, Body&& body) noexcept {
  CUcontext context = nullptr;
  if (const cudaError_t error = primary_context(device, &context); error != cudaSuccess) return error;
  if (const CUresult result = cuCtxPushCurrent(context); result != CUDA_SUCCESS) return to_runtime_error(result);
  const cudaError_t error = body();
  CUcontext popped = nullptr;
  cuCtxPopCurrent(&popped);
  return error;
}

}  // namespace
}  // namespace streampool::runtime

using namespace streampool::runtime;

CUDART_EXPORT cudaError_t cudaLibraryLoadData(cudaLibrary_t* library, const void* code, cudaJitOption* jitOptions,
                                              void** jitOptionsValues, unsigned int numJitOptions,
                                              cudaLibraryOption* libraryOptions, void** libraryOptionValues,
                                              unsigned int numLibraryOptions) {
  if (library == nullptr || code == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuLibraryLoadData(reinterpret_cast<CUlibrary*>(library), code, jit_options(jitOptions),
                                            jitOptionsValues, numJitOptions, library_options(libraryOptions),
                                            libraryOptionValues, numLibraryOptions));
}

CUDART_EXPORT cudaError_t cudaLibraryLoadFromFile(cudaLibrary_t* library, const char* fileName,
                                                  cudaJitOption* jitOptions, void** jitOptionsValues,
                                                  unsigned int numJitOptions, cudaLibraryOption* libraryOptions,
                                                  void** libraryOptionValues, unsigned int numLibraryOptions) {
  if (library == nullptr || fileName == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuLibraryLoadFromFile(reinterpret_cast<CUlibrary*>(library), fileName,
                                                jit_options(jitOptions), jitOptionsValues, numJitOptions,
                                                library_options(libraryOptions), libraryOptionValues,
                                                numLibraryOptions));
}

CUDART_EXPORT cudaError_t cudaLibraryUnload(cudaLibrary_t library) {
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  const CUresult result = cuLibraryUnload(driver_library(library));
  if (result == CUDA_SUCCESS) forget_library(driver_library(library));
  return finish(result);
}

CUDART_EXPORT cudaError_t cudaLibraryGetKernel(cudaKernel_t* pKernel, cudaLibrary_t library, const char* name) {
  if (pKernel == nullptr || name == nullptr) return finish(cudaErrorInvalidValue);
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  CUkernel kernel = nullptr;
  const CUresult result = cuLibraryGetKernel(&kernel, driver_library(library), name);
  if (result != CUDA_SUCCESS) return finish(result);
  register_library_kernels(driver_library(library), &kernel, 1);
  *pKernel = reinterpret_cast<cudaKernel_t>(kernel);
  return cudaSuccess;
}

CUDART_EXPORT cudaError_t cudaLibraryGetKernelCount(unsigned int* count, cudaLibrary_t lib) {
  if (count == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuLibraryGetKernelCount(count, driver_library(lib)));
}

CUDART_EXPORT cudaError_t cudaLibraryEnumerateKernels(cudaKernel_t* kernels, unsigned int numKernels,
                                                      cudaLibrary_t lib) {
  if (kernels == nullptr && numKernels != 0) return finish(cudaErrorInvalidValue);
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  static_assert(sizeof(cudaKernel_t) == sizeof(CUkernel));
  auto* driver_kernels = reinterpret_cast<CUkernel*>(kernels);
  const CUresult result = cuLibraryEnumerateKernels(driver_kernels, numKernels, driver_library(lib));
  if (result == CUDA_SUCCESS) register_library_kernels(driver_library(lib), driver_kernels, numKernels);
  return finish(result);
}

CUDART_EXPORT cudaError_t cudaLibraryGetGlobal(void** dptr, size_t* bytes, cudaLibrary_t library, const char* name) {
  if (dptr == nullptr || name == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuLibraryGetGlobal(reinterpret_cast<CUdeviceptr*>(dptr), bytes, driver_library(library), name));
}

CUDART_EXPORT cudaError_t cudaLibraryGetManaged(void** dptr, size_t* bytes, cudaLibrary_t library, const char* name) {
  if (dptr == nullptr || name == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(
      cuLibraryGetManaged(reinterpret_cast<CUdeviceptr*>(dptr), bytes, driver_library(library), name));
}

CUDART_EXPORT cudaError_t cudaLibraryGetUnifiedFunction(void** fptr, cudaLibrary_t library, const char* symbol) {
  if (fptr == nullptr || symbol == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuLibraryGetUnifiedFunction(fptr, driver_library(library), symbol));
}

// A library kernel's attribute is the driver's per-device setting; a registered kernel's (a
// cudaGetKernel handle) is its function's in the device's primary context.
CUDART_EXPORT cudaError_t cudaKernelSetAttributeForDevice(cudaKernel_t kernel, cudaFuncAttribute attr, int value,
                                                          int device) {
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  const auto attribute = static_cast<CUfunction_attribute>(attr);
  if (is_library_kernel(kernel)) {
    CUdevice handle = 0;
    if (const CUresult result = cuDeviceGet(&handle, device); result != CUDA_SUCCESS) {
      return finish(cudaErrorInvalidDevice);
    }
    return finish(cuKernelSetAttribute(attribute, value, reinterpret_cast<CUkernel>(kernel), handle));
  }
  if (find_kernel(kernel) == nullptr) return finish(kUnknownKernel);
  return finish(in_device_context(device, [&]() -> cudaError_t {
    CUfunction function = nullptr;
    if (const cudaError_t error = resolve_function(kernel, &function); error != cudaSuccess) return error;
    const CUresult result = cuFuncSetAttribute(function, attribute, value);
    return result == CUDA_SUCCESS ? cudaSuccess : to_runtime_error(result);
  }));
}

CUDART_EXPORT cudaError_t cudaFuncGetParamInfo(const void* func, size_t paramIndex, size_t* paramOffset,
                                               size_t* paramSize) {
  if (paramOffset == nullptr) return finish(cudaErrorInvalidValue);
  CUfunction function = nullptr;
  if (const cudaError_t error = resolve_function(func, &function); error != cudaSuccess) return finish(error);
  return finish(cuFuncGetParamInfo(function, paramIndex, paramOffset, paramSize));
}

CUDART_EXPORT cudaError_t cudaOccupancyMaxPotentialClusterSize(int* clusterSize, const void* func,
                                                               const cudaLaunchConfig_t* launchConfig) {
  if (clusterSize == nullptr || launchConfig == nullptr) return finish(cudaErrorInvalidValue);
  CUfunction function = nullptr;
  if (const cudaError_t error = resolve_function(func, &function); error != cudaSuccess) return finish(error);
  const CUlaunchConfig config = driver_config(*launchConfig);
  return finish(cuOccupancyMaxPotentialClusterSize(clusterSize, function, &config));
}

CUDART_EXPORT cudaError_t cudaOccupancyMaxActiveClusters(int* numClusters, const void* func,
                                                         const cudaLaunchConfig_t* launchConfig) {
  if (numClusters == nullptr || launchConfig == nullptr) return finish(cudaErrorInvalidValue);
  CUfunction function = nullptr;
  if (const cudaError_t error = resolve_function(func, &function); error != cudaSuccess) return finish(error);
  const CUlaunchConfig config = driver_config(*launchConfig);
  return finish(cuOccupancyMaxActiveClusters(numClusters, function, &config));
}
