#include "channel_format.hpp"

namespace streampool::runtime {
namespace {

int format_bits(CUarray_format format) noexcept {
  switch (format) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8: return 8;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF: return 16;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT: return 32;
    default: return 0;
  }
}

}  // namespace

cudaError_t driver_format(const cudaChannelFormatDesc& desc, DriverFormat* out) noexcept {
  const int widths[4] = {desc.x, desc.y, desc.z, desc.w};
  unsigned channels = 0;
  while (channels < 4 && widths[channels] != 0) ++channels;
  if (channels == 0 || channels == 3) return cudaErrorInvalidChannelDescriptor;
  for (unsigned index = 0; index < 4; ++index) {
    const bool used = index < channels;
    if ((used && widths[index] != desc.x) || (!used && widths[index] != 0)) return cudaErrorInvalidChannelDescriptor;
  }
  out->channels = channels;
  out->integer = desc.f != cudaChannelFormatKindFloat;
  switch (desc.f) {
    case cudaChannelFormatKindSigned:
      if (desc.x == 8) out->format = CU_AD_FORMAT_SIGNED_INT8;
      else if (desc.x == 16) out->format = CU_AD_FORMAT_SIGNED_INT16;
      else if (desc.x == 32) out->format = CU_AD_FORMAT_SIGNED_INT32;
      else return cudaErrorInvalidChannelDescriptor;
      return cudaSuccess;
    case cudaChannelFormatKindUnsigned:
      if (desc.x == 8) out->format = CU_AD_FORMAT_UNSIGNED_INT8;
      else if (desc.x == 16) out->format = CU_AD_FORMAT_UNSIGNED_INT16;
      else if (desc.x == 32) out->format = CU_AD_FORMAT_UNSIGNED_INT32;
      else return cudaErrorInvalidChannelDescriptor;
      return cudaSuccess;
    case cudaChannelFormatKindFloat:
      if (desc.x == 16) out->format = CU_AD_FORMAT_HALF;
      else if (desc.x == 32) out->format = CU_AD_FORMAT_FLOAT;
      else return cudaErrorInvalidChannelDescriptor;
      return cudaSuccess;
    default:
      return cudaErrorInvalidChannelDescriptor;  // normalised and block-compressed kinds
  }
}

cudaChannelFormatDesc runtime_format(CUarray_format format, unsigned channels) noexcept {
  const int bits = format_bits(format);
  cudaChannelFormatKind kind = cudaChannelFormatKindNone;
  switch (format) {
    case CU_AD_FORMAT_SIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT32: kind = cudaChannelFormatKindSigned; break;
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_UNSIGNED_INT32: kind = cudaChannelFormatKindUnsigned; break;
    case CU_AD_FORMAT_HALF:
    case CU_AD_FORMAT_FLOAT: kind = cudaChannelFormatKindFloat; break;
    default: break;
  }
  return cudaChannelFormatDesc{bits, channels > 1 ? bits : 0, channels > 2 ? bits : 0, channels > 3 ? bits : 0, kind};
}

std::size_t element_bytes(CUarray_format format, unsigned channels) noexcept {
  return static_cast<std::size_t>(format_bits(format) / 8) * channels;
}

}  // namespace streampool::runtime
