// Texel formats: the runtime names a texel by its channels' bit widths and kind
// (cudaChannelFormatDesc), the driver by a format and a channel count. Arrays, texture and surface
// objects all translate through here.
#pragma once

#include "api.hpp"

namespace streampool::runtime {

struct DriverFormat {
  CUarray_format format;
  unsigned channels;
  bool integer;  // integer texels (read as integers unless normalised floats are asked for)
};

// Equal-width channels, x first, of a signed, unsigned or float kind; anything else is
// cudaErrorInvalidChannelDescriptor.
cudaError_t driver_format(const cudaChannelFormatDesc& desc, DriverFormat* out) noexcept;
// The runtime's descriptor of a driver format (kind None for formats it cannot name).
cudaChannelFormatDesc runtime_format(CUarray_format format, unsigned channels) noexcept;
// Bytes of one element (all channels) of a driver format; 0 for formats without whole-byte elements.
std::size_t element_bytes(CUarray_format format, unsigned channels) noexcept;

// The driver's handle of a runtime array: they are the same objects.
inline CUarray driver_array(cudaArray_const_t array) noexcept {
  return reinterpret_cast<CUarray>(const_cast<cudaArray_t>(array));
}

}  // namespace streampool::runtime
