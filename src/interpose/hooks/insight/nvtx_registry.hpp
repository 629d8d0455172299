// Pool memory described to compute-sanitizer through NVTX's memory API.
//
// To compute-sanitizer a pool is a few large mappings, so a kernel writing past its block into the
// neighbouring block of the same pool is an access to valid memory and goes unseen. With the mode on,
// every mapping a pool makes is registered as an NVTX heap of usage SUB_ALLOCATOR (memcheck then
// treats the parts of it that are no region as unallocated), every allocation the engine hands out as
// a region of the heap that holds it, and frees and unmaps take them out again. The NVTX calls are
// NVIDIA's header-only nvtx3: they reach a tool only through the injection library NVTX_INJECTION64_PATH
// names (compute-sanitizer sets it); without one they return at once. compute-sanitizer takes a heap
// only over memory cuMemAlloc made, not over VMM mappings, so with the mode on pools are backed by
// whole chunks (driver::make_backing's chunks_only), and each block is followed by an unregistered
// guard (nvtx_guarded) so that a write one past it is outside every region.
//
// On: STREAMPOOL_NVTX=1, or, unset, when the process runs under compute-sanitizer (NVTX_INJECTION64_PATH
// names a file whose path contains "sanitizer", which compute-sanitizer's own injection libraries
// have and the other NVTX tools' do not). Off: STREAMPOOL_NVTX=0, or otherwise. The setting is read
// once; off, the allocation and free paths pay one predictable branch (nvtx_enabled()).
//
// The registry is one table of heaps and regions under one lock, held across the NVTX call, so that
// the tool sees the registrations of one address in the order the engine made them: a block freed
// and at once reused by another thread is unregistered before it is registered again. The mode is
// meant for debugging runs; its lock is shared by every thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/backing.hpp"
#include "driver/cuda_compat.hpp"  // before <cuda.h>

#include <cuda.h>

namespace streampool::interpose::insight_hooks {

namespace nvtx_detail {
// -1: not read yet, 0: off, 1: on.
extern std::atomic<int> mode_state;
bool read_mode() noexcept;
}  // namespace nvtx_detail

inline bool nvtx_enabled() noexcept {
  const int state = nvtx_detail::mode_state.load(std::memory_order_relaxed);
  if (state == 0) [[likely]] return false;
  return state == 1 || nvtx_detail::read_mode();
}

// The mode's setting from the two variables' values (nullptr: unset): what read_mode() decides,
// and whether the STREAMPOOL_NVTX value was one it knows.
struct NvtxSetting {
  bool on = false;
  bool valid = true;
};
NvtxSetting nvtx_setting(const char* streampool_nvtx, const char* injection_path) noexcept;

// The bytes to ask the engine for a block of `bytes` with the mode on: the block and a guard after
// it that no region covers. Without it a write one past a block is a write into the next block of
// the same pool, which is a registered region, and memcheck sees nothing (measured on the H200:
// two 1024-byte blocks 1024 bytes apart). The guard costs the pool's statistics that many bytes a
// block: the mode is for debugging runs.
inline constexpr std::size_t kNvtxGuardBytes = 512;
inline std::size_t nvtx_guarded(std::size_t bytes) noexcept {
  return bytes == 0 || bytes > SIZE_MAX - kNvtxGuardBytes ? bytes : bytes + kNvtxGuardBytes;
}

// An allocation of the engine's at `address`: registered as a region of the heap (or, for a block
// across two mappings, of each heap) holding it. Only called with the mode on.
void nvtx_allocated(std::uintptr_t address, std::size_t bytes) noexcept;
// Before the engine takes a free: the region of `address`, if it is one, unregistered. Returns its
// size (0: it was none), for nvtx_allocated to put it back should the engine refuse the free.
std::size_t nvtx_freeing(std::uintptr_t address) noexcept;

// cuMemFreeAsync's order: the region stays while the work queued before the free on its stream
// runs (a kernel in bounds of its block there is no error), and goes when the stream reaches the
// free, through a host function on that stream. The generation, read before the engine takes the
// free, names the region as it was: a block handed out again before its stream reached the free
// is a new region, which that late unregistration leaves alone. Without a host function (the
// call refused) the region goes at once.
std::uint64_t nvtx_region_generation(std::uintptr_t address) noexcept;
void nvtx_freed_in_stream_order(std::uintptr_t address, std::uint64_t generation, CUstream stream) noexcept;

// A mapping made outside any pool's backing (an imported block's) as a heap, and its end.
void nvtx_mapped(std::uintptr_t address, std::size_t bytes) noexcept;
void nvtx_unmapped(std::uintptr_t address) noexcept;

// A pool's backing whose mappings are registered as heaps, with the mode on; `backing` itself
// otherwise.
std::unique_ptr<core::Backing> nvtx_observed(std::unique_ptr<core::Backing> backing);

}  // namespace streampool::interpose::insight_hooks
