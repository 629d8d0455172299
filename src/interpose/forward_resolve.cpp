// The slow path of the generated trampolines: on a name's first call its resolver (assembly, all
// argument registers saved) asks here where to go, stores the answer in the name's slot, and jumps.
// Later calls jump straight through the slot. Racing first calls store the same answer.
#include <cuda.h>

#include <cstdint>

#include "entry_points.hpp"
#include "log.hpp"
#include "real_library.hpp"

extern "C" {

// Stand-ins the slot points at when there is nothing to forward to. Called with the caller's
// arguments, which they ignore (the System V and AAPCS64 callers own their argument space).
__attribute__((visibility("hidden"))) CUresult spi_no_real_driver() noexcept { return CUDA_ERROR_NO_DEVICE; }
__attribute__((visibility("hidden"))) CUresult spi_symbol_not_in_driver() noexcept { return CUDA_ERROR_NOT_FOUND; }

__attribute__((visibility("hidden"))) void* spi_forward_resolve(std::uint32_t index) noexcept {
  using streampool::driver::real_library;
  using streampool::driver::real_symbol;
  const char* name = spi_symbol_names[index];
  if (real_library() == nullptr) {
    // Not cached: during the driver search itself (a candidate calling back into us) the answer
    // is only provisional. Without a driver every call takes this path, which costs nothing that matters.
    return reinterpret_cast<void*>(&spi_no_real_driver);
  }
  void* target = real_symbol(name);
  if (target == nullptr) {
    STREAMPOOL_LOG_WARN("%s: not in the real driver, answering CUDA_ERROR_NOT_FOUND", name);
    target = reinterpret_cast<void*>(&spi_symbol_not_in_driver);
  }
  __atomic_store_n(&spi_forward_slots[index], target, __ATOMIC_RELEASE);
  return target;
}

}  // extern "C"
