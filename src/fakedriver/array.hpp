// Fake CUDA arrays: host memory laid out row after row (rows of Width elements, Height rows a slice,
// Depth slices; a 1D array has one row, a 2D array one slice). Copies address them like pitched
// memory; textures and surfaces over them are kept, not sampled.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>

namespace fake {

struct ArrayLayout {
  std::uintptr_t base = 0;
  std::size_t pitch = 0;   // bytes of a row
  std::size_t height = 0;  // rows of a slice
  std::size_t depth = 0;   // slices
};

// The layout of a live array; false for an unknown handle.
bool array_layout(CUarray handle, ArrayLayout* layout);

// Arrays made and destroyed by the fake itself (the levels of a mipmapped array, api_mipmap.cpp):
// the same checks as cuArray3DCreate_v2, in the current context.
CUresult create_array(CUarray* out, const CUDA_ARRAY3D_DESCRIPTOR* descriptor);
bool destroy_array(CUarray handle);
// What cuArrayGetMemoryRequirements answers for a live array (its bytes rounded up to
// kArrayAlignment); 0 for an unknown handle.
inline constexpr std::size_t kArrayAlignment = 512;
std::size_t array_required_bytes(CUarray handle);

// Bytes of one channel of an element of `format` (arrays and textures); 0 for a format the fake
// does not know.
inline std::size_t format_bytes(CUarray_format format) {
  switch (format) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8: return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF: return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT: return 4;
    default: return 0;
  }
}

}  // namespace fake
