// RegionSet: which address ranges belong to some pool. Pools come and go for as long as a
// program runs, so a given-back region's slot must serve the next region: the slots in use stay
// as many as the regions alive at once.
#include <gtest/gtest.h>

#include <cstdint>

#include "core/registries.hpp"

namespace streampool::testing {
namespace {

constexpr std::uintptr_t kRegionBytes = 0x1000;

TEST(RegionSet, RegionsThatComeAndGoNeedOnlyAsManySlotsAsAreAliveAtOnce) {
  core::RegionSet<2> regions;
  for (std::uintptr_t i = 1; i <= 1000; ++i) {
    const std::uintptr_t base = i << 20;
    regions.add(base, kRegionBytes);
    ASSERT_TRUE(regions.contains(base + kRegionBytes - 1)) << "region " << i;
    regions.remove(base);
    ASSERT_FALSE(regions.contains(base)) << "region " << i;
  }
}

TEST(RegionSet, ARemovedRegionIsForgottenWhileOthersStay) {
  core::RegionSet<4> regions;
  regions.add(0x100000, kRegionBytes);
  regions.add(0x200000, kRegionBytes);
  regions.remove(0x100000);
  regions.add(0x300000, kRegionBytes);
  EXPECT_FALSE(regions.contains(0x100000));
  EXPECT_TRUE(regions.contains(0x200000 + kRegionBytes - 1));
  EXPECT_FALSE(regions.contains(0x200000 + kRegionBytes));
  EXPECT_TRUE(regions.contains(0x300000));
}

}  // namespace
}  // namespace streampool::testing
