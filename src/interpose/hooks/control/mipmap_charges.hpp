// Mipmapped arrays under the process cap (STREAMPOOL_LIMIT), charged as CUDA arrays are
// (array_charges.hpp) and to the same holder, arrays: the memory is the same kind, texture memory
// the driver lays out itself, and a program moving from one to the other keeps the same count.
// With a cap set, cuMipmappedArrayCreate is charged and refused beyond the cap with
// CUDA_ERROR_OUT_OF_MEMORY after the pools' cached memory went back (the mipmapped array made,
// then destroyed again); cuMipmappedArrayDestroy and the end of its context give back. Without a
// cap each forwards unchanged. cudaMallocMipmappedArray (src/runtime) reaches the same entry.
//
// The size: what the driver reports for a deferred-mapping twin of the same descriptor and levels
// (cuMipmappedArrayGetMemoryRequirements, which NVIDIA's driver answers only for such mipmapped
// arrays); else the levels' elements' bytes summed, each level as the array rule counts it
// (array_element_bytes) with its extent halved from the level above (never below 1; a layered
// array keeps its layer count). A deferred-mapping mipmapped array holds no memory and is not
// charged.
#pragma once

#include <cstdint>

#include "driver/cuda_compat.hpp"

namespace streampool::interpose::control_hooks {

CUresult mipmap_create(CUmipmappedArray* handle, const CUDA_ARRAY3D_DESCRIPTOR* descriptor, unsigned levels) noexcept;
// Forwarded; gives back only a mipmapped array this cap charged, and only when the driver destroyed it.
CUresult mipmap_destroy(CUmipmappedArray handle) noexcept;

// The levels' elements' bytes (the rule without the driver's answer).
std::uint64_t mipmap_element_bytes(const CUDA_ARRAY3D_DESCRIPTOR& descriptor, unsigned levels) noexcept;

}  // namespace streampool::interpose::control_hooks
