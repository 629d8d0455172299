// Questions and settings of a stream beyond creating and ordering work: attributes (the L2 access
// policy window, synchronisation policy, priority ...), id, device, flags and priority in their
// per-thread forms, and the reset of the context's persisting L2 lines. The runtime's attribute ids
// and values are the driver's launch attributes, value for value and byte for byte.
#include "api.hpp"

extern "C" {
cudaError_t cudaStreamGetAttribute_ptsz(cudaStream_t stream, cudaStreamAttrID attr, cudaStreamAttrValue* value);
cudaError_t cudaStreamSetAttribute_ptsz(cudaStream_t stream, cudaStreamAttrID attr, const cudaStreamAttrValue* value);
cudaError_t cudaStreamGetId_ptsz(cudaStream_t hStream, unsigned long long* streamId);
cudaError_t cudaStreamGetDevice_ptsz(cudaStream_t hStream, int* device);
cudaError_t cudaStreamGetFlags_ptsz(cudaStream_t hStream, unsigned int* flags);
cudaError_t cudaStreamGetPriority_ptsz(cudaStream_t hStream, int* priority);
cudaError_t cudaStreamCopyAttributes_ptsz(cudaStream_t dst, cudaStream_t src);
}

namespace streampool::runtime {
namespace {

static_assert(sizeof(cudaStreamAttrValue) == sizeof(CUstreamAttrValue));
static_assert(static_cast<int>(cudaStreamAttributeAccessPolicyWindow) ==
              static_cast<int>(CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW));
static_assert(static_cast<int>(cudaStreamAttributePriority) == static_cast<int>(CU_STREAM_ATTRIBUTE_PRIORITY));

cudaError_t get_attribute(cudaStream_t stream, cudaStreamAttrID attr, cudaStreamAttrValue* value,
                          bool per_thread) noexcept {
  if (value == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuStreamGetAttribute(driver_stream(stream, per_thread), static_cast<CUstreamAttrID>(attr),
                                               reinterpret_cast<CUstreamAttrValue*>(value)));
}

cudaError_t set_attribute(cudaStream_t stream, cudaStreamAttrID attr, const cudaStreamAttrValue* value,
                          bool per_thread) noexcept {
  if (value == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuStreamSetAttribute(driver_stream(stream, per_thread), static_cast<CUstreamAttrID>(attr),
                                               reinterpret_cast<const CUstreamAttrValue*>(value)));
}

cudaError_t stream_id(cudaStream_t stream, unsigned long long* id, bool per_thread) noexcept {
  if (id == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuStreamGetId(driver_stream(stream, per_thread), id));
}

cudaError_t stream_device(cudaStream_t stream, int* device, bool per_thread) noexcept {
  if (device == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuStreamGetDevice(driver_stream(stream, per_thread), device));
}

}  // namespace
}  // namespace streampool::runtime

using namespace streampool::runtime;

CUDART_EXPORT cudaError_t cudaStreamGetAttribute(cudaStream_t stream, cudaStreamAttrID attr,
                                                 cudaStreamAttrValue* value) {
  return get_attribute(stream, attr, value, false);
}
CUDART_EXPORT cudaError_t cudaStreamGetAttribute_ptsz(cudaStream_t stream, cudaStreamAttrID attr,
                                                      cudaStreamAttrValue* value) {
  return get_attribute(stream, attr, value, true);
}
CUDART_EXPORT cudaError_t cudaStreamSetAttribute(cudaStream_t stream, cudaStreamAttrID attr,
                                                 const cudaStreamAttrValue* value) {
  return set_attribute(stream, attr, value, false);
}
CUDART_EXPORT cudaError_t cudaStreamSetAttribute_ptsz(cudaStream_t stream, cudaStreamAttrID attr,
                                                      const cudaStreamAttrValue* value) {
  return set_attribute(stream, attr, value, true);
}
CUDART_EXPORT cudaError_t cudaStreamGetId(cudaStream_t hStream, unsigned long long* streamId) {
  return stream_id(hStream, streamId, false);
}
CUDART_EXPORT cudaError_t cudaStreamGetId_ptsz(cudaStream_t hStream, unsigned long long* streamId) {
  return stream_id(hStream, streamId, true);
}
CUDART_EXPORT cudaError_t cudaStreamGetDevice(cudaStream_t hStream, int* device) {
  return stream_device(hStream, device, false);
}
CUDART_EXPORT cudaError_t cudaStreamGetDevice_ptsz(cudaStream_t hStream, int* device) {
  return stream_device(hStream, device, true);
}
CUDART_EXPORT cudaError_t cudaStreamGetFlags_ptsz(cudaStream_t hStream, unsigned int* flags) {
  if (flags == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuStreamGetFlags(driver_stream(hStream, true), flags));
}
CUDART_EXPORT cudaError_t cudaStreamGetPriority_ptsz(cudaStream_t hStream, int* priority) {
  if (priority == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuStreamGetPriority(driver_stream(hStream, true), priority));
}

CUDART_EXPORT cudaError_t cudaCtxResetPersistingL2Cache() { STREAMPOOL_WITH_CONTEXT(cuCtxResetPersistingL2Cache()); }

CUDART_EXPORT cudaError_t cudaStreamCopyAttributes(cudaStream_t dst, cudaStream_t src) {
  STREAMPOOL_WITH_CONTEXT(cuStreamCopyAttributes(driver_stream(dst, false), driver_stream(src, false)));
}
CUDART_EXPORT cudaError_t cudaStreamCopyAttributes_ptsz(cudaStream_t dst, cudaStream_t src) {
  STREAMPOOL_WITH_CONTEXT(cuStreamCopyAttributes(driver_stream(dst, true), driver_stream(src, true)));
}
