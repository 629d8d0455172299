// Questions about kernels: attributes, cache and attribute settings, names, occupancy. Each resolves
// the kernel's function in the current context (loading its module) and asks the driver.
#include "api.hpp"
#include "registry.hpp"

namespace streampool::runtime {
namespace {

// The kernel's function in the current context, or the error to return.
cudaError_t function_of(const void* func, CUfunction* function) noexcept { return resolve_function(func, function); }

CUresult read(CUfunction function, CUfunction_attribute attribute, int* value) noexcept {
  *value = 0;
  return cuFuncGetAttribute(value, attribute, function);
}

}  // namespace
}  // namespace streampool::runtime

using namespace streampool::runtime;

CUDART_EXPORT cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attr, const void* func) {
  if (attr == nullptr) return finish(cudaErrorInvalidValue);
  CUfunction function = nullptr;
  if (const cudaError_t error = function_of(func, &function); error != cudaSuccess) return finish(error);
  *attr = cudaFuncAttributes{};
  int value = 0;
  CUresult result = CUDA_SUCCESS;
  auto get = [&](CUfunction_attribute attribute) {
    if (result == CUDA_SUCCESS) result = read(function, attribute, &value);
    return value;
  };
  attr->sharedSizeBytes = static_cast<size_t>(get(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES));
  attr->constSizeBytes = static_cast<size_t>(get(CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES));
  attr->localSizeBytes = static_cast<size_t>(get(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES));
  attr->maxThreadsPerBlock = get(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  attr->numRegs = get(CU_FUNC_ATTRIBUTE_NUM_REGS);
  attr->ptxVersion = get(CU_FUNC_ATTRIBUTE_PTX_VERSION);
  attr->binaryVersion = get(CU_FUNC_ATTRIBUTE_BINARY_VERSION);
  attr->cacheModeCA = get(CU_FUNC_ATTRIBUTE_CACHE_MODE_CA);
  attr->maxDynamicSharedSizeBytes = get(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);
  attr->preferredShmemCarveout = get(CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT);
  // The cluster attributes are newer; a driver without them leaves them 0.
  const CUresult before_cluster = result;
  attr->clusterDimMustBeSet = get(CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET);
  attr->requiredClusterWidth = get(CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH);
  attr->requiredClusterHeight = get(CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT);
  attr->requiredClusterDepth = get(CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH);
  attr->clusterSchedulingPolicyPreference = get(CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE);
  attr->nonPortableClusterSizeAllowed = get(CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED);
  if (before_cluster == CUDA_SUCCESS) result = CUDA_SUCCESS;
  return finish(result);
}

CUDART_EXPORT cudaError_t cudaFuncSetAttribute(const void* func, cudaFuncAttribute attr, int value) {
  CUfunction function = nullptr;
  if (const cudaError_t error = function_of(func, &function); error != cudaSuccess) return finish(error);
  return finish(cuFuncSetAttribute(function, static_cast<CUfunction_attribute>(attr), value));
}

CUDART_EXPORT cudaError_t cudaFuncSetCacheConfig(const void* func, cudaFuncCache cacheConfig) {
  CUfunction function = nullptr;
  if (const cudaError_t error = function_of(func, &function); error != cudaSuccess) return finish(error);
  return finish(cuFuncSetCacheConfig(function, static_cast<CUfunc_cache>(cacheConfig)));
}

CUDART_EXPORT cudaError_t cudaFuncGetName(const char** name, const void* func) {
  if (name == nullptr) return finish(cudaErrorInvalidValue);
  Kernel* kernel = find_kernel(func);
  if (kernel == nullptr && is_library_kernel(func)) {
    return finish(cuKernelGetName(name, static_cast<CUkernel>(const_cast<void*>(func))));
  }
  if (kernel == nullptr) return finish(kUnknownKernel);
  *name = kernel->name.c_str();
  return cudaSuccess;
}

CUDART_EXPORT cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* numBlocks, const void* func,
                                                                                  int blockSize,
                                                                                  size_t dynamicSMemSize,
                                                                                  unsigned int flags) {
  if (numBlocks == nullptr) return finish(cudaErrorInvalidValue);
  CUfunction function = nullptr;
  if (const cudaError_t error = function_of(func, &function); error != cudaSuccess) return finish(error);
  return finish(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(numBlocks, function, blockSize, dynamicSMemSize,
                                                                     flags));
}

CUDART_EXPORT cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* numBlocks, const void* func,
                                                                        int blockSize, size_t dynamicSMemSize) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(numBlocks, func, blockSize, dynamicSMemSize,
                                                                cudaOccupancyDefault);
}

CUDART_EXPORT cudaError_t cudaOccupancyAvailableDynamicSMemPerBlock(size_t* dynamicSmemSize, const void* func,
                                                                    int numBlocks, int blockSize) {
  if (dynamicSmemSize == nullptr) return finish(cudaErrorInvalidValue);
  CUfunction function = nullptr;
  if (const cudaError_t error = function_of(func, &function); error != cudaSuccess) return finish(error);
  return finish(cuOccupancyAvailableDynamicSMemPerBlock(dynamicSmemSize, function, numBlocks, blockSize));
}

// The driver function of a kernel named by its host stub, in the current context.
CUDART_EXPORT cudaError_t cudaGetFuncBySymbol(cudaFunction_t* functionPtr, const void* symbolPtr) {
  if (functionPtr == nullptr) return finish(cudaErrorInvalidValue);
  CUfunction function = nullptr;
  if (const cudaError_t error = function_of(symbolPtr, &function); error != cudaSuccess) return finish(error);
  *functionPtr = function;  // cudaFunction_t is the driver's CUfunction
  return cudaSuccess;
}
