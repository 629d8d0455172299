#include "graph_params.hpp"

#include "channel_format.hpp"
#include "copy_kinds.hpp"
#include "registry.hpp"

namespace streampool::runtime {
namespace {

// One side of a copy: a host pointer when the kind says host, else a unified address.
void side(const cudaPitchedPtr& pointer, const cudaPos& position, bool host, CUmemorytype* type, const void** host_out,
          CUdeviceptr* device_out, std::size_t* x, std::size_t* y, std::size_t* z, std::size_t* pitch,
          std::size_t* height) noexcept {
  *type = host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_UNIFIED;
  if (host) {
    *host_out = pointer.ptr;
  } else {
    *device_out = reinterpret_cast<CUdeviceptr>(pointer.ptr);
  }
  *x = position.x;  // bytes: linear memory has 1-byte elements
  *y = position.y;
  *z = position.z;
  *pitch = pointer.pitch;
  *height = pointer.ysize;
}

}  // namespace

cudaError_t driver_kernel_params(const KernelLaunchShape& shape, CUDA_KERNEL_NODE_PARAMS* out) noexcept {
  CUfunction function = nullptr;
  if (const cudaError_t error = resolve_function(shape.func, &function); error != cudaSuccess) return error;
  *out = CUDA_KERNEL_NODE_PARAMS{};
  out->func = function;
  out->gridDimX = shape.grid.x;
  out->gridDimY = shape.grid.y;
  out->gridDimZ = shape.grid.z;
  out->blockDimX = shape.block.x;
  out->blockDimY = shape.block.y;
  out->blockDimZ = shape.block.z;
  out->sharedMemBytes = shape.shared_bytes;
  out->kernelParams = shape.params;
  out->extra = shape.extra;
  return cudaSuccess;
}

// An array side: positions and the width are in elements there; the driver counts x in bytes.
cudaError_t array_side(cudaArray_const_t array, const cudaPos& position, CUmemorytype* type, CUarray* handle,
                       std::size_t* x, std::size_t* y, std::size_t* z, std::size_t* element) noexcept {
  CUDA_ARRAY3D_DESCRIPTOR descriptor{};
  if (cuArray3DGetDescriptor(&descriptor, driver_array(array)) != CUDA_SUCCESS) return cudaErrorInvalidResourceHandle;
  *element = element_bytes(descriptor.Format, descriptor.NumChannels);
  if (*element == 0) return cudaErrorInvalidValue;
  *type = CU_MEMORYTYPE_ARRAY;
  *handle = driver_array(array);
  *x = position.x * *element;
  *y = position.y;
  *z = position.z;
  return cudaSuccess;
}

cudaError_t driver_copy_3d(const cudaMemcpy3DParms& params, CUDA_MEMCPY3D* out) noexcept {
  if (!valid_kind(params.kind)) return cudaErrorInvalidMemcpyDirection;
  const bool src_host = host_side(params.kind, true);
  const bool dst_host = host_side(params.kind, false);
  *out = CUDA_MEMCPY3D{};
  // The extent is in elements when an array takes part, else in bytes.
  std::size_t element = 1;
  if (params.srcArray != nullptr) {
    if (const cudaError_t error = array_side(params.srcArray, params.srcPos, &out->srcMemoryType, &out->srcArray,
                                             &out->srcXInBytes, &out->srcY, &out->srcZ, &element);
        error != cudaSuccess) {
      return error;
    }
  } else {
    side(params.srcPtr, params.srcPos, src_host, &out->srcMemoryType, &out->srcHost, &out->srcDevice,
         &out->srcXInBytes, &out->srcY, &out->srcZ, &out->srcPitch, &out->srcHeight);
  }
  if (params.dstArray != nullptr) {
    if (const cudaError_t error = array_side(params.dstArray, params.dstPos, &out->dstMemoryType, &out->dstArray,
                                             &out->dstXInBytes, &out->dstY, &out->dstZ, &element);
        error != cudaSuccess) {
      return error;
    }
  } else {
    const void* dst_host_pointer = nullptr;
    side(params.dstPtr, params.dstPos, dst_host, &out->dstMemoryType, &dst_host_pointer, &out->dstDevice,
         &out->dstXInBytes, &out->dstY, &out->dstZ, &out->dstPitch, &out->dstHeight);
    out->dstHost = const_cast<void*>(dst_host_pointer);
  }
  out->WidthInBytes = params.extent.width * element;
  out->Height = params.extent.height;
  out->Depth = params.extent.depth;
  return cudaSuccess;
}

cudaError_t driver_copy_1d(void* dst, const void* src, std::size_t count, cudaMemcpyKind kind, CUDA_MEMCPY3D* out) noexcept {
  cudaMemcpy3DParms params{};
  params.srcPtr = cudaPitchedPtr{const_cast<void*>(src), count, count, 1};
  params.dstPtr = cudaPitchedPtr{dst, count, count, 1};
  params.extent = cudaExtent{count, 1, 1};
  params.kind = kind;
  return driver_copy_3d(params, out);
}

CUDA_MEMSET_NODE_PARAMS driver_memset(const cudaMemsetParams& params) noexcept {
  CUDA_MEMSET_NODE_PARAMS converted{};
  converted.dst = reinterpret_cast<CUdeviceptr>(params.dst);
  converted.pitch = params.pitch;
  converted.value = params.value;
  converted.elementSize = params.elementSize;
  converted.width = params.width;
  converted.height = params.height;
  return converted;
}

namespace {

// One side of a driver copy back as the runtime's: an array (x from bytes to elements), or a pointer.
cudaError_t side_back(CUmemorytype type, const void* host, CUdeviceptr device, CUarray array, std::size_t x,
                      std::size_t y, std::size_t z, std::size_t pitch, std::size_t height, std::size_t width_bytes,
                      cudaArray_t* array_out, cudaPos* position, cudaPitchedPtr* pointer, std::size_t* element) noexcept {
  if (type == CU_MEMORYTYPE_ARRAY) {
    CUDA_ARRAY3D_DESCRIPTOR descriptor{};
    if (cuArray3DGetDescriptor(&descriptor, array) != CUDA_SUCCESS) return cudaErrorInvalidResourceHandle;
    *element = element_bytes(descriptor.Format, descriptor.NumChannels);
    if (*element == 0) return cudaErrorInvalidValue;
    *array_out = reinterpret_cast<cudaArray_t>(array);
    *position = cudaPos{x / *element, y, z};
    return cudaSuccess;
  }
  void* address = type == CU_MEMORYTYPE_HOST ? const_cast<void*>(host) : reinterpret_cast<void*>(device);
  *pointer = cudaPitchedPtr{address, pitch, width_bytes, height};
  *position = cudaPos{x, y, z};
  return cudaSuccess;
}

}  // namespace

cudaError_t runtime_copy_3d(const CUDA_MEMCPY3D& copy, cudaMemcpy3DParms* out) noexcept {
  *out = cudaMemcpy3DParms{};
  std::size_t element = 1;
  if (const cudaError_t error =
          side_back(copy.srcMemoryType, copy.srcHost, copy.srcDevice, copy.srcArray, copy.srcXInBytes, copy.srcY,
                    copy.srcZ, copy.srcPitch, copy.srcHeight, copy.WidthInBytes, &out->srcArray, &out->srcPos,
                    &out->srcPtr, &element);
      error != cudaSuccess) {
    return error;
  }
  if (const cudaError_t error =
          side_back(copy.dstMemoryType, copy.dstHost, copy.dstDevice, copy.dstArray, copy.dstXInBytes, copy.dstY,
                    copy.dstZ, copy.dstPitch, copy.dstHeight, copy.WidthInBytes, &out->dstArray, &out->dstPos,
                    &out->dstPtr, &element);
      error != cudaSuccess) {
    return error;
  }
  out->extent = cudaExtent{copy.WidthInBytes / element, copy.Height, copy.Depth};
  const bool src_host = copy.srcMemoryType == CU_MEMORYTYPE_HOST;
  const bool dst_host = copy.dstMemoryType == CU_MEMORYTYPE_HOST;
  out->kind = src_host ? (dst_host ? cudaMemcpyHostToHost : cudaMemcpyHostToDevice)
                       : (dst_host ? cudaMemcpyDeviceToHost : cudaMemcpyDefault);
  return cudaSuccess;
}

CUcontext current_context() noexcept {
  CUcontext context = nullptr;
  if (cuCtxGetCurrent(&context) != CUDA_SUCCESS) return nullptr;
  return context;
}

cudaError_t driver_kernel_params(const cudaKernelNodeParams* params, CUDA_KERNEL_NODE_PARAMS* out) noexcept {
  if (params == nullptr) return cudaErrorInvalidValue;
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return error;
  const KernelLaunchShape shape{params->func,           params->gridDim,      params->blockDim,
                                params->sharedMemBytes, params->kernelParams, params->extra};
  return driver_kernel_params(shape, out);
}

}  // namespace streampool::runtime
