// Batches in stream order: copies between pointers (cudaMemcpyBatchAsync), 3D copies between pointers
// and arrays (cudaMemcpy3DBatchAsync), and prefetches and discards of managed ranges
// (cudaMemPrefetchBatchAsync, cudaMemDiscardBatchAsync, cudaMemDiscardAndPrefetchBatchAsync). The
// runtime's structures are the driver's, field for field (checked below), so each is a single driver
// call on the same arrays; the driver checks the batch (stream, counts, attributes) as cudart leaves it to.
#include <cstddef>

#include "api.hpp"

extern "C" {
cudaError_t cudaMemcpyBatchAsync_ptsz(void* const* dsts, const void* const* srcs, const size_t* sizes, size_t count,
                                      cudaMemcpyAttributes* attrs, size_t* attrsIdxs, size_t numAttrs,
                                      cudaStream_t stream);
cudaError_t cudaMemcpy3DBatchAsync_ptsz(size_t numOps, cudaMemcpy3DBatchOp* opList, unsigned long long flags,
                                        cudaStream_t stream);
cudaError_t cudaMemPrefetchBatchAsync_ptsz(void** dptrs, size_t* sizes, size_t count, cudaMemLocation* prefetchLocs,
                                           size_t* prefetchLocIdxs, size_t numPrefetchLocs, unsigned long long flags,
                                           cudaStream_t stream);
cudaError_t cudaMemDiscardBatchAsync_ptsz(void** dptrs, size_t* sizes, size_t count, unsigned long long flags,
                                          cudaStream_t stream);
cudaError_t cudaMemDiscardAndPrefetchBatchAsync_ptsz(void** dptrs, size_t* sizes, size_t count,
                                                     cudaMemLocation* prefetchLocs, size_t* prefetchLocIdxs,
                                                     size_t numPrefetchLocs, unsigned long long flags,
                                                     cudaStream_t stream);
}

