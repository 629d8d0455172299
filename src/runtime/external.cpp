// External resources: memory and semaphores another API (Vulkan, Direct3D, NvSciBuf/NvSciSync, an
// OS handle) made, imported into CUDA; buffers and mipmapped arrays mapped out of such memory;
// semaphores signalled and waited on in stream order and by graph nodes. The runtime's descriptions
// are the driver's, field for field (checked below), except a mipmapped array's, whose texel format
// is the runtime's channel descriptor.
#include <cstddef>

#include "api.hpp"
#include "channel_format.hpp"

extern "C" {
cudaError_t cudaSignalExternalSemaphoresAsync_ptsz(const cudaExternalSemaphore_t* extSemArray,
                                                   const cudaExternalSemaphoreSignalParams* paramsArray,
                                                   unsigned int numExtSems, cudaStream_t stream);
cudaError_t cudaWaitExternalSemaphoresAsync_ptsz(const cudaExternalSemaphore_t* extSemArray,
                                                 const cudaExternalSemaphoreWaitParams* paramsArray,
                                                 unsigned int numExtSems, cudaStream_t stream);
}

namespace streampool::runtime {
namespace {

static_assert(sizeof(cudaExternalMemoryHandleDesc) == sizeof(CUDA_EXTERNAL_MEMORY_HANDLE_DESC) &&
              offsetof(cudaExternalMemoryHandleDesc, handle) == offsetof(CUDA_EXTERNAL_MEMORY_HANDLE_DESC, handle) &&
              offsetof(cudaExternalMemoryHandleDesc, size) == offsetof(CUDA_EXTERNAL_MEMORY_HANDLE_DESC, size) &&
              offsetof(cudaExternalMemoryHandleDesc, flags) == offsetof(CUDA_EXTERNAL_MEMORY_HANDLE_DESC, flags));
static_assert(static_cast<int>(cudaExternalMemoryHandleTypeNvSciBuf) ==
              static_cast<int>(CU_EXTERNAL_MEMORY_HANDLE_TYPE_NVSCIBUF));
static_assert(cudaExternalMemoryDedicated == CUDA_EXTERNAL_MEMORY_DEDICATED);
static_assert(sizeof(cudaExternalMemoryBufferDesc) == sizeof(CUDA_EXTERNAL_MEMORY_BUFFER_DESC) &&
              offsetof(cudaExternalMemoryBufferDesc, flags) == offsetof(CUDA_EXTERNAL_MEMORY_BUFFER_DESC, flags));
static_assert(sizeof(cudaExternalSemaphoreHandleDesc) == sizeof(CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC) &&
              offsetof(cudaExternalSemaphoreHandleDesc, handle) ==
                  offsetof(CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC, handle) &&
              offsetof(cudaExternalSemaphoreHandleDesc, flags) == offsetof(CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC, flags));
static_assert(static_cast<int>(cudaExternalSemaphoreHandleTypeTimelineSemaphoreFd) ==
              static_cast<int>(CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD));
static_assert(sizeof(cudaExternalSemaphoreSignalParams) == sizeof(CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS) &&
              offsetof(cudaExternalSemaphoreSignalParams, flags) ==
                  offsetof(CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS, flags));
static_assert(sizeof(cudaExternalSemaphoreWaitParams) == sizeof(CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS) &&
              offsetof(cudaExternalSemaphoreWaitParams, flags) == offsetof(CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS, flags));
static_assert(sizeof(cudaExternalSemaphoreSignalNodeParams) == sizeof(CUDA_EXT_SEM_SIGNAL_NODE_PARAMS) &&
              sizeof(cudaExternalSemaphoreWaitNodeParams) == sizeof(CUDA_EXT_SEM_WAIT_NODE_PARAMS));

template <class Driver, class Runtime>
const Driver* as_driver(const Runtime* value) noexcept {
  static_assert(sizeof(Driver) == sizeof(Runtime));
  return reinterpret_cast<const Driver*>(value);
}
template <class Driver, class Runtime>
Driver* as_driver(Runtime* value) noexcept {
  static_assert(sizeof(Driver) == sizeof(Runtime));
  return reinterpret_cast<Driver*>(value);
}

CUexternalMemory driver_memory(cudaExternalMemory_t memory) noexcept {
  return reinterpret_cast<CUexternalMemory>(memory);
}
const CUexternalSemaphore* driver_semaphores(const cudaExternalSemaphore_t* semaphores) noexcept {
  return reinterpret_cast<const CUexternalSemaphore*>(semaphores);
}

cudaError_t signal(const cudaExternalSemaphore_t* semaphores, const cudaExternalSemaphoreSignalParams* params,
                   unsigned count, cudaStream_t stream, bool per_thread) noexcept {
  if (count != 0 && (semaphores == nullptr || params == nullptr)) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuSignalExternalSemaphoresAsync(driver_semaphores(semaphores),
                                                          as_driver<CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS>(params),
                                                          count, driver_stream(stream, per_thread)));
}

cudaError_t wait(const cudaExternalSemaphore_t* semaphores, const cudaExternalSemaphoreWaitParams* params,
                 unsigned count, cudaStream_t stream, bool per_thread) noexcept {
  if (count != 0 && (semaphores == nullptr || params == nullptr)) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuWaitExternalSemaphoresAsync(driver_semaphores(semaphores),
                                                        as_driver<CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS>(params), count,
                                                        driver_stream(stream, per_thread)));
}

}  // namespace
}  // namespace streampool::runtime

