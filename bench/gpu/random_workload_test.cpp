// The random-size workload must be the one driver-behaviour.md measured NVIDIA's pool on
// (log-uniform 256 B .. 16 MiB, 256 live, 200k operations) and the same sequence in every run.
#include "random_workload.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>

namespace streampool::gpubench {
namespace {

TEST(RandomWorkload, HasTwoHundredFiftySixLiveSlotsAndTwoHundredThousandOperations) {
  const RandomWorkload& work = random_workload();

  EXPECT_EQ(work.initial_bytes.size(), 256u);
  EXPECT_EQ(work.victim_slot.size(), 200'000u);
  EXPECT_EQ(work.next_bytes.size(), 200'000u);
  EXPECT_LT(*std::max_element(work.victim_slot.begin(), work.victim_slot.end()), 256u);
}

TEST(RandomWorkload, EverySizeLiesBetween256BytesAnd16MiB) {
  const RandomWorkload& work = random_workload();

  const auto [smallest, largest] = std::minmax_element(work.next_bytes.begin(), work.next_bytes.end());
  const auto [first_smallest, first_largest] = std::minmax_element(work.initial_bytes.begin(), work.initial_bytes.end());

  EXPECT_GE(std::min(*smallest, *first_smallest), 256u);
  EXPECT_LE(std::max(*largest, *first_largest), std::size_t{16} << 20);
}

TEST(RandomWorkload, SizesAreLogUniformSoAQuarterFallBelow4KiBAndTheMedianIsNear64KiB) {
  const RandomWorkload& work = random_workload();
  std::vector<std::size_t> sorted = work.next_bytes;
  std::sort(sorted.begin(), sorted.end());

  const auto below_4k = static_cast<double>(std::count_if(sorted.begin(), sorted.end(), [](std::size_t bytes) {
                          return bytes < 4096;
                        })) / static_cast<double>(sorted.size());

  EXPECT_NEAR(below_4k, 0.25, 0.01);  // 4 KiB is a quarter of the way from 2^8 to 2^24 in log scale
  EXPECT_GT(sorted[sorted.size() / 2], std::size_t{56} << 10);
  EXPECT_LT(sorted[sorted.size() / 2], std::size_t{74} << 10);
}

TEST(RandomWorkload, DrawsMapTheEndsOfTheUnitIntervalToTheEndsOfTheRange) {
  EXPECT_EQ(log_uniform_bytes(0), 256u);
  EXPECT_GT(log_uniform_bytes(std::numeric_limits<std::uint64_t>::max()), (std::size_t{16} << 20) - 1024);
  EXPECT_LE(log_uniform_bytes(std::numeric_limits<std::uint64_t>::max()), std::size_t{16} << 20);
}

TEST(RandomWorkload, VictimSlotsComeFromTheFixedSeedSoEveryRunReplaysTheSameSequence) {
  const RandomWorkload& work = random_workload();
  std::uint64_t hash = 0;
  for (std::uint32_t slot : work.victim_slot) hash = hash * 31 + slot;

  // mt19937_64's output is fixed by the C++ standard, so this value holds on every machine.
  EXPECT_EQ(work.victim_slot[0], 68u);
  EXPECT_EQ(work.victim_slot[1], 15u);
  EXPECT_EQ(hash, 9106704257928714819ULL);
}

}  // namespace
}  // namespace streampool::gpubench
