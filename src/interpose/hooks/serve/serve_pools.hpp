// The serving pools and the pitch rule, for serve_malloc.cpp.
#pragma once

#include <cstddef>

#include "core/engine.hpp"
#include "driver/cuda_compat.hpp"

namespace streampool::interpose::serve_hooks {

// The pool that serves `device`'s cuMemAlloc, created on first use (serve_pools.cpp).
CUresult serving_pool(CUdevice device, core::Pool** pool) noexcept;

// The driver's row alignment for cuMemAllocPitch on `device`, asked of the driver once
// (serve_pitch.cpp); 0 with the driver's error in *result when it cannot be learnt.
std::size_t pitch_alignment(CUdevice device, CUresult* result) noexcept;

}  // namespace streampool::interpose::serve_hooks
