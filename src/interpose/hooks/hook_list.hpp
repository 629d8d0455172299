// The entry points streampool defines itself (src/interpose/hooked_symbols.txt, without the two
// cuGetProcAddress names that proc_address.cpp owns), as one list: call counters and the stats
// report are generated from it.
#pragma once

#define STREAMPOOL_HOOKED_ENTRIES(X)                                                              \
  X(cuMemAllocAsync) X(cuMemAllocAsync_ptsz) X(cuMemFreeAsync) X(cuMemFreeAsync_ptsz)             \
  X(cuMemAllocFromPoolAsync) X(cuMemAllocFromPoolAsync_ptsz) X(cuMemPoolCreate)                   \
  X(cuMemPoolDestroy) X(cuMemPoolSetAttribute) X(cuMemPoolGetAttribute) X(cuMemPoolSetAccess)     \
  X(cuMemPoolGetAccess) X(cuMemPoolTrimTo) X(cuMemPoolExportToShareableHandle)                    \
  X(cuMemPoolImportFromShareableHandle) X(cuMemPoolExportPointer) X(cuMemPoolImportPointer)       \
  X(cuDeviceGetDefaultMemPool) X(cuDeviceGetMemPool) X(cuDeviceSetMemPool)                        \
  X(cuMemGetDefaultMemPool) X(cuMemGetMemPool) X(cuMemSetMemPool)                                 \
  X(cuEventRecord) X(cuEventRecord_ptsz) X(cuEventRecordWithFlags) X(cuEventRecordWithFlags_ptsz) \
  X(cuStreamWaitEvent) X(cuStreamWaitEvent_ptsz) X(cuStreamSynchronize)                           \
  X(cuStreamSynchronize_ptsz) X(cuStreamQuery) X(cuStreamQuery_ptsz) X(cuEventSynchronize)        \
  X(cuEventQuery) X(cuCtxSynchronize) X(cuCtxSynchronize_v2) X(cuStreamDestroy)                   \
  X(cuStreamDestroy_v2) X(cuEventDestroy) X(cuEventDestroy_v2) X(cuCtxDestroy_v2)                 \
  X(cuDevicePrimaryCtxReset_v2) X(cuStreamCreate) X(cuStreamCreateWithPriority) X(cuGreenCtxStreamCreate) X(cuEventCreate) X(cuCtxDestroy) X(cuDevicePrimaryCtxReset) X(cuDevicePrimaryCtxRelease) X(cuDevicePrimaryCtxRelease_v2) X(cuGraphAddEventRecordNode) X(cuGraphEventRecordNodeSetEvent) X(cuGraphExecEventRecordNodeSetEvent) X(cuGraphAddNode) X(cuGraphAddNode_v2) X(cuGraphNodeSetParams) X(cuGraphExecNodeSetParams) X(cuLaunchKernelEx) X(cuLaunchKernelEx_ptsz) X(cuCtxRecordEvent) X(cuGreenCtxRecordEvent) X(cuIpcGetEventHandle) X(cuIpcOpenEventHandle) X(cuMemFree_v2) X(cuPointerGetAttribute)                          \
  X(cuPointerGetAttributes) X(cuMemGetAddressRange_v2) X(cuDeviceGetAttribute)                    \
  X(cuStreamBeginCapture) X(cuStreamBeginCapture_ptsz) X(cuStreamBeginCapture_v2)                 \
  X(cuStreamBeginCapture_v2_ptsz) X(cuStreamBeginCaptureToGraph)                                  \
  X(cuStreamBeginCaptureToGraph_ptsz) X(cuStreamEndCapture) X(cuStreamEndCapture_ptsz)           \
  X(cuGetErrorName) X(cuGetErrorString) X(cuMemAlloc_v2) X(cuMemAllocPitch_v2) X(cuMemCreate)          \
  X(cuMemRelease) X(cuMemGetInfo_v2) X(cuArrayCreate_v2) X(cuArray3DCreate_v2) X(cuArrayDestroy)           \
  X(cuMipmappedArrayCreate) X(cuMipmappedArrayDestroy) X(cuGraphInstantiate) X(cuGraphInstantiate_v2) \
  X(cuGraphInstantiateWithFlags) X(cuGraphInstantiateWithParams) X(cuGraphInstantiateWithParams_ptsz) \
  X(cuGraphLaunch) X(cuGraphLaunch_ptsz) X(cuGraphUpload) X(cuGraphUpload_ptsz) X(cuGraphExecDestroy) \
  X(cuDeviceGraphMemTrim) X(cuDeviceSetGraphMemAttribute)

namespace streampool::interpose {

enum class Hook : unsigned {
#define STREAMPOOL_HOOK_ENUM(name) name,
  STREAMPOOL_HOOKED_ENTRIES(STREAMPOOL_HOOK_ENUM)
#undef STREAMPOOL_HOOK_ENUM
      count
};

inline constexpr unsigned kHookCount = static_cast<unsigned>(Hook::count);

const char* hook_name(Hook hook) noexcept;

}  // namespace streampool::interpose
