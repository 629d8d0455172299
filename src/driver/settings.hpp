// Process-wide switches read from the environment once, on first use.
#pragma once

namespace streampool::driver {

// STREAMPOOL_DISABLE=1 (any value but "" and "0"): streampool is a pure pass-through. Every entry
// point, cuGetProcAddress included, hands the caller the real driver's answer unchanged.
bool passthrough_requested() noexcept;

}  // namespace streampool::driver
