// Attributes: driver-behaviour.md, "Attributes", and the 15 of the spec.
#include "engine_fixture.hpp"

namespace streampool::testing {
namespace {

using core::PoolAttribute;
using core::Status;

class Attributes : public EngineTest {};

TEST_F(Attributes, AFreshPoolAllowsAllThreeKindsOfReuseAndHasThresholdZero) {
  core::Pool* pool = make_pool();
  EXPECT_EQ(attribute<int>(pool, PoolAttribute::reuse_follow_event_dependencies), 1);
  EXPECT_EQ(attribute<int>(pool, PoolAttribute::reuse_allow_opportunistic), 1);
  EXPECT_EQ(attribute<int>(pool, PoolAttribute::reuse_allow_internal_dependencies), 1);
  EXPECT_EQ(attribute<std::uint64_t>(pool, PoolAttribute::release_threshold), 0u);
}

TEST_F(Attributes, FlagsAndThresholdReadBackWhatWasSet) {
  core::Pool* pool = make_pool();
  EXPECT_EQ(set_attribute<int>(pool, PoolAttribute::reuse_allow_opportunistic, 0), Status::success);
  EXPECT_EQ(attribute<int>(pool, PoolAttribute::reuse_allow_opportunistic), 0);
  EXPECT_EQ(set_attribute<std::uint64_t>(pool, PoolAttribute::release_threshold, 123), Status::success);
  EXPECT_EQ(attribute<std::uint64_t>(pool, PoolAttribute::release_threshold), 123u);
}

TEST_F(Attributes, TheFourStatisticsFollowAllocations) {
  core::Pool* pool = make_pool();
  const std::uintptr_t first = alloc(pool, 3000, kStream1);
  alloc(pool, 1000, kStream1);
  free(first, kStream1);
  EXPECT_EQ(attribute<std::uint64_t>(pool, PoolAttribute::used_mem_current), 1000u);
  EXPECT_EQ(attribute<std::uint64_t>(pool, PoolAttribute::used_mem_high), 4000u);
  EXPECT_EQ(attribute<std::uint64_t>(pool, PoolAttribute::reserved_mem_current), 32 * MiB);
  EXPECT_EQ(attribute<std::uint64_t>(pool, PoolAttribute::reserved_mem_high), 32 * MiB);
}

TEST_F(Attributes, SettingAHighWatermarkToZeroResetsItToTheCurrentValue) {
  core::Pool* pool = make_pool();
  const std::uintptr_t first = alloc(pool, 3000, kStream1);
  alloc(pool, 1000, kStream1);
  free(first, kStream1);
  EXPECT_EQ(set_attribute<std::uint64_t>(pool, PoolAttribute::used_mem_high, 0), Status::success);
  EXPECT_EQ(attribute<std::uint64_t>(pool, PoolAttribute::used_mem_high), 1000u);
  synchronize(kStream1);  // threshold 0 releases nothing: 1000 bytes still live
  EXPECT_EQ(set_attribute<std::uint64_t>(pool, PoolAttribute::reserved_mem_high, 0), Status::success);
  EXPECT_EQ(attribute<std::uint64_t>(pool, PoolAttribute::reserved_mem_high), reserved(pool));
}

TEST_F(Attributes, HighWatermarksCanOnlyBeResetToZero) {
  core::Pool* pool = make_pool();
  EXPECT_EQ(set_attribute<std::uint64_t>(pool, PoolAttribute::used_mem_high, 5), Status::invalid_value);
  EXPECT_EQ(set_attribute<std::uint64_t>(pool, PoolAttribute::reserved_mem_high, 5), Status::invalid_value);
}

TEST_F(Attributes, CurrentValuesAndIdentityAreReadOnly) {
  core::Pool* pool = make_pool();
  EXPECT_EQ(set_attribute<std::uint64_t>(pool, PoolAttribute::used_mem_current, 0), Status::invalid_value);
  EXPECT_EQ(set_attribute<std::uint64_t>(pool, PoolAttribute::reserved_mem_current, 0), Status::invalid_value);
  EXPECT_EQ(set_attribute<int>(pool, PoolAttribute::location_id, 0), Status::invalid_value);
  EXPECT_EQ(set_attribute<std::uint64_t>(pool, PoolAttribute::max_pool_size, 0), Status::invalid_value);
}

TEST_F(Attributes, AttributeZeroAndNullValuesAreInvalid) {
  core::Pool* pool = make_pool();
  int value = 0;
  EXPECT_EQ(engine.get_attribute(pool, static_cast<PoolAttribute>(0), &value), Status::invalid_value);
  EXPECT_EQ(engine.get_attribute(pool, static_cast<PoolAttribute>(16), &value), Status::invalid_value);
  EXPECT_EQ(engine.get_attribute(pool, PoolAttribute::release_threshold, nullptr), Status::invalid_value);
  EXPECT_EQ(engine.get_attribute(nullptr, PoolAttribute::release_threshold, &value), Status::invalid_value);
}

TEST_F(Attributes, IdentityAttributesDescribeThePool) {
  core::PoolProps props;
  props.allocation_type = 1;
  props.location_type = 1;
  props.location_id = 3;
  props.handle_types = 1;
  props.max_size = 100 * MiB;
  core::Pool* pool = make_pool(props);
  EXPECT_EQ(attribute<int>(pool, PoolAttribute::allocation_type), 1);
  EXPECT_EQ(attribute<int>(pool, PoolAttribute::export_handle_types), 1);
  EXPECT_EQ(attribute<int>(pool, PoolAttribute::location_id), 3);
  EXPECT_EQ(attribute<int>(pool, PoolAttribute::location_type), 1);
  EXPECT_EQ(attribute<std::uint64_t>(pool, PoolAttribute::max_pool_size), 128 * MiB);
  EXPECT_EQ(attribute<int>(pool, PoolAttribute::hw_decompress_enabled), 0);
  EXPECT_EQ(attribute<int>(pool, PoolAttribute::locality_domain_id), -1);
}

TEST_F(Attributes, AnUncappedPoolReportsMaxSizeZero) {
  core::Pool* pool = make_pool();
  EXPECT_EQ(attribute<std::uint64_t>(pool, PoolAttribute::max_pool_size), 0u);
}

}  // namespace
}  // namespace streampool::testing
