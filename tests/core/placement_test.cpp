// Sizes, rounding and growth: driver-behaviour.md, "Sizes, rounding, growth".
#include <vector>

#include "engine_fixture.hpp"

namespace streampool::testing {
namespace {

using core::PoolAttribute;
using core::Status;

class Placement : public EngineTest {};

TEST_F(Placement, ZeroBytesGivesSuccessAndANullPointer) {
  core::Pool* pool = make_pool();
  void* ptr = reinterpret_cast<void*>(0x1);
  EXPECT_EQ(engine.allocate(pool, 0, kStream1, &ptr), Status::success);
  EXPECT_EQ(ptr, nullptr);
  EXPECT_EQ(reserved(pool), 0u);
}

TEST_F(Placement, UsedBytesCountTheBytesRequested) {
  core::Pool* pool = make_pool();
  alloc(pool, 1, kStream1);
  EXPECT_EQ(used(pool), 1u);
  alloc(pool, 1, kStream1);
  alloc(pool, 1000, kStream1);
  EXPECT_EQ(used(pool), 1002u);
}

TEST_F(Placement, ConsecutiveSmallAllocationsAre512BytesApart) {
  core::Pool* pool = make_pool();
  const std::uintptr_t first = alloc(pool, 1, kStream1);
  const std::uintptr_t second = alloc(pool, 1, kStream1);
  const std::uintptr_t third = alloc(pool, 600, kStream1);
  const std::uintptr_t fourth = alloc(pool, 1, kStream1);
  EXPECT_EQ(second - first, 512u);
  EXPECT_EQ(third - second, 512u);
  EXPECT_EQ(fourth - third, 1024u);
}

TEST_F(Placement, FirstAllocationReservesA32MiBChunk) {
  core::Pool* pool = make_pool();
  alloc(pool, 1, kStream1);
  EXPECT_EQ(reserved(pool), 32 * MiB);
}

TEST_F(Placement, GrowthIsContiguousAfterTheFreeTailAndRoundedToTheGranule) {
  core::Pool* pool = make_pool();
  const std::uintptr_t first = alloc(pool, 8 * MiB, kStream1);  // 24 MiB free at the end
  const std::uintptr_t big = alloc(pool, 100 * MiB, kStream1);
  EXPECT_EQ(big, first + 8 * MiB);  // the free tail, then granules mapped right after it
  EXPECT_EQ(reserved(pool), 32 * MiB + 76 * MiB);  // the driver: 128 MiB (whole chunks)
  alloc(pool, 40 * MiB, kStream1);
  EXPECT_EQ(reserved(pool), 108 * MiB + 40 * MiB);
  EXPECT_EQ(last_backing->errors(), 0u);
}

TEST_F(Placement, AFillingPoolGrowsBy32MiBUnitsOfOneMapEach) {
  core::Pool* pool = make_pool();
  for (int i = 0; i < 32; ++i) alloc(pool, 1 * MiB, kStream1);
  EXPECT_EQ(reserved(pool), 32 * MiB);  // the first chunk, granule by granule
  EXPECT_EQ(last_backing->map_calls(), 16u);
  alloc(pool, 1 * MiB, kStream1);  // no free memory left: 32 MiB ahead, one map (the driver: a chunk)
  EXPECT_EQ(reserved(pool), 64 * MiB);
  EXPECT_EQ(last_backing->map_calls(), 17u);
  EXPECT_EQ(last_backing->largest_mapping(), 32 * MiB);
  for (int i = 33; i < 64; ++i) alloc(pool, 1 * MiB, kStream1);  // the unit's rest first
  EXPECT_EQ(reserved(pool), 64 * MiB);  // the driver: two 32 MiB chunks as well
  alloc(pool, 1 * MiB, kStream1);
  EXPECT_EQ(reserved(pool), 96 * MiB);  // the driver: 96 MiB
  EXPECT_EQ(last_backing->map_calls(), 18u);
  EXPECT_EQ(last_backing->errors(), 0u);
}

TEST_F(Placement, AGrowthForFragmentationMapsOnlyTheGranulesNeeded) {
  core::Pool* pool = make_pool();
  std::vector<std::uintptr_t> blocks;
  for (int i = 0; i < 64; ++i) blocks.push_back(alloc(pool, 1 * MiB, kStream1));
  EXPECT_EQ(reserved(pool), 64 * MiB);
  for (int i = 0; i < 32; i += 2) free(blocks[static_cast<std::size_t>(i)], kStream1);  // 16 holes of 1 MiB
  alloc(pool, 2 * MiB, kStream1);  // 16 MiB free, none of it in one piece
  EXPECT_EQ(reserved(pool), 66 * MiB);  // one granule, not 32 MiB ahead
  alloc(pool, 2 * MiB, kStream1);
  EXPECT_EQ(reserved(pool), 68 * MiB);
  EXPECT_EQ(last_backing->map_calls(), 16u + 1u + 2u);
  EXPECT_EQ(last_backing->errors(), 0u);
}

TEST_F(Placement, LargeGrowthMapsInLargeUnitsAndGivesThemBackWhole) {
  core::Pool* pool = make_pool();
  const std::uintptr_t big = alloc(pool, 2048 * MiB + 3 * MiB, kStream1);
  EXPECT_EQ(reserved(pool), 2048 * MiB + 4 * MiB);
  EXPECT_EQ(last_backing->largest_mapping(), 256 * MiB);
  EXPECT_EQ(last_backing->map_calls(), 8u + 2u);  // eight 256 MiB units, then two granules
  free(big, kStream1);
  synchronize(kStream1);  // threshold 0: everything goes back, each unit whole
  EXPECT_EQ(reserved(pool), 0u);
  EXPECT_EQ(last_backing->mapped_bytes(), 0u);
  EXPECT_EQ(last_backing->errors(), 0u);
}

// Pools shared between processes: an importer maps whole physical allocations, so no two
// allocations may share one (PoolProps::exclusive_granules).
core::PoolProps exclusive_granule_props() {
  core::PoolProps props;
  props.handle_types = 1;
  props.exclusive_granules = true;
  return props;
}

TEST_F(Placement, AnExclusiveGranulePoolPlacesEveryAllocationInGranulesOfItsOwn) {
  core::Pool* pool = make_pool(exclusive_granule_props());
  const std::uintptr_t first = alloc(pool, 1 * MiB, kStream1);
  const std::uintptr_t second = alloc(pool, 1 * MiB, kStream1);
  const std::uintptr_t third = alloc(pool, 4 * KiB, kStream1);
  const std::uintptr_t fourth = alloc(pool, 3 * MiB, kStream1);
  const std::uintptr_t fifth = alloc(pool, 1, kStream1);
  EXPECT_EQ(first % (2 * MiB), 0u);
  EXPECT_EQ(second - first, 2 * MiB);
  EXPECT_EQ(third - second, 2 * MiB);
  EXPECT_EQ(fourth - third, 2 * MiB);
  EXPECT_EQ(fifth - fourth, 4 * MiB);
  EXPECT_EQ(used(pool), 5 * MiB + 4 * KiB + 1);
}

TEST_F(Placement, AnExclusiveGranulePoolReusesAFreedBlockWithoutSharingItsGranule) {
  core::Pool* pool = make_pool(exclusive_granule_props());
  const std::uintptr_t first = alloc(pool, 1 * MiB, kStream1);
  free(first, kStream1);
  const std::uintptr_t small = alloc(pool, 4 * KiB, kStream1);
  const std::uintptr_t next = alloc(pool, 4 * KiB, kStream1);
  EXPECT_EQ(small, first);          // the freed granule serves the next request
  EXPECT_EQ(next - small, 2 * MiB);  // and nothing else lands in it
}

TEST_F(Placement, AnExclusiveGranulePoolMapsLargeGrowthGranuleByGranule) {
  core::Pool* pool = make_pool(exclusive_granule_props());
  const std::uintptr_t big = alloc(pool, 100 * MiB, kStream1);
  EXPECT_EQ(last_backing->largest_mapping(), 2 * MiB);
  EXPECT_EQ(last_backing->map_calls(), 50u);
  free(big, kStream1);
  const std::uintptr_t a = alloc(pool, 1 * MiB, kStream1);
  const std::uintptr_t b = alloc(pool, 1 * MiB, kStream1);
  EXPECT_EQ(b - a, 2 * MiB);
}

TEST_F(Placement, MaxSizeIsRoundedUpToTheChunk) {
  core::PoolProps props;
  props.max_size = 1000;
  core::Pool* pool = make_pool(props);
  std::uintptr_t address = 0;
  EXPECT_EQ(try_alloc(pool, 4 * KiB, kStream1, &address), Status::success);
  EXPECT_EQ(try_alloc(pool, 8 * MiB, kStream1, &address), Status::success);
  EXPECT_EQ(try_alloc(pool, 64 * MiB, kStream1, &address), Status::out_of_memory);
  EXPECT_EQ(address, 0u);
  EXPECT_EQ(attribute<std::uint64_t>(pool, PoolAttribute::max_pool_size), 32 * MiB);
}

TEST_F(Placement, CappedPoolRefusesWhatWouldExceedItsMaxSize) {
  core::PoolProps props;
  props.max_size = 64 * MiB;
  core::Pool* pool = make_pool(props);
  std::uintptr_t address = 0;
  EXPECT_EQ(try_alloc(pool, 40 * MiB, kStream1, &address), Status::success);
  EXPECT_EQ(try_alloc(pool, 40 * MiB, kStream1, &address), Status::out_of_memory);
  EXPECT_LE(reserved(pool), 64 * MiB);
}

TEST_F(Placement, ARequestLargerThanTheDeviceFailsAndLeavesThePoolUnchanged) {
  InMemoryBacking::Config config;
  config.physical_bytes = 256 * MiB;
  core::Pool* pool = make_pool({}, config);
  alloc(pool, 1 * MiB, kStream1);
  const core::PoolStats before = engine.stats(pool);
  std::uintptr_t address = 0x1;
  EXPECT_EQ(try_alloc(pool, 1024 * MiB, kStream1, &address), Status::out_of_memory);
  EXPECT_EQ(address, 0u);
  const core::PoolStats after = engine.stats(pool);
  EXPECT_EQ(after.reserved_current, before.reserved_current);  // the driver keeps ~all of it
  EXPECT_EQ(after.reserved_high, before.reserved_high);
  EXPECT_EQ(after.used_current, before.used_current);
  EXPECT_EQ(after.used_high, before.used_high);
  EXPECT_EQ(try_alloc(pool, 16 * MiB, kStream1, &address), Status::success);  // the next one works
}

TEST_F(Placement, ARequestTooLargeToRoundFailsCleanly) {
  core::Pool* pool = make_pool();
  std::uintptr_t address = 0x1;
  EXPECT_EQ(try_alloc(pool, SIZE_MAX, kStream1, &address), Status::out_of_memory);
  EXPECT_EQ(address, 0u);
  EXPECT_EQ(reserved(pool), 0u);
}

TEST_F(Placement, LookupFindsTheAllocationFromAnInteriorPointer) {
  core::Pool* pool = make_pool();
  const std::uintptr_t block = alloc(pool, 1 * MiB, kStream1);
  core::BlockInfo info;
  ASSERT_TRUE(engine.lookup(reinterpret_cast<void*>(block + 100), &info));
  EXPECT_EQ(info.base, block);
  EXPECT_EQ(info.requested_bytes, 1 * MiB);
  EXPECT_EQ(info.pool, pool);
  EXPECT_TRUE(engine.owns(reinterpret_cast<void*>(block)));
  EXPECT_FALSE(engine.owns(reinterpret_cast<void*>(0x1234)));
}

}  // namespace
}  // namespace streampool::testing
