// Device variables named by their host shadows (__device__, __constant__, __managed__ variables that
// nvcc registered): their address and size in the current context, and copies to and from them,
// synchronous and in stream order. The module is loaded on first use, as for a launch.
#include "api.hpp"
#include "copy_kinds.hpp"
#include "registry.hpp"

extern "C" {
CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount);
cudaError_t cudaMemcpyToSymbol_ptds(const void* symbol, const void* src, size_t count, size_t offset,
                                    cudaMemcpyKind kind);
cudaError_t cudaMemcpyFromSymbol_ptds(void* dst, const void* symbol, size_t count, size_t offset, cudaMemcpyKind kind);
cudaError_t cudaMemcpyToSymbolAsync_ptsz(const void* symbol, const void* src, size_t count, size_t offset,
                                         cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t cudaMemcpyFromSymbolAsync_ptsz(void* dst, const void* symbol, size_t count, size_t offset,
                                           cudaMemcpyKind kind, cudaStream_t stream);
}

namespace streampool::runtime {
namespace {

// The symbol's address plus `offset`, when [offset, offset + count) lies inside it.
cudaError_t symbol_address(const void* symbol, size_t count, size_t offset, CUdeviceptr* target,
                           std::size_t* size_out = nullptr) noexcept {
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return error;
  std::size_t size = 0;
  if (const cudaError_t error = variable_address(symbol, target, &size); error != cudaSuccess) return error;
  if (offset > size || count > size - offset) return cudaErrorInvalidValue;
  *target += offset;
  if (size_out != nullptr) *size_out = size;
  return cudaSuccess;
}

// A copy to (to_symbol) or from a symbol; `stream` is used when `asynchronous`.
cudaError_t symbol_copy(bool to_symbol, void* memory, const void* symbol, size_t count, size_t offset,
                        cudaMemcpyKind kind, cudaStream_t stream, bool asynchronous, bool per_thread) noexcept {
  if (!(to_symbol ? valid_kind_to_symbol(kind) : valid_kind_from_symbol(kind))) {
    return finish(cudaErrorInvalidMemcpyDirection);
  }
  CUdeviceptr target = 0;
  if (const cudaError_t error = symbol_address(symbol, count, offset, &target); error != cudaSuccess) return finish(error);
  if (count == 0) return cudaSuccess;
  const CUdeviceptr dst = to_symbol ? target : unified_address(memory);
  const CUdeviceptr src = to_symbol ? unified_address(memory) : target;
  if (asynchronous) return finish(cuMemcpyAsync(dst, src, count, driver_stream(stream, per_thread)));
  return finish(per_thread ? cuMemcpy_ptds(dst, src, count) : cuMemcpy(dst, src, count));
}

}  // namespace
}  // namespace streampool::runtime

using namespace streampool::runtime;

CUDART_EXPORT cudaError_t cudaMemcpyToSymbol(const void* symbol, const void* src, size_t count, size_t offset,
                                             cudaMemcpyKind kind) {
  return symbol_copy(true, const_cast<void*>(src), symbol, count, offset, kind, nullptr, false, false);
}
CUDART_EXPORT cudaError_t cudaMemcpyToSymbol_ptds(const void* symbol, const void* src, size_t count, size_t offset,
                                                  cudaMemcpyKind kind) {
  return symbol_copy(true, const_cast<void*>(src), symbol, count, offset, kind, nullptr, false, true);
}

CUDART_EXPORT cudaError_t cudaMemcpyFromSymbol(void* dst, const void* symbol, size_t count, size_t offset,
                                               cudaMemcpyKind kind) {
  return symbol_copy(false, dst, symbol, count, offset, kind, nullptr, false, false);
}
CUDART_EXPORT cudaError_t cudaMemcpyFromSymbol_ptds(void* dst, const void* symbol, size_t count, size_t offset,
                                                    cudaMemcpyKind kind) {
  return symbol_copy(false, dst, symbol, count, offset, kind, nullptr, false, true);
}

CUDART_EXPORT cudaError_t cudaMemcpyToSymbolAsync(const void* symbol, const void* src, size_t count, size_t offset,
                                                  cudaMemcpyKind kind, cudaStream_t stream) {
  return symbol_copy(true, const_cast<void*>(src), symbol, count, offset, kind, stream, true, false);
}
CUDART_EXPORT cudaError_t cudaMemcpyToSymbolAsync_ptsz(const void* symbol, const void* src, size_t count,
                                                       size_t offset, cudaMemcpyKind kind, cudaStream_t stream) {
  return symbol_copy(true, const_cast<void*>(src), symbol, count, offset, kind, stream, true, true);
}

CUDART_EXPORT cudaError_t cudaMemcpyFromSymbolAsync(void* dst, const void* symbol, size_t count, size_t offset,
                                                    cudaMemcpyKind kind, cudaStream_t stream) {
  return symbol_copy(false, dst, symbol, count, offset, kind, stream, true, false);
}
CUDART_EXPORT cudaError_t cudaMemcpyFromSymbolAsync_ptsz(void* dst, const void* symbol, size_t count, size_t offset,
                                                         cudaMemcpyKind kind, cudaStream_t stream) {
  return symbol_copy(false, dst, symbol, count, offset, kind, stream, true, true);
}

CUDART_EXPORT cudaError_t cudaGetSymbolAddress(void** devPtr, const void* symbol) {
  if (devPtr == nullptr) return finish(cudaErrorInvalidValue);
  CUdeviceptr target = 0;
  if (const cudaError_t error = symbol_address(symbol, 0, 0, &target); error != cudaSuccess) return finish(error);
  *devPtr = reinterpret_cast<void*>(target);
  return cudaSuccess;
}

CUDART_EXPORT cudaError_t cudaGetSymbolSize(size_t* size, const void* symbol) {
  if (size == nullptr) return finish(cudaErrorInvalidValue);
  CUdeviceptr target = 0;
  if (const cudaError_t error = symbol_address(symbol, 0, 0, &target, size); error != cudaSuccess) return finish(error);
  return cudaSuccess;
}