using namespace streampool::runtime;

CUDART_EXPORT cudaError_t cudaImportExternalMemory(cudaExternalMemory_t* extMem_out,
                                                   const cudaExternalMemoryHandleDesc* memHandleDesc) {
  if (extMem_out == nullptr || memHandleDesc == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuImportExternalMemory(as_driver<CUexternalMemory>(extMem_out),
                                                 as_driver<CUDA_EXTERNAL_MEMORY_HANDLE_DESC>(memHandleDesc)));
}

CUDART_EXPORT cudaError_t cudaExternalMemoryGetMappedBuffer(void** devPtr, cudaExternalMemory_t extMem,
                                                            const cudaExternalMemoryBufferDesc* bufferDesc) {
  if (devPtr == nullptr || bufferDesc == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuExternalMemoryGetMappedBuffer(reinterpret_cast<CUdeviceptr*>(devPtr), driver_memory(extMem),
                                                          as_driver<CUDA_EXTERNAL_MEMORY_BUFFER_DESC>(bufferDesc)));
}

CUDART_EXPORT cudaError_t cudaExternalMemoryGetMappedMipmappedArray(
    cudaMipmappedArray_t* mipmap, cudaExternalMemory_t extMem, const cudaExternalMemoryMipmappedArrayDesc* mipmapDesc) {
  if (mipmap == nullptr || mipmapDesc == nullptr) return finish(cudaErrorInvalidValue);
  DriverFormat format{};
  if (const cudaError_t error = driver_format(mipmapDesc->formatDesc, &format); error != cudaSuccess) {
    return finish(error);
  }
  CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC desc{};
  desc.offset = mipmapDesc->offset;
  desc.arrayDesc.Width = mipmapDesc->extent.width;
  desc.arrayDesc.Height = mipmapDesc->extent.height;
  desc.arrayDesc.Depth = mipmapDesc->extent.depth;
  desc.arrayDesc.Format = format.format;
  desc.arrayDesc.NumChannels = format.channels;
  desc.arrayDesc.Flags = mipmapDesc->flags;
  desc.numLevels = mipmapDesc->numLevels;
  STREAMPOOL_WITH_CONTEXT(cuExternalMemoryGetMappedMipmappedArray(reinterpret_cast<CUmipmappedArray*>(mipmap),
                                                                  driver_memory(extMem), &desc));
}

CUDART_EXPORT cudaError_t cudaDestroyExternalMemory(cudaExternalMemory_t extMem) {
  STREAMPOOL_WITH_CONTEXT(cuDestroyExternalMemory(driver_memory(extMem)));
}

CUDART_EXPORT cudaError_t cudaImportExternalSemaphore(cudaExternalSemaphore_t* extSem_out,
                                                      const cudaExternalSemaphoreHandleDesc* semHandleDesc) {
  if (extSem_out == nullptr || semHandleDesc == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuImportExternalSemaphore(as_driver<CUexternalSemaphore>(extSem_out),
                                                    as_driver<CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC>(semHandleDesc)));
}

CUDART_EXPORT cudaError_t cudaDestroyExternalSemaphore(cudaExternalSemaphore_t extSem) {
  STREAMPOOL_WITH_CONTEXT(cuDestroyExternalSemaphore(reinterpret_cast<CUexternalSemaphore>(extSem)));
}