namespace streampool::runtime {
namespace {

static_assert(sizeof(void*) == sizeof(CUdeviceptr));
static_assert(sizeof(cudaMemLocation) == sizeof(CUmemLocation));
static_assert(sizeof(cudaMemcpyAttributes) == sizeof(CUmemcpyAttributes) &&
              offsetof(cudaMemcpyAttributes, srcLocHint) == offsetof(CUmemcpyAttributes, srcLocHint) &&
              offsetof(cudaMemcpyAttributes, dstLocHint) == offsetof(CUmemcpyAttributes, dstLocHint) &&
              offsetof(cudaMemcpyAttributes, flags) == offsetof(CUmemcpyAttributes, flags));
static_assert(static_cast<int>(cudaMemcpySrcAccessOrderStream) == CU_MEMCPY_SRC_ACCESS_ORDER_STREAM &&
              static_cast<int>(cudaMemcpySrcAccessOrderDuringApiCall) == CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL &&
              static_cast<int>(cudaMemcpySrcAccessOrderAny) == CU_MEMCPY_SRC_ACCESS_ORDER_ANY);
static_assert(static_cast<int>(cudaMemcpyFlagPreferOverlapWithCompute) == CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE);
static_assert(static_cast<int>(cudaMemcpyOperandTypePointer) == CU_MEMCPY_OPERAND_TYPE_POINTER &&
              static_cast<int>(cudaMemcpyOperandTypeArray) == CU_MEMCPY_OPERAND_TYPE_ARRAY);
static_assert(sizeof(cudaMemcpy3DOperand) == sizeof(CUmemcpy3DOperand) &&
              offsetof(cudaMemcpy3DOperand, op.ptr.rowLength) == offsetof(CUmemcpy3DOperand, op.ptr.rowLength) &&
              offsetof(cudaMemcpy3DOperand, op.ptr.layerHeight) == offsetof(CUmemcpy3DOperand, op.ptr.layerHeight) &&
              offsetof(cudaMemcpy3DOperand, op.ptr.locHint) == offsetof(CUmemcpy3DOperand, op.ptr.locHint) &&
              offsetof(cudaMemcpy3DOperand, op.array.offset) == offsetof(CUmemcpy3DOperand, op.array.offset));
static_assert(sizeof(cudaMemcpy3DBatchOp) == sizeof(CUDA_MEMCPY3D_BATCH_OP) &&
              offsetof(cudaMemcpy3DBatchOp, dst) == offsetof(CUDA_MEMCPY3D_BATCH_OP, dst) &&
              offsetof(cudaMemcpy3DBatchOp, extent) == offsetof(CUDA_MEMCPY3D_BATCH_OP, extent) &&
              offsetof(cudaMemcpy3DBatchOp, srcAccessOrder) == offsetof(CUDA_MEMCPY3D_BATCH_OP, srcAccessOrder) &&
              offsetof(cudaMemcpy3DBatchOp, flags) == offsetof(CUDA_MEMCPY3D_BATCH_OP, flags));

// The runtime's arrays as the driver's (same layout; the driver only reads them).
template <class Driver, class Runtime>
Driver* as_driver(Runtime* values) noexcept {
  return reinterpret_cast<Driver*>(const_cast<std::remove_const_t<Runtime>*>(values));
}

cudaError_t copy_batch(void* const* dsts, const void* const* srcs, const size_t* sizes, size_t count,
                       cudaMemcpyAttributes* attrs, size_t* attrsIdxs, size_t numAttrs, cudaStream_t stream,
                       bool per_thread) noexcept {
  // A batch never goes to the legacy stream, and cudart answers cudaErrorInvalidValue for a null
  // stream in the _ptsz form too, where a null stream elsewhere means the per-thread stream.
  if (stream == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuMemcpyBatchAsync(as_driver<CUdeviceptr>(dsts), as_driver<CUdeviceptr>(srcs),
                                             const_cast<size_t*>(sizes), count, as_driver<CUmemcpyAttributes>(attrs),
                                             attrsIdxs, numAttrs, driver_stream(stream, per_thread)));
}

cudaError_t copy_3d_batch(size_t numOps, cudaMemcpy3DBatchOp* opList, unsigned long long flags, cudaStream_t stream,
                          bool per_thread) noexcept {
  STREAMPOOL_WITH_CONTEXT(cuMemcpy3DBatchAsync(numOps, as_driver<CUDA_MEMCPY3D_BATCH_OP>(opList), flags,
                                               driver_stream(stream, per_thread)));
}

cudaError_t prefetch_batch(void** dptrs, size_t* sizes, size_t count, cudaMemLocation* locations, size_t* location_idxs,
                           size_t location_count, unsigned long long flags, cudaStream_t stream,
                           bool per_thread) noexcept {
  STREAMPOOL_WITH_CONTEXT(cuMemPrefetchBatchAsync(as_driver<CUdeviceptr>(dptrs), sizes, count,
                                                  as_driver<CUmemLocation>(locations), location_idxs, location_count,
                                                  flags, driver_stream(stream, per_thread)));
}

cudaError_t discard_batch(void** dptrs, size_t* sizes, size_t count, unsigned long long flags, cudaStream_t stream,
                          bool per_thread) noexcept {
  STREAMPOOL_WITH_CONTEXT(
      cuMemDiscardBatchAsync(as_driver<CUdeviceptr>(dptrs), sizes, count, flags, driver_stream(stream, per_thread)));
}

cudaError_t discard_and_prefetch_batch(void** dptrs, size_t* sizes, size_t count, cudaMemLocation* locations,
                                       size_t* location_idxs, size_t location_count, unsigned long long flags,
                                       cudaStream_t stream, bool per_thread) noexcept {
  STREAMPOOL_WITH_CONTEXT(cuMemDiscardAndPrefetchBatchAsync(as_driver<CUdeviceptr>(dptrs), sizes, count,
                                                            as_driver<CUmemLocation>(locations), location_idxs,
                                                            location_count, flags, driver_stream(stream, per_thread)));
}

}  // namespace
}  // namespace streampool::runtime

