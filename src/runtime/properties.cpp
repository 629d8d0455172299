// cudaGetDeviceProperties: cudaDeviceProp filled from the driver's device attributes, name,
// memory size and UUID, as cudart 13 fills it (no context is created).
#include <cstring>

#include "api.hpp"

namespace streampool::runtime {
namespace {

// Reads one attribute; an attribute the driver does not know (an older driver) reads as 0.
class AttributeReader {
 public:
  explicit AttributeReader(CUdevice device) noexcept : device_(device) {}

  template <class Field>
  void operator()(Field& field, CUdevice_attribute attribute) noexcept {
    int value = 0;
    const CUresult result = cuDeviceGetAttribute(&value, attribute, device_);
    if (result != CUDA_SUCCESS && result != CUDA_ERROR_INVALID_VALUE && first_error_ == CUDA_SUCCESS) {
      first_error_ = result;
    }
    field = static_cast<Field>(result == CUDA_SUCCESS ? value : 0);
  }
  [[nodiscard]] CUresult error() const noexcept { return first_error_; }

 private:
  CUdevice device_;
  CUresult first_error_ = CUDA_SUCCESS;
};

CUresult fill_properties(cudaDeviceProp* prop, CUdevice device) noexcept {
  std::memset(prop, 0, sizeof(*prop));
  CUresult result = cuDeviceGetName(prop->name, static_cast<int>(sizeof(prop->name)), device);
  if (result != CUDA_SUCCESS) return result;
  result = cuDeviceTotalMem(&prop->totalGlobalMem, device);
  if (result != CUDA_SUCCESS) return result;
  CUuuid uuid{};
  if (cuDeviceGetUuid_v2(&uuid, device) == CUDA_SUCCESS) std::memcpy(&prop->uuid, &uuid, sizeof(uuid));

  AttributeReader read(device);
  read(prop->sharedMemPerBlock, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
  read(prop->regsPerBlock, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
  read(prop->warpSize, CU_DEVICE_ATTRIBUTE_WARP_SIZE);
  read(prop->memPitch, CU_DEVICE_ATTRIBUTE_MAX_PITCH);
  read(prop->maxThreadsPerBlock, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  read(prop->maxThreadsDim[0], CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X);
  read(prop->maxThreadsDim[1], CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y);
  read(prop->maxThreadsDim[2], CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z);
  read(prop->maxGridSize[0], CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X);
  read(prop->maxGridSize[1], CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y);
  read(prop->maxGridSize[2], CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z);
  read(prop->totalConstMem, CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY);
  read(prop->major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  read(prop->minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  read(prop->textureAlignment, CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT);
  read(prop->texturePitchAlignment, CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT);
  read(prop->multiProcessorCount, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  read(prop->integrated, CU_DEVICE_ATTRIBUTE_INTEGRATED);
  read(prop->canMapHostMemory, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY);
  read(prop->maxTexture1D, CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_WIDTH);
  read(prop->maxTexture1DMipmap, CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH);
  read(prop->maxTexture2D[0], CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_WIDTH);
  read(prop->maxTexture2D[1], CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_HEIGHT);
  read(prop->maxTexture2DMipmap[0], CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH);
  read(prop->maxTexture2DMipmap[1], CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT);
  read(prop->maxTexture2DLinear[0], CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_WIDTH);
  read(prop->maxTexture2DLinear[1], CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_HEIGHT);
  read(prop->maxTexture2DLinear[2], CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_PITCH);
  read(prop->maxTexture2DGather[0], CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_WIDTH);
  read(prop->maxTexture2DGather[1], CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_HEIGHT);
  read(prop->maxTexture3D[0], CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH);
  read(prop->maxTexture3D[1], CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT);
  read(prop->maxTexture3D[2], CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH);
  read(prop->maxTexture3DAlt[0], CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH_ALTERNATE);
  read(prop->maxTexture3DAlt[1], CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT_ALTERNATE);
  read(prop->maxTexture3DAlt[2], CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE);
  read(prop->maxTextureCubemap, CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_WIDTH);
  read(prop->maxTexture1DLayered[0], CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_WIDTH);
  read(prop->maxTexture1DLayered[1], CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_LAYERS);
  read(prop->maxTexture2DLayered[0], CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_WIDTH);
  read(prop->maxTexture2DLayered[1], CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_HEIGHT);
  read(prop->maxTexture2DLayered[2], CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_LAYERS);
  read(prop->maxTextureCubemapLayered[0], CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH);
  read(prop->maxTextureCubemapLayered[1], CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS);
  read(prop->maxSurface1D, CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_WIDTH);
  read(prop->maxSurface2D[0], CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_WIDTH);
  read(prop->maxSurface2D[1], CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_HEIGHT);
  read(prop->maxSurface3D[0], CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_WIDTH);
  read(prop->maxSurface3D[1], CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_HEIGHT);
  read(prop->maxSurface3D[2], CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_DEPTH);
  read(prop->maxSurface1DLayered[0], CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_WIDTH);
  read(prop->maxSurface1DLayered[1], CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_LAYERS);
  read(prop->maxSurface2DLayered[0], CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_WIDTH);
  read(prop->maxSurface2DLayered[1], CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_HEIGHT);
  read(prop->maxSurface2DLayered[2], CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_LAYERS);
  read(prop->maxSurfaceCubemap, CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_WIDTH);
  read(prop->maxSurfaceCubemapLayered[0], CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH);
  read(prop->maxSurfaceCubemapLayered[1], CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS);
  read(prop->surfaceAlignment, CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT);
  read(prop->concurrentKernels, CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS);
  read(prop->ECCEnabled, CU_DEVICE_ATTRIBUTE_ECC_ENABLED);
  read(prop->pciBusID, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID);
  read(prop->pciDeviceID, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID);
  read(prop->pciDomainID, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID);
  read(prop->tccDriver, CU_DEVICE_ATTRIBUTE_TCC_DRIVER);
  read(prop->asyncEngineCount, CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT);
  read(prop->unifiedAddressing, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING);
  read(prop->memoryBusWidth, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  read(prop->l2CacheSize, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  read(prop->persistingL2CacheMaxSize, CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE);
  read(prop->maxThreadsPerMultiProcessor, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  read(prop->streamPrioritiesSupported, CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED);
  read(prop->globalL1CacheSupported, CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED);
  read(prop->localL1CacheSupported, CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED);
  read(prop->sharedMemPerMultiprocessor, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
  read(prop->regsPerMultiprocessor, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
  read(prop->managedMemory, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY);
  read(prop->isMultiGpuBoard, CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD);
  read(prop->multiGpuBoardGroupID, CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID);
  read(prop->hostNativeAtomicSupported, CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED);
  read(prop->pageableMemoryAccess, CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS);
  read(prop->concurrentManagedAccess, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS);
  read(prop->computePreemptionSupported, CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED);
  read(prop->canUseHostPointerForRegisteredMem, CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM);
  read(prop->cooperativeLaunch, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH);
  read(prop->sharedMemPerBlockOptin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  read(prop->pageableMemoryAccessUsesHostPageTables, CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES);
  read(prop->directManagedMemAccessFromHost, CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST);
  read(prop->maxBlocksPerMultiProcessor, CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
  read(prop->accessPolicyMaxWindowSize, CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE);
  read(prop->reservedSharedMemPerBlock, CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK);
  read(prop->hostRegisterSupported, CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED);
  read(prop->sparseCudaArraySupported, CU_DEVICE_ATTRIBUTE_SPARSE_CUDA_ARRAY_SUPPORTED);
  read(prop->hostRegisterReadOnlySupported, CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED);
  read(prop->timelineSemaphoreInteropSupported, CU_DEVICE_ATTRIBUTE_TIMELINE_SEMAPHORE_INTEROP_SUPPORTED);
  read(prop->memoryPoolsSupported, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED);
  read(prop->gpuDirectRDMASupported, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED);
  read(prop->gpuDirectRDMAFlushWritesOptions, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS);
  read(prop->gpuDirectRDMAWritesOrdering, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING);
  read(prop->memoryPoolSupportedHandleTypes, CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES);
  read(prop->deferredMappingCudaArraySupported, CU_DEVICE_ATTRIBUTE_DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED);
  read(prop->ipcEventSupported, CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED);
  read(prop->clusterLaunch, CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH);
  read(prop->unifiedFunctionPointers, CU_DEVICE_ATTRIBUTE_UNIFIED_FUNCTION_POINTERS);
  read(prop->deviceNumaConfig, CU_DEVICE_ATTRIBUTE_NUMA_CONFIG);
  read(prop->deviceNumaId, CU_DEVICE_ATTRIBUTE_NUMA_ID);
  read(prop->mpsEnabled, CU_DEVICE_ATTRIBUTE_MPS_ENABLED);
  read(prop->hostNumaId, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID);
  read(prop->gpuPciDeviceID, CU_DEVICE_ATTRIBUTE_GPU_PCI_DEVICE_ID);
  read(prop->gpuPciSubsystemID, CU_DEVICE_ATTRIBUTE_GPU_PCI_SUBSYSTEM_ID);
  read(prop->hostNumaMultinodeIpcSupported, CU_DEVICE_ATTRIBUTE_HOST_NUMA_MULTINODE_IPC_SUPPORTED);
  return read.error();
}

}  // namespace
}  // namespace streampool::runtime

using namespace streampool::runtime;

CUDART_EXPORT cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (prop == nullptr) return finish(cudaErrorInvalidValue);
  int count = 0;
  if (const cudaError_t error = cudaGetDeviceCount(&count); error != cudaSuccess) return error;
  if (device < 0 || device >= count) return finish(cudaErrorInvalidDevice);
  return finish(fill_properties(prop, device));
}
