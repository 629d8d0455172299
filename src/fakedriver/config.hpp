// The fake's configuration, read from the environment on first use (never at load time):
//   STREAMPOOL_FAKE_DEVICES  number of fake devices (default 1; 0 makes cuInit fail with NO_DEVICE)
//   STREAMPOOL_FAKE_MEMORY   bytes per device, with an optional K/M/G/T suffix (binary; default 16G)
//   STREAMPOOL_FAKE_REUSE_CONTEXTS  1: a created context takes the handle of the context destroyed
//                            last, on whatever device, as NVIDIA's driver may (its contexts are heap
//                            objects), and a destroyed context's events go with it (their handles
//                            reused too); default 0: a destroyed context's handle stays stale for good
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace fake {

struct Config {
  int device_count = 1;
  std::uint64_t memory_per_device = std::uint64_t{16} << 30;
  bool reuse_context_handles = false;
};

inline constexpr int kMaxDevices = 64;

// "512", "64K", "16G", "1t" -> bytes; nullopt when the text is not such a size.
std::optional<std::uint64_t> parse_byte_size(std::string_view text);

Config read_config_from_environment();

}  // namespace fake
