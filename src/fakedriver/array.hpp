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

}  // namespace fake
