// Result codes of the engine. The adapters (interposer, runtime) translate them to the CUDA
// error code the real API returns in the same situation; the engine never throws across them.
#pragma once

namespace streampool::core {

enum class Status : int {
  success = 0,
  invalid_value,   // a bad argument: unknown pointer, double free, bad attribute, ...
  out_of_memory,   // the pool cannot grow (max size, device memory) and nothing could be reused
  not_supported,   // the backing or the pool kind cannot do this
  not_ready,       // a marker or stream has work pending (Ordering::query)
  deinitialized,   // the real driver is being torn down: stop quietly
  backend_error,   // the backing or ordering failed for another reason
};

constexpr bool ok(Status status) noexcept { return status == Status::success; }

}  // namespace streampool::core
