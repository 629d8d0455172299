#include "random_workload.hpp"

#include <cmath>
#include <random>

namespace streampool::gpubench {

std::size_t log_uniform_bytes(std::uint64_t draw) {
  // 53 high bits give a double in [0, 1) exactly; 2^16 is the span 256 B .. 16 MiB.
  const double unit = static_cast<double>(draw >> 11) * 0x1.0p-53;
  const double span_log2 = std::log2(static_cast<double>(kRandomMaxBytes / kRandomMinBytes));
  const double bytes = static_cast<double>(kRandomMinBytes) * std::exp2(unit * span_log2);
  const auto whole = static_cast<std::size_t>(bytes);
  return whole < kRandomMinBytes ? kRandomMinBytes : (whole > kRandomMaxBytes ? kRandomMaxBytes : whole);
}

RandomWorkload make_random_workload(std::uint64_t seed, std::size_t operations) {
  std::mt19937_64 generator(seed);
  RandomWorkload workload;
  workload.initial_bytes.reserve(kRandomLiveSlots);
  for (std::size_t slot = 0; slot < kRandomLiveSlots; ++slot) {
    workload.initial_bytes.push_back(log_uniform_bytes(generator()));
  }
  workload.victim_slot.reserve(operations);
  workload.next_bytes.reserve(operations);
  for (std::size_t op = 0; op < operations; ++op) {
    workload.victim_slot.push_back(static_cast<std::uint32_t>(generator() % kRandomLiveSlots));
    workload.next_bytes.push_back(log_uniform_bytes(generator()));
  }
  return workload;
}

const RandomWorkload& random_workload() {
  static const RandomWorkload workload = make_random_workload(kRandomSeed, kRandomOperations);
  return workload;
}

}  // namespace streampool::gpubench
