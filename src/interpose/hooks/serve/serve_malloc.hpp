// STREAMPOOL_SERVE_MALLOC=1: the driver's synchronous allocations (cuMemAlloc_v2,
// cuMemAllocPitch_v2, and cudart's cudaMalloc, cudaMallocPitch and cudaFree, which reach them)
// served from a pool of streampool's per device, so that the process cap (STREAMPOOL_LIMIT) and the
// group budget count them as pool memory, once, with everything else.
//
// The calls keep their synchronous promise: an allocation only gets memory no stream's work can
// still touch (serve_pools.cpp says how), and cuMemFree waits for the block's context as the
// driver's does before the block can be reused. Errors the driver would answer (no context, a size
// of 0, a bad element size) are the driver's: those calls are forwarded as they are.
//
// Off the stream-ordered fast path: the hooks of memory_hooks.cpp and pointer_hooks.cpp call in
// here only when the setting is on (memory_hooks) or the pointer is a pool's (pointer_hooks).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/engine.hpp"
#include "driver/cuda_compat.hpp"

namespace streampool::interpose::serve_hooks {

// Whether STREAMPOOL_SERVE_MALLOC asked for it (read once).
bool enabled() noexcept;

// cuMemAlloc_v2 and cuMemAllocPitch_v2, served.
CUresult mem_alloc(CUdeviceptr* dptr, std::size_t bytes) noexcept;
CUresult mem_alloc_pitch(CUdeviceptr* dptr, std::size_t* pitch, std::size_t width, std::size_t height,
                         unsigned element_bytes) noexcept;

// Whether a block lives in a pool that serves cuMemAlloc (never true with the setting off).
bool is_serving_pool(const core::Pool* pool) noexcept;
// cuMemFree_v2 of a served block (`info` is its lookup): waits for its context, frees it, gives
// the memory back to the device.
CUresult mem_free(CUdeviceptr dptr, const core::BlockInfo& info) noexcept;
// The context a served block was served in (null if none is known).
CUcontext context_of(std::uintptr_t base) noexcept;
// A context ended (cuCtxDestroy, primary context reset): the driver would have freed its
// cuMemAlloc memory, so its served blocks are freed, with their charges.
void context_ended(CUcontext context) noexcept;

// For reports: the bytes served and not yet freed on a device. No driver call.
std::uint64_t served_bytes(int device) noexcept;

// The pitch cuMemAllocPitch gives for `width`: the width rounded up to `alignment`, the driver's
// row alignment (serve_pitch.cpp). 0 if it overflows.
std::size_t pitch_for(std::size_t width, std::size_t alignment) noexcept;

}  // namespace streampool::interpose::serve_hooks
