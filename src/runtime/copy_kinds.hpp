// Which cudaMemcpyKind each copy accepts, as cudart checks it before copying: any kind for plain
// copies (the copy itself goes by unified addressing, so the kind only has to be one); for copies to
// a __device__ variable only those whose destination is device memory (HostToDevice,
// DeviceToDevice, Default), for copies from one only those whose source is (DeviceToHost,
// DeviceToDevice, Default). Anything else is cudaErrorInvalidMemcpyDirection.
#pragma once

#include <cuda_runtime_api.h>

namespace streampool::runtime {

inline bool valid_kind(cudaMemcpyKind kind) noexcept {
  return static_cast<int>(kind) >= cudaMemcpyHostToHost && static_cast<int>(kind) <= cudaMemcpyDefault;
}

// Whether the source (`source`) or the destination side of a copy of `kind` is host memory (the
// 2D, 3D and array copies name the sides' memory types to the driver).
inline bool host_side(cudaMemcpyKind kind, bool source) noexcept {
  switch (kind) {
    case cudaMemcpyHostToHost: return true;
    case cudaMemcpyHostToDevice: return source;
    case cudaMemcpyDeviceToHost: return !source;
    default: return false;
  }
}

inline bool valid_kind_to_symbol(cudaMemcpyKind kind) noexcept {
  return kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice || kind == cudaMemcpyDefault;
}

inline bool valid_kind_from_symbol(cudaMemcpyKind kind) noexcept {
  return kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice || kind == cudaMemcpyDefault;
}

}  // namespace streampool::runtime
