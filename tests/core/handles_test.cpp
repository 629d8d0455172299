// Pool handles, bad pointers and peer access: what a program can get wrong, answered with
// an error, never a crash.
#include "engine_fixture.hpp"

namespace streampool::testing {
namespace {

using core::PoolAttribute;
using core::Status;

class Handles : public EngineTest {};

TEST_F(Handles, ADoubleFreeIsInvalid) {
  core::Pool* pool = make_pool();
  const std::uintptr_t block = alloc(pool, 4 * KiB, kStream1);
  free(block, kStream1);
  EXPECT_EQ(engine.free(reinterpret_cast<void*>(block), kStream1), Status::invalid_value);
}

TEST_F(Handles, AnInteriorPointerFreeIsInvalid) {
  core::Pool* pool = make_pool();
  const std::uintptr_t block = alloc(pool, 4 * KiB, kStream1);
  EXPECT_EQ(engine.free(reinterpret_cast<void*>(block + 512), kStream1), Status::invalid_value);
  EXPECT_EQ(used(pool), 4 * KiB);
}

TEST_F(Handles, AGarbageHandleIsNotAPool) {
  EXPECT_FALSE(engine.is_pool(reinterpret_cast<core::Pool*>(0x12345)));
  void* ptr = nullptr;
  EXPECT_EQ(engine.allocate(reinterpret_cast<core::Pool*>(0x12345), 16, kStream1, &ptr), Status::invalid_value);
  EXPECT_EQ(engine.destroy_pool(reinterpret_cast<core::Pool*>(0x12345)), Status::invalid_value);
}

TEST_F(Handles, DestroyingTwiceIsInvalid) {
  core::Pool* pool = make_pool();
  EXPECT_EQ(engine.destroy_pool(pool), Status::success);
  EXPECT_EQ(engine.destroy_pool(pool), Status::invalid_value);
  EXPECT_FALSE(engine.is_pool(pool));
}

TEST_F(Handles, AnAllocationOutlivesItsDestroyedPoolAndIsFreedLater) {
  core::Pool* pool = make_pool();
  const std::uintptr_t block = alloc(pool, 1 * MiB, kStream1);
  EXPECT_EQ(engine.destroy_pool(pool), Status::success);
  EXPECT_TRUE(last_backing->is_mapped(block));
  EXPECT_EQ(engine.free(reinterpret_cast<void*>(block), kStream1), Status::success);
  synchronize(kStream1);
  EXPECT_EQ(last_backing->mapped_bytes(), 0u);
}

TEST_F(Handles, ADestroyedPoolAllocatesNothing) {
  core::Pool* pool = make_pool();
  ASSERT_EQ(engine.destroy_pool(pool), Status::success);
  void* ptr = nullptr;
  EXPECT_EQ(engine.allocate(pool, 16, kStream1, &ptr), Status::invalid_value);
}

TEST_F(Handles, AccessGrantedToAPeerCoversMappedAndLaterGranules) {
  core::Pool* pool = make_pool();
  alloc(pool, 1 * MiB, kStream1);
  const core::AccessDescriptor peer{1, 1, 3};
  EXPECT_EQ(engine.set_access(pool, std::span(&peer, 1)), Status::success);
  EXPECT_EQ(last_backing->set_access_calls(), 1u);
  int flags = 0;
  EXPECT_EQ(engine.get_access(pool, 1, 1, &flags), Status::success);
  EXPECT_EQ(flags, 3);
  EXPECT_EQ(engine.get_access(pool, 1, 0, &flags), Status::success);
  EXPECT_EQ(flags, 3);  // the owner
  EXPECT_EQ(engine.get_access(pool, 1, 2, &flags), Status::success);
  EXPECT_EQ(flags, 0);  // never granted
  const core::AccessDescriptor revoke{1, 1, 0};
  EXPECT_EQ(engine.set_access(pool, std::span(&revoke, 1)), Status::success);
  EXPECT_EQ(engine.get_access(pool, 1, 1, &flags), Status::success);
  EXPECT_EQ(flags, 0);
  EXPECT_EQ(last_backing->errors(), 0u);
}

TEST_F(Handles, PoolsAreIndependent) {
  core::Pool* first = make_pool();
  core::Pool* second = make_pool();
  const std::uintptr_t a = alloc(first, 1 * MiB, kStream1);
  free(a, kStream1);
  EXPECT_NE(alloc(second, 1 * MiB, kStream1), a);
  EXPECT_EQ(used(first), 0u);
  EXPECT_EQ(used(second), 1 * MiB);
}

}  // namespace
}  // namespace streampool::testing

namespace streampool::testing {
namespace {

// is_pool runs on every allocation: it must stay right (and cheap) with many pools alive.
TEST_F(Handles, ThousandsOfPoolsAreEachRecognisedAndForgottenAlone) {
  std::vector<core::Pool*> pools;
  for (int i = 0; i < 3000; ++i) pools.push_back(make_pool());
  for (std::size_t i = 0; i < pools.size(); i += 2) ASSERT_EQ(engine.destroy_pool(pools[i]), Status::success);
  for (std::size_t i = 0; i < pools.size(); ++i) EXPECT_EQ(engine.is_pool(pools[i]), i % 2 == 1) << i;
  EXPECT_FALSE(engine.is_pool(reinterpret_cast<core::Pool*>(0x40)));
}

}  // namespace
}  // namespace streampool::testing
