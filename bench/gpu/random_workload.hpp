// The random-size workload of driver-behaviour.md ("Sizes, rounding, growth"): sizes log-uniform in
// 256 B .. 16 MiB, 256 live allocations, 200k operations. Each operation frees one live slot and
// refills it with the next size. The sequence comes from a fixed seed and from nothing that the
// C++ library may implement differently (mt19937_64's output is fixed by the standard; no
// std::*_distribution), so the plain run and the preloaded run replay exactly the same requests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace streampool::gpubench {

inline constexpr std::size_t kRandomLiveSlots = 256;
inline constexpr std::size_t kRandomOperations = 200'000;
inline constexpr std::size_t kRandomMinBytes = 256;
inline constexpr std::size_t kRandomMaxBytes = std::size_t{16} << 20;
inline constexpr std::uint64_t kRandomSeed = 0x5eed'57'2e'a4'9001ULL;

struct RandomWorkload {
  // initial_bytes[i] fills slot i before the timed part.
  std::vector<std::size_t> initial_bytes;
  // Operation k frees slot victim_slot[k] and allocates next_bytes[k] into it.
  std::vector<std::uint32_t> victim_slot;
  std::vector<std::size_t> next_bytes;
};

// Built once per process; every call returns the same object.
const RandomWorkload& random_workload();
// The same kind of sequence from another seed (random_workload() is seed kRandomSeed,
// kRandomOperations operations): what a placement does to frag_ratio is shown on many.
RandomWorkload make_random_workload(std::uint64_t seed, std::size_t operations);

// Exposed for the sanity checks: one log-uniform size from one 64-bit draw.
std::size_t log_uniform_bytes(std::uint64_t draw);

}  // namespace streampool::gpubench
