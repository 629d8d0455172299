// A limit setting (STREAMPOOL_LIMIT, STREAMPOOL_GROUP_LIMIT), parsed and resolved to bytes.
//
// Forms (units are binary and case-insensitive: K, M, G, T, alone or followed by B or iB):
//   40G, 512M, 1.5GiB, 1073741824   one size, the limit of every device;
//   0.3, 30%, 1.0                   a share of each device's total memory (above 0, at most 1);
//   0:40G,1:20G,2:50%               per device; a device not named has no limit.
// A number with a decimal point and no unit is a share; a whole number with no unit is bytes.
// Rejected, with one reason: anything else (`lots`), a zero, a negative or out-of-range share
// (`150%`), a size past 2^64, junk after a value, a device named twice or past kMaxDevices.
//
// The parser knows nothing of CUDA nor of the environment: it reads the text it is given (at most
// kMaxText characters, one pass, no recursion, no allocation) so that both caps and fuzzers use it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "budget.hpp"

namespace streampool::control {

inline constexpr int kMaxDevices = 64;
inline constexpr std::size_t kMaxText = 1024;

// One value: a size in bytes or a share of the device, in millionths (1'000'000 is the whole device).
struct LimitValue {
  enum class Kind : std::uint8_t { none, bytes, share };
  Kind kind = Kind::none;
  std::uint64_t amount = 0;  // bytes, or millionths of the device
};

inline constexpr std::uint64_t kWholeShare = 1'000'000;

struct LimitSpec {
  bool per_device = false;
  LimitValue every;                   // !per_device: the value of every device
  LimitValue devices[kMaxDevices]{};  // per_device: each device's value (kind none: not named)
};

// Parses `text` into `spec`. Null on success; otherwise a reason (a static string: no allocation)
// and `spec` is left with no limit.
const char* parse_limit(std::string_view text, LimitSpec* spec) noexcept;

// The limit of `device` whose total memory is `device_total_bytes`: kNoLimit where the spec sets none.
// A share is rounded down to whole bytes, never to 0 (at least one byte).
std::uint64_t resolve_limit(const LimitSpec& spec, int device, std::uint64_t device_total_bytes) noexcept;

// The first device the spec names at or past `device_count` (-1 if none): entries for devices the
// machine lacks are ignored, and said once, by the caller.
int first_device_missing(const LimitSpec& spec, int device_count) noexcept;

// Whether the spec limits anything at all.
bool limits_anything(const LimitSpec& spec) noexcept;

}  // namespace streampool::control
