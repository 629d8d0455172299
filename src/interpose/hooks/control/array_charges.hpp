// CUDA arrays under the process cap (STREAMPOOL_LIMIT): with a cap set, cuArrayCreate_v2 and
// cuArray3DCreate_v2 are charged, as the arrays holder, for the device memory the array takes, and
// refused beyond the cap with CUDA_ERROR_OUT_OF_MEMORY after the pools' cached memory went back;
// cuArrayDestroy and the end of the array's context give back. Without a cap each forwards unchanged.
//
// The size: what the driver reports for a deferred-mapping twin of the same descriptor
// (cuArrayGetMemoryRequirements, CUDA 12+, which NVIDIA's driver answers only for such arrays);
// else the elements' bytes, Width x max(Height,1) x max(Depth,1) x the format's bytes x NumChannels
// (Depth is the layer count of a layered array), not rounded. The driver alone knows the size, so
// the array is made first and destroyed again when the cap cannot take it (as cuMemAllocPitch).
// An array made with CUDA_ARRAY3D_DEFERRED_MAPPING holds no memory and is not charged: what a
// program maps into it comes from cuMemCreate, which the cap counts.
#pragma once

#include <cstdint>

#include "driver/cuda_compat.hpp"

namespace streampool::interpose::control_hooks {

CUresult array_create(CUarray* handle, const CUDA_ARRAY_DESCRIPTOR* descriptor) noexcept;
CUresult array_create_3d(CUarray* handle, const CUDA_ARRAY3D_DESCRIPTOR* descriptor) noexcept;
// Forwarded; gives back only an array this cap charged, and only when the driver destroyed it.
CUresult array_destroy(CUarray handle) noexcept;

// The size the driver reports for a deferred-mapping twin: made by make(&twin), asked by
// ask(&requirements, twin) and destroyed by destroy(twin) at once; 0 where it cannot be made or
// asked. NVIDIA's driver answers the memory-requirements queries only for arrays and mipmapped
// arrays made with CUDA_ARRAY3D_DEFERRED_MAPPING; the twin holds no memory and has the layout of
// the array it stands for.
template <typename Handle, typename Make, typename Ask, typename Destroy>
std::uint64_t deferred_twin_bytes(Make make, Ask ask, Destroy destroy) noexcept {
  Handle twin = nullptr;
  if (make(&twin) != CUDA_SUCCESS || twin == nullptr) return 0;
  CUDA_ARRAY_MEMORY_REQUIREMENTS requirements{};
  const CUresult asked = ask(&requirements, twin);
  destroy(twin);
  return asked == CUDA_SUCCESS ? requirements.size : 0;
}

// The elements' bytes of an array of this descriptor (the rule without the driver's answer).
std::uint64_t array_element_bytes(const CUDA_ARRAY3D_DESCRIPTOR& descriptor) noexcept;

}  // namespace streampool::interpose::control_hooks