CUDART_EXPORT cudaError_t cudaSignalExternalSemaphoresAsync(const cudaExternalSemaphore_t* extSemArray,
                                                            const cudaExternalSemaphoreSignalParams* paramsArray,
                                                            unsigned int numExtSems, cudaStream_t stream) {
  return signal(extSemArray, paramsArray, numExtSems, stream, false);
}
CUDART_EXPORT cudaError_t cudaSignalExternalSemaphoresAsync_ptsz(const cudaExternalSemaphore_t* extSemArray,
                                                                 const cudaExternalSemaphoreSignalParams* paramsArray,
                                                                 unsigned int numExtSems, cudaStream_t stream) {
  return signal(extSemArray, paramsArray, numExtSems, stream, true);
}
CUDART_EXPORT cudaError_t cudaWaitExternalSemaphoresAsync(const cudaExternalSemaphore_t* extSemArray,
                                                          const cudaExternalSemaphoreWaitParams* paramsArray,
                                                          unsigned int numExtSems, cudaStream_t stream) {
  return wait(extSemArray, paramsArray, numExtSems, stream, false);
}
CUDART_EXPORT cudaError_t cudaWaitExternalSemaphoresAsync_ptsz(const cudaExternalSemaphore_t* extSemArray,
                                                               const cudaExternalSemaphoreWaitParams* paramsArray,
                                                               unsigned int numExtSems, cudaStream_t stream) {
  return wait(extSemArray, paramsArray, numExtSems, stream, true);
}

// Graph nodes that signal or wait on external semaphores.
CUDART_EXPORT cudaError_t cudaGraphAddExternalSemaphoresSignalNode(
    cudaGraphNode_t* pGraphNode, cudaGraph_t graph, const cudaGraphNode_t* pDependencies, size_t numDependencies,
    const cudaExternalSemaphoreSignalNodeParams* nodeParams) {
  if (nodeParams == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuGraphAddExternalSemaphoresSignalNode(pGraphNode, graph, pDependencies, numDependencies,
                                                                 as_driver<CUDA_EXT_SEM_SIGNAL_NODE_PARAMS>(nodeParams)));
}
CUDART_EXPORT cudaError_t cudaGraphExternalSemaphoresSignalNodeGetParams(
    cudaGraphNode_t hNode, cudaExternalSemaphoreSignalNodeParams* params_out) {
  if (params_out == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(
      cuGraphExternalSemaphoresSignalNodeGetParams(hNode, as_driver<CUDA_EXT_SEM_SIGNAL_NODE_PARAMS>(params_out)));
}
CUDART_EXPORT cudaError_t cudaGraphExternalSemaphoresSignalNodeSetParams(
    cudaGraphNode_t hNode, const cudaExternalSemaphoreSignalNodeParams* nodeParams) {
  if (nodeParams == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(
      cuGraphExternalSemaphoresSignalNodeSetParams(hNode, as_driver<CUDA_EXT_SEM_SIGNAL_NODE_PARAMS>(nodeParams)));
}
CUDART_EXPORT cudaError_t cudaGraphExecExternalSemaphoresSignalNodeSetParams(
    cudaGraphExec_t hGraphExec, cudaGraphNode_t hNode, const cudaExternalSemaphoreSignalNodeParams* nodeParams) {
  if (nodeParams == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuGraphExecExternalSemaphoresSignalNodeSetParams(
      hGraphExec, hNode, as_driver<CUDA_EXT_SEM_SIGNAL_NODE_PARAMS>(nodeParams)));
}
CUDART_EXPORT cudaError_t cudaGraphAddExternalSemaphoresWaitNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                                                 const cudaGraphNode_t* pDependencies,
                                                                 size_t numDependencies,
                                                                 const cudaExternalSemaphoreWaitNodeParams* nodeParams) {
  if (nodeParams == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuGraphAddExternalSemaphoresWaitNode(pGraphNode, graph, pDependencies, numDependencies,
                                                               as_driver<CUDA_EXT_SEM_WAIT_NODE_PARAMS>(nodeParams)));
}
CUDART_EXPORT cudaError_t cudaGraphExternalSemaphoresWaitNodeGetParams(cudaGraphNode_t hNode,
                                                                       cudaExternalSemaphoreWaitNodeParams* params_out) {
  if (params_out == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(
      cuGraphExternalSemaphoresWaitNodeGetParams(hNode, as_driver<CUDA_EXT_SEM_WAIT_NODE_PARAMS>(params_out)));
}
CUDART_EXPORT cudaError_t cudaGraphExternalSemaphoresWaitNodeSetParams(
    cudaGraphNode_t hNode, const cudaExternalSemaphoreWaitNodeParams* nodeParams) {
  if (nodeParams == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(
      cuGraphExternalSemaphoresWaitNodeSetParams(hNode, as_driver<CUDA_EXT_SEM_WAIT_NODE_PARAMS>(nodeParams)));
}
CUDART_EXPORT cudaError_t cudaGraphExecExternalSemaphoresWaitNodeSetParams(
    cudaGraphExec_t hGraphExec, cudaGraphNode_t hNode, const cudaExternalSemaphoreWaitNodeParams* nodeParams) {
  if (nodeParams == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuGraphExecExternalSemaphoresWaitNodeSetParams(
      hGraphExec, hNode, as_driver<CUDA_EXT_SEM_WAIT_NODE_PARAMS>(nodeParams)));
}
