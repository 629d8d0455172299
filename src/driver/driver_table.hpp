// The real driver's entry points that streampool calls, typed, under their exact exported
// (versioned) names: the hooked set (each hook forwards to its own real twin) and what the VMM
// backing, the event ordering and the stream registry need.
//
// Resolved once, on first use, through real_symbol(); an entry the real driver lacks stays null
// and callers answer CUDA_ERROR_NOT_SUPPORTED (or CUDA_ERROR_NO_DEVICE when there is no driver at
// all). The table is never destroyed: hooks may run during exit, after static destructors.
#pragma once

#include "cuda_compat.hpp"

// X(name): one entry per exported name. Kept in one list so that the table's members, their types
// and the names they are resolved under can never disagree.
#define STREAMPOOL_DRIVER_ENTRIES(X)                                                            \
  /* the hooked allocator family */                                                             \
  X(cuMemAllocAsync) X(cuMemAllocAsync_ptsz) X(cuMemFreeAsync) X(cuMemFreeAsync_ptsz)           \
  X(cuMemAllocFromPoolAsync) X(cuMemAllocFromPoolAsync_ptsz) X(cuMemPoolCreate)                 \
  X(cuMemPoolDestroy) X(cuMemPoolSetAttribute) X(cuMemPoolGetAttribute) X(cuMemPoolSetAccess)   \
  X(cuMemPoolGetAccess) X(cuMemPoolTrimTo) X(cuMemPoolExportToShareableHandle)                  \
  X(cuMemPoolImportFromShareableHandle) X(cuMemPoolExportPointer) X(cuMemPoolImportPointer)     \
  X(cuDeviceGetDefaultMemPool) X(cuDeviceGetMemPool) X(cuDeviceSetMemPool)                      \
  X(cuMemGetDefaultMemPool) X(cuMemGetMemPool) X(cuMemSetMemPool)                               \
  /* the hooked ordering calls */                                                               \
  X(cuEventRecord) X(cuEventRecord_ptsz) X(cuEventRecordWithFlags)                              \
  X(cuEventRecordWithFlags_ptsz) X(cuStreamWaitEvent) X(cuStreamWaitEvent_ptsz)                 \
  X(cuStreamSynchronize) X(cuStreamSynchronize_ptsz) X(cuStreamQuery) X(cuStreamQuery_ptsz)     \
  X(cuEventSynchronize) X(cuEventQuery) X(cuCtxSynchronize) X(cuCtxSynchronize_v2)              \
  X(cuStreamDestroy) X(cuStreamDestroy_v2) X(cuEventDestroy) X(cuEventDestroy_v2)               \
  X(cuCtxDestroy_v2) X(cuDevicePrimaryCtxReset_v2)                                              \
  X(cuStreamCreate) X(cuStreamCreateWithPriority) X(cuGreenCtxStreamCreate) X(cuCtxDestroy) X(cuDevicePrimaryCtxReset) X(cuDevicePrimaryCtxRelease) X(cuDevicePrimaryCtxRelease_v2) X(cuGraphAddEventRecordNode) X(cuGraphEventRecordNodeSetEvent) X(cuGraphExecEventRecordNodeSetEvent) X(cuGraphAddNode) X(cuGraphAddNode_v2) X(cuGraphNodeSetParams) X(cuGraphExecNodeSetParams) X(cuLaunchKernelEx) X(cuLaunchKernelEx_ptsz) X(cuCtxRecordEvent) X(cuGreenCtxRecordEvent) X(cuIpcGetEventHandle) X(cuIpcOpenEventHandle) \
  /* the hooked pointer calls */                                                                \
  X(cuMemFree_v2) X(cuPointerGetAttribute) X(cuPointerGetAttributes)                            \
  X(cuMemGetAddressRange_v2) X(cuDeviceGetAttribute)                                            \
  /* the hooked capture calls */                                                                \
  X(cuStreamBeginCapture) X(cuStreamBeginCapture_ptsz) X(cuStreamBeginCapture_v2)               \
  X(cuStreamBeginCapture_v2_ptsz) X(cuStreamBeginCaptureToGraph)                                \
  X(cuStreamBeginCaptureToGraph_ptsz) X(cuStreamEndCapture) X(cuStreamEndCapture_ptsz)          \
  /* the hooked error names */                                                                  \
  X(cuGetErrorName) X(cuGetErrorString)                                                         \
  /* what streampool itself needs */                                                            \
  X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceTotalMem_v2) X(cuCtxGetCurrent) X(cuDevicePrimaryCtxGetState)                  \
  X(cuCtxGetDevice) X(cuCtxPushCurrent_v2) X(cuCtxPopCurrent_v2) X(cuDevicePrimaryCtxRetain)    \
  X(cuStreamGetCtx) X(cuStreamGetFlags) X(cuStreamIsCapturing) X(cuStreamIsCapturing_ptsz)      \
  X(cuThreadExchangeStreamCaptureMode) X(cuStreamGetId)                                        \
  X(cuEventCreate) X(cuMemAddressReserve) X(cuMemAddressFree) X(cuMemCreate) X(cuMemRelease)    \
  X(cuMemMap) X(cuMemUnmap) X(cuMemSetAccess) X(cuMemGetAllocationGranularity)                  \
  X(cuMemAlloc_v2) X(cuMemHostAlloc) X(cuMemFreeHost) X(cuMemAllocManaged)                      \
  X(cuMemExportToShareableHandle) X(cuMemImportFromShareableHandle) X(cuLaunchHostFunc)       \
  X(cuMemAllocPitch_v2) X(cuMemGetInfo_v2) X(cuArrayCreate_v2) X(cuArray3DCreate_v2) X(cuArrayDestroy) \
  X(cuArrayGetMemoryRequirements) X(cuMipmappedArrayCreate) X(cuMipmappedArrayDestroy)          \
  X(cuMipmappedArrayGetMemoryRequirements) X(cuMipmappedArrayGetLevel)                           \
  /* graph memory under the cap: the hooked launches and what finds and reads graph memory */     \
  X(cuGraphInstantiate) X(cuGraphInstantiate_v2) X(cuGraphInstantiateWithFlags)                  \
  X(cuGraphInstantiateWithParams) X(cuGraphInstantiateWithParams_ptsz) X(cuGraphLaunch)          \
  X(cuGraphLaunch_ptsz) X(cuGraphUpload) X(cuGraphUpload_ptsz) X(cuGraphExecDestroy)             \
  X(cuDeviceGraphMemTrim) X(cuDeviceGetGraphMemAttribute) X(cuDeviceSetGraphMemAttribute)        \
  X(cuGraphGetNodes) X(cuGraphNodeGetType) X(cuGraphMemAllocNodeGetParams)                       \
  X(cuGraphChildGraphNodeGetGraph)

namespace streampool::driver {

struct DriverTable {
#define STREAMPOOL_DRIVER_MEMBER(name) decltype(&::name) name = nullptr;
  STREAMPOOL_DRIVER_ENTRIES(STREAMPOOL_DRIVER_MEMBER)
#undef STREAMPOOL_DRIVER_MEMBER
  bool have_driver = false;  // a real libcuda was found and opened
};

// The table, resolved on the first call (thread-safe); never null.
const DriverTable& real() noexcept;

// The CUresult to answer when an entry is missing: no driver at all, or a driver too old for it.
CUresult missing_entry_result() noexcept;

}  // namespace streampool::driver