using namespace streampool::runtime;

CUDART_EXPORT cudaError_t cudaMemcpyBatchAsync(void* const* dsts, const void* const* srcs, const size_t* sizes,
                                               size_t count, cudaMemcpyAttributes* attrs, size_t* attrsIdxs,
                                               size_t numAttrs, cudaStream_t stream) {
  return copy_batch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, stream, false);
}
CUDART_EXPORT cudaError_t cudaMemcpyBatchAsync_ptsz(void* const* dsts, const void* const* srcs, const size_t* sizes,
                                                    size_t count, cudaMemcpyAttributes* attrs, size_t* attrsIdxs,
                                                    size_t numAttrs, cudaStream_t stream) {
  return copy_batch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, stream, true);
}

CUDART_EXPORT cudaError_t cudaMemcpy3DBatchAsync(size_t numOps, cudaMemcpy3DBatchOp* opList, unsigned long long flags,
                                                 cudaStream_t stream) {
  return copy_3d_batch(numOps, opList, flags, stream, false);
}
CUDART_EXPORT cudaError_t cudaMemcpy3DBatchAsync_ptsz(size_t numOps, cudaMemcpy3DBatchOp* opList,
                                                      unsigned long long flags, cudaStream_t stream) {
  return copy_3d_batch(numOps, opList, flags, stream, true);
}

CUDART_EXPORT cudaError_t cudaMemPrefetchBatchAsync(void** dptrs, size_t* sizes, size_t count,
                                                    cudaMemLocation* prefetchLocs, size_t* prefetchLocIdxs,
                                                    size_t numPrefetchLocs, unsigned long long flags,
                                                    cudaStream_t stream) {
  return prefetch_batch(dptrs, sizes, count, prefetchLocs, prefetchLocIdxs, numPrefetchLocs, flags, stream, false);
}
CUDART_EXPORT cudaError_t cudaMemPrefetchBatchAsync_ptsz(void** dptrs, size_t* sizes, size_t count,
                                                         cudaMemLocation* prefetchLocs, size_t* prefetchLocIdxs,
                                                         size_t numPrefetchLocs, unsigned long long flags,
                                                         cudaStream_t stream) {
  return prefetch_batch(dptrs, sizes, count, prefetchLocs, prefetchLocIdxs, numPrefetchLocs, flags, stream, true);
}

CUDART_EXPORT cudaError_t cudaMemDiscardBatchAsync(void** dptrs, size_t* sizes, size_t count, unsigned long long flags,
                                                   cudaStream_t stream) {
  return discard_batch(dptrs, sizes, count, flags, stream, false);
}
CUDART_EXPORT cudaError_t cudaMemDiscardBatchAsync_ptsz(void** dptrs, size_t* sizes, size_t count,
                                                        unsigned long long flags, cudaStream_t stream) {
  return discard_batch(dptrs, sizes, count, flags, stream, true);
}

CUDART_EXPORT cudaError_t cudaMemDiscardAndPrefetchBatchAsync(void** dptrs, size_t* sizes, size_t count,
                                                              cudaMemLocation* prefetchLocs, size_t* prefetchLocIdxs,
                                                              size_t numPrefetchLocs, unsigned long long flags,
                                                              cudaStream_t stream) {
  return discard_and_prefetch_batch(dptrs, sizes, count, prefetchLocs, prefetchLocIdxs, numPrefetchLocs, flags, stream,
                                    false);
}
CUDART_EXPORT cudaError_t cudaMemDiscardAndPrefetchBatchAsync_ptsz(void** dptrs, size_t* sizes, size_t count,
                                                                   cudaMemLocation* prefetchLocs,
                                                                   size_t* prefetchLocIdxs, size_t numPrefetchLocs,
                                                                   unsigned long long flags, cudaStream_t stream) {
  return discard_and_prefetch_batch(dptrs, sizes, count, prefetchLocs, prefetchLocIdxs, numPrefetchLocs, flags, stream,
                                    true);
}
