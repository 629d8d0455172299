// cuMemAllocPitch's pitch, as the driver chooses it.
//
// The driver pads each row to its own row alignment, which no attribute states (TEXTURE_PITCH_
// ALIGNMENT is 32 on current GPUs, and cuMemAllocPitch's pitch is a multiple of 512 there; the fake
// driver pads to 512 too). So it is asked once per device: the pitch of a one-byte, one-row
// cuMemAllocPitch is the alignment, and that allocation is freed at once (the driver's own, never
// counted). Every served pitch is then the width rounded up to it, which is the driver's rule for
// every width (a row never shares its alignment unit with the next).
#include "serve_pools.hpp"

#include "serve_malloc.hpp"
#include "driver/driver_table.hpp"
#include "hooks/process_state.hpp"

namespace streampool::interpose::serve_hooks {

std::size_t pitch_for(std::size_t width, std::size_t alignment) noexcept {
  if (alignment == 0) return 0;
  std::size_t rounded = 0;
  if (__builtin_add_overflow(width, alignment - 1, &rounded)) return 0;
  return rounded / alignment * alignment;
}

std::size_t pitch_alignment(CUdevice device, CUresult* result) noexcept {
  *result = CUDA_SUCCESS;
  if (device < 0 || device >= kMaxDevices) {
    *result = CUDA_ERROR_NOT_SUPPORTED;
    return 0;
  }
  std::atomic<std::size_t>& known = state().serve.pitch_alignment[device];
  std::size_t alignment = known.load(std::memory_order_acquire);
  if (alignment != 0) return alignment;
  const driver::DriverTable& table = driver::real();
  CUdeviceptr probe = 0;
  *result = forward(table.cuMemAllocPitch_v2, &probe, &alignment, std::size_t{1}, std::size_t{1}, 4u);
  if (*result != CUDA_SUCCESS) return 0;
  (void)forward(table.cuMemFree_v2, probe);
  if (alignment == 0) {
    *result = CUDA_ERROR_UNKNOWN;
    return 0;
  }
  known.store(alignment, std::memory_order_release);  // two threads probing learn the same value
  return alignment;
}

}  // namespace streampool::interpose::serve_hooks
