// Streams and events. The calls the engine tracks (record, wait, synchronize, query, destroy) reach
// streampool's hooks of the same driver names, as they do under the preload.
#include "api.hpp"

extern "C" {
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream);
cudaError_t cudaStreamQuery_ptsz(cudaStream_t stream);
cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event, unsigned int flags);
cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream);
cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t event, cudaStream_t stream, unsigned int flags);
cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t stream, cudaHostFn_t fn, void* userData);
}

using namespace streampool::runtime;

CUDART_EXPORT cudaError_t cudaStreamCreate(cudaStream_t* pStream) {
  if (pStream == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuStreamCreate(pStream, CU_STREAM_DEFAULT));
}
CUDART_EXPORT cudaError_t cudaStreamCreateWithFlags(cudaStream_t* pStream, unsigned int flags) {
  if (pStream == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuStreamCreate(pStream, flags));
}
CUDART_EXPORT cudaError_t cudaStreamCreateWithPriority(cudaStream_t* pStream, unsigned int flags, int priority) {
  if (pStream == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuStreamCreateWithPriority(pStream, flags, priority));
}
CUDART_EXPORT cudaError_t cudaStreamDestroy(cudaStream_t stream) { STREAMPOOL_WITH_CONTEXT(cuStreamDestroy(stream)); }
CUDART_EXPORT cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  STREAMPOOL_WITH_CONTEXT(cuStreamSynchronize(driver_stream(stream, false)));
}
CUDART_EXPORT cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream) {
  STREAMPOOL_WITH_CONTEXT(cuStreamSynchronize(driver_stream(stream, true)));
}
CUDART_EXPORT cudaError_t cudaStreamQuery(cudaStream_t stream) {
  STREAMPOOL_WITH_CONTEXT(cuStreamQuery(driver_stream(stream, false)));
}
CUDART_EXPORT cudaError_t cudaStreamQuery_ptsz(cudaStream_t stream) {
  STREAMPOOL_WITH_CONTEXT(cuStreamQuery(driver_stream(stream, true)));
}
CUDART_EXPORT cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  STREAMPOOL_WITH_CONTEXT(cuStreamWaitEvent(driver_stream(stream, false), event, flags));
}
CUDART_EXPORT cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  STREAMPOOL_WITH_CONTEXT(cuStreamWaitEvent(driver_stream(stream, true), event, flags));
}
CUDART_EXPORT cudaError_t cudaStreamGetFlags(cudaStream_t hStream, unsigned int* flags) {
  STREAMPOOL_WITH_CONTEXT(cuStreamGetFlags(hStream, flags));
}
CUDART_EXPORT cudaError_t cudaStreamGetPriority(cudaStream_t hStream, int* priority) {
  STREAMPOOL_WITH_CONTEXT(cuStreamGetPriority(hStream, priority));
}
CUDART_EXPORT cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* userData) {
  STREAMPOOL_WITH_CONTEXT(cuLaunchHostFunc(driver_stream(stream, false), fn, userData));
}
CUDART_EXPORT cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t stream, cudaHostFn_t fn, void* userData) {
  STREAMPOOL_WITH_CONTEXT(cuLaunchHostFunc(driver_stream(stream, true), fn, userData));
}

CUDART_EXPORT cudaError_t cudaEventCreate(cudaEvent_t* event) {
  if (event == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuEventCreate(event, CU_EVENT_DEFAULT));
}
CUDART_EXPORT cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  if (event == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuEventCreate(event, flags));
}
CUDART_EXPORT cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  STREAMPOOL_WITH_CONTEXT(cuEventRecord(event, driver_stream(stream, false)));
}
CUDART_EXPORT cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream) {
  STREAMPOOL_WITH_CONTEXT(cuEventRecord(event, driver_stream(stream, true)));
}
// Flags: cudaEventRecordDefault or cudaEventRecordExternal (the driver's values).
CUDART_EXPORT cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int flags) {
  STREAMPOOL_WITH_CONTEXT(cuEventRecordWithFlags(event, driver_stream(stream, false), flags));
}
CUDART_EXPORT cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t event, cudaStream_t stream, unsigned int flags) {
  STREAMPOOL_WITH_CONTEXT(cuEventRecordWithFlags(event, driver_stream(stream, true), flags));
}
CUDART_EXPORT cudaError_t cudaEventQuery(cudaEvent_t event) { STREAMPOOL_WITH_CONTEXT(cuEventQuery(event)); }
CUDART_EXPORT cudaError_t cudaEventSynchronize(cudaEvent_t event) { STREAMPOOL_WITH_CONTEXT(cuEventSynchronize(event)); }
CUDART_EXPORT cudaError_t cudaEventDestroy(cudaEvent_t event) { STREAMPOOL_WITH_CONTEXT(cuEventDestroy(event)); }
CUDART_EXPORT cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  STREAMPOOL_WITH_CONTEXT(cuEventElapsedTime(ms, start, end));
}

CUDART_EXPORT cudaError_t cudaDriverGetVersion(int* driverVersion) {
  if (driverVersion == nullptr) return finish(cudaErrorInvalidValue);
  *driverVersion = 0;
  // No driver: version 0 and success, as cudart answers.
  if (cuDriverGetVersion(driverVersion) != CUDA_SUCCESS) *driverVersion = 0;
  return cudaSuccess;
}
CUDART_EXPORT cudaError_t cudaRuntimeGetVersion(int* runtimeVersion) {
  if (runtimeVersion == nullptr) return finish(cudaErrorInvalidValue);
  *runtimeVersion = CUDART_VERSION;
  return cudaSuccess;
}
