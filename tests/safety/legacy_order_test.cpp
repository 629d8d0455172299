// Class 5: reuse through the legacy default stream's implicit synchronisation must put that order
// into the allocating stream itself.
//
// Each test: one stream frees a block behind work that still uses it; the other, implicitly
// synchronised with it (the legacy default stream and a blocking stream, or the legacy and a
// per-thread default stream), allocates the same size and may reuse the block, as NVIDIA's pool
// does. On NVIDIA the allocation is then itself ordered after the freeing stream's work: a host
// synchronize of the allocating stream waits for that work (measured: ~1000 ms behind a 1 s
// kernel), and a query of it is not CUDA_SUCCESS before. Violation: the synchronize returns, or the
// query answers CUDA_SUCCESS, while the old owner's work on the reused memory still runs; the
// program would then use the memory from the host, or tell another stream it is ready.
#include <set>
#include <utility>

#include "safety_support.hpp"

namespace safety {
namespace {

using AllocFn = decltype(&::cuMemAllocFromPoolAsync);
using SyncFn = decltype(&::cuStreamSynchronize);

class LegacyOrder : public SafetyTest {
 protected:
  void SetUp() override {
    SafetyTest::SetUp();
    ASSERT_EQ(SP(cuStreamCreate)(&blocking, CU_STREAM_DEFAULT), CUDA_SUCCESS);
  }
  void TearDown() override {
    SP(cuCtxSynchronize)();
    if (blocking != nullptr) SP(cuStreamDestroy_v2)(blocking);
    SafetyTest::TearDown();
  }

  // The new owner allocates the old owner's size on `stream` and the program synchronizes it with
  // `sync`; by the time `sync` returns, reused memory must be the new owner's alone.
  void expect_synchronize_waits(AllocFn alloc, CUstream stream, SyncFn sync,
                                CUstream sync_handle) {
    CUdeviceptr block = 0;
    ASSERT_EQ(alloc(&block, old_owner.bytes, pool, stream), CUDA_SUCCESS);
    EXPECT_TRUE(overlaps(old_owner.block, old_owner.bytes, block, old_owner.bytes))
        << "the implicit order did not let the stream reuse the block, as NVIDIA's pool does";
    ASSERT_EQ(sync(sync_handle), CUDA_SUCCESS);
    const bool old_done = old_owner.done.load();

    EXPECT_EQ(early_completion(old_owner, block, old_owner.bytes, old_done, "the stream synchronize"), "");
    SP(cuMemFreeAsync)(block, blocking);
  }

  // The same with a query: CUDA_SUCCESS is a promise that the stream's work, its allocation
  // included, is complete.
  void expect_query_waits(AllocFn alloc, CUstream stream, decltype(&::cuStreamQuery) query,
                          CUstream query_handle) {
    CUdeviceptr block = 0;
    ASSERT_EQ(alloc(&block, old_owner.bytes, pool, stream), CUDA_SUCCESS);
    EXPECT_TRUE(overlaps(old_owner.block, old_owner.bytes, block, old_owner.bytes))
        << "the implicit order did not let the stream reuse the block, as NVIDIA's pool does";
    const CUresult answer = query(query_handle);
    const bool old_done = old_owner.done.load();

    if (answer == CUDA_SUCCESS) {
      EXPECT_EQ(early_completion(old_owner, block, old_owner.bytes, old_done, "the stream query"), "");
    } else {
      EXPECT_EQ(answer, CUDA_ERROR_NOT_READY);
    }
    SP(cuMemFreeAsync)(block, blocking);
  }

  CUstream blocking = nullptr;
};

AllocFn alloc_legacy_abi() { return SP(cuMemAllocFromPoolAsync); }
AllocFn alloc_per_thread_abi() { return SP_AS(cuMemAllocFromPoolAsync_ptsz, cuMemAllocFromPoolAsync); }

TEST_F(LegacyOrder, BlockingStreamReusingALegacyFreeIsNotCompleteBeforeTheLegacyWork) {
  ASSERT_NO_FATAL_FAILURE(give_up_block(old_owner, pool, nullptr));  // handle 0: the legacy stream

  expect_synchronize_waits(alloc_legacy_abi(), blocking, SP(cuStreamSynchronize), blocking);
}

TEST_F(LegacyOrder, BlockingStreamReusingALegacyFreeDoesNotQueryCompleteBeforeTheLegacyWork) {
  ASSERT_NO_FATAL_FAILURE(give_up_block(old_owner, pool, CU_STREAM_LEGACY));

  expect_query_waits(alloc_legacy_abi(), blocking, SP(cuStreamQuery), blocking);
}

TEST_F(LegacyOrder, PerThreadStreamReusingALegacyFreeIsNotCompleteBeforeTheLegacyWork) {
  ASSERT_NO_FATAL_FAILURE(give_up_block(old_owner, pool, CU_STREAM_LEGACY));

  expect_synchronize_waits(alloc_legacy_abi(), CU_STREAM_PER_THREAD, SP(cuStreamSynchronize),
                           CU_STREAM_PER_THREAD);
}

TEST_F(LegacyOrder, PerThreadStreamOfThePtszAbiReusingALegacyFreeIsNotCompleteBeforeTheLegacyWork) {
  ASSERT_NO_FATAL_FAILURE(give_up_block(old_owner, pool, CU_STREAM_LEGACY));

  expect_synchronize_waits(alloc_per_thread_abi(), nullptr,
                           SP_AS(cuStreamSynchronize_ptsz, cuStreamSynchronize), nullptr);
}

TEST_F(LegacyOrder, PerThreadStreamReusingALegacyFreeDoesNotQueryCompleteBeforeTheLegacyWork) {
  ASSERT_NO_FATAL_FAILURE(give_up_block(old_owner, pool, nullptr));

  expect_query_waits(alloc_per_thread_abi(), nullptr, SP_AS(cuStreamQuery_ptsz, cuStreamQuery), nullptr);
}

TEST_F(LegacyOrder, LegacyStreamReusingABlockingStreamsFreeIsNotCompleteBeforeThatWork) {
  ASSERT_NO_FATAL_FAILURE(give_up_block(old_owner, pool, blocking));

  expect_synchronize_waits(alloc_legacy_abi(), nullptr, SP(cuStreamSynchronize), nullptr);
}

TEST_F(LegacyOrder, LegacyStreamReusingABlockingStreamsFreeDoesNotQueryCompleteBeforeThatWork) {
  ASSERT_NO_FATAL_FAILURE(give_up_block(old_owner, pool, blocking));

  expect_query_waits(alloc_legacy_abi(), CU_STREAM_LEGACY, SP(cuStreamQuery), CU_STREAM_LEGACY);
}

TEST_F(LegacyOrder, LegacyStreamReusingAPerThreadStreamsFreeIsNotCompleteBeforeThatWork) {
  ASSERT_NO_FATAL_FAILURE(give_up_block(old_owner, pool, CU_STREAM_PER_THREAD));

  expect_synchronize_waits(alloc_legacy_abi(), CU_STREAM_LEGACY, SP(cuStreamSynchronize),
                           CU_STREAM_LEGACY);
}

// The free side of the implicit order: the block's last use runs on one stream, the free is on an
// implicitly synchronised partner (legal CUDA: the free is ordered after that use), and the program
// synchronises the freeing stream. A non-blocking stream (no implicit order of its own) then
// allocates the same size: if it gets the block, its work must not begin before the use ended.
class ImplicitFree : public LegacyOrder {
 protected:
  static constexpr std::size_t kOneBlockBytes = std::size_t{32} << 20;
  void TearDown() override {
    SP(cuCtxSynchronize)();
    if (one_block != nullptr) SP(cuMemPoolDestroy)(one_block);
    LegacyOrder::TearDown();
  }
  CUmemoryPool one_block = nullptr;
  // The old owner's block, allocated on `freer` (and complete), freed there behind the old owner's
  // work on `user`, which the free follows only by the implicit order; then `freer` takes the
  // size again (its own free) and the block it got is returned.
  // A pool of one block (32 MiB): the freer can only take its free again (the legacy stream, which
  // elsewhere takes other memory until a batch of its frees waits for a marker, marks it first).
  CUdeviceptr free_behind_use_and_take_again(CUstream freer, CUstream user) {
    old_owner.bytes = kOneBlockBytes;
    one_block = create_pool(device, kOneBlockBytes);
    EXPECT_EQ(SP(cuMemAllocFromPoolAsync)(&old_owner.block, old_owner.bytes, one_block, freer), CUDA_SUCCESS);
    EXPECT_EQ(SP(cuStreamSynchronize)(freer), CUDA_SUCCESS);
    EXPECT_EQ(SP(cuLaunchHostFunc)(user, old_owner_work, &old_owner), CUDA_SUCCESS);
    EXPECT_EQ(SP(cuMemFreeAsync)(old_owner.block, freer), CUDA_SUCCESS);
    CUdeviceptr again = 0;
    EXPECT_EQ(SP(cuMemAllocFromPoolAsync)(&again, old_owner.bytes, one_block, freer), CUDA_SUCCESS);
    EXPECT_EQ(again, old_owner.block) << "the stream reuses its own free (the case under test)";
    return again;
  }
  void use_then_free(CUstream user, CUstream freer, decltype(&::cuStreamSynchronize) sync, CUstream sync_handle) {
    old_owner.bytes = kBlockBytes;
    ASSERT_EQ(SP(cuMemAllocFromPoolAsync)(&old_owner.block, old_owner.bytes, pool, freer), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuStreamSynchronize)(freer), CUDA_SUCCESS);  // the allocation is done everywhere
    ASSERT_EQ(SP(cuLaunchHostFunc)(user, old_owner_work, &old_owner), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuMemFreeAsync)(old_owner.block, freer), CUDA_SUCCESS);
    ASSERT_EQ(sync(sync_handle), CUDA_SUCCESS);
    take_block(new_owner, old_owner, pool, b);
    expect_safe(user, b);
  }
};

TEST_F(ImplicitFree, ALegacyFreeAfterABlockingStreamsUseIsNotReusedBeforeTheUseEnds) {
  use_then_free(blocking, CU_STREAM_LEGACY, SP(cuStreamSynchronize), CU_STREAM_LEGACY);
}

TEST_F(ImplicitFree, ALegacyFreeAfterAPerThreadStreamsUseIsNotReusedBeforeTheUseEnds) {
  use_then_free(CU_STREAM_PER_THREAD, CU_STREAM_LEGACY, SP(cuStreamSynchronize), CU_STREAM_LEGACY);
}

TEST_F(ImplicitFree, ABlockingStreamsFreeAfterALegacyUseIsNotReusedBeforeTheUseEnds) {
  use_then_free(CU_STREAM_LEGACY, blocking, SP(cuStreamSynchronize), blocking);
}

// The per-thread default stream is bound by the legacy stream's implicit order as a blocking
// stream is: its synchronize proves such a free only through a marker recorded in it first.
TEST_F(ImplicitFree, APerThreadStreamsFreeAfterALegacyUseIsNotReusedBeforeTheUseEnds) {
  use_then_free(CU_STREAM_LEGACY, CU_STREAM_PER_THREAD, SP(cuStreamSynchronize), CU_STREAM_PER_THREAD);
}

TEST_F(ImplicitFree, AQueriedLegacyFreeAfterABlockingStreamsUseIsNotReusedBeforeTheUseEnds) {
  old_owner.bytes = kBlockBytes;
  ASSERT_EQ(SP(cuMemAllocFromPoolAsync)(&old_owner.block, old_owner.bytes, pool, CU_STREAM_LEGACY), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuStreamSynchronize)(CU_STREAM_LEGACY), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuLaunchHostFunc)(blocking, old_owner_work, &old_owner), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemFreeAsync)(old_owner.block, CU_STREAM_LEGACY), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuStreamQuery)(CU_STREAM_LEGACY), CUDA_SUCCESS);  // nothing queued on it
  take_block(new_owner, old_owner, pool, b);
  expect_safe(blocking, b);
}

// The legacy stream takes its own free (made behind a blocking stream's use) again, and the
// program frees that block, unused, on a second blocking stream: legal, since the second stream is
// ordered after the legacy stream's allocation, a stream operation on NVIDIA's driver. The second
// stream's next allocation of the size must not run its work on the memory before the use ends.
TEST_F(ImplicitFree, ALegacyReuseFreedUnusedOnABlockingStreamIsNotReusedThereBeforeTheFirstUseEnds) {
  CUstream second = nullptr;
  ASSERT_EQ(SP(cuStreamCreate)(&second, CU_STREAM_DEFAULT), CUDA_SUCCESS);
  const CUdeviceptr again = free_behind_use_and_take_again(CU_STREAM_LEGACY, blocking);
  ASSERT_EQ(SP(cuMemFreeAsync)(again, second), CUDA_SUCCESS);
  take_block(new_owner, old_owner, one_block, second);
  expect_safe(blocking, second);
  SP(cuStreamSynchronize)(second);
  SP(cuStreamDestroy_v2)(second);
}

// The use side of the same (found by the model check, seed 2500): the memory the legacy stream
// took again is used, as the program may, on a second blocking stream, whose work the implicit
// order puts after the legacy stream's allocation. On NVIDIA's driver that allocation follows the
// legacy free, which follows the first use: the second use runs after it. Under streampool neither
// enqueues anything, so the legacy stream takes a marker before it hands the memory out.
TEST_F(ImplicitFree, ALegacyReuseUsedOnAnotherBlockingStreamDoesNotRunWithTheFirstUse) {
  CUstream second = nullptr;
  ASSERT_EQ(SP(cuStreamCreate)(&second, CU_STREAM_DEFAULT), CUDA_SUCCESS);
  new_owner.previous = &old_owner;
  new_owner.block = free_behind_use_and_take_again(CU_STREAM_LEGACY, blocking);
  new_owner.bytes = old_owner.bytes;
  ASSERT_EQ(SP(cuLaunchHostFunc)(second, new_owner_work, &new_owner), CUDA_SUCCESS);
  expect_safe(blocking, second);
  SP(cuStreamSynchronize)(second);
  SP(cuStreamDestroy_v2)(second);
}

// A blocking stream frees a block behind the legacy stream's use (the implicit order alone) and
// takes it again: a query of that stream answering CUDA_SUCCESS tells the program the allocation
// is complete, so the memory may be used from anywhere. On NVIDIA's driver the free and the
// allocation are stream operations bound by the implicit order: the query is not CUDA_SUCCESS
// before the legacy stream's use ends.
TEST_F(ImplicitFree, AQueryOfABlockingStreamThatReusedItsImplicitFreeIsNotCompleteBeforeTheUseEnds) {
  const CUdeviceptr again = free_behind_use_and_take_again(blocking, CU_STREAM_LEGACY);
  const CUresult answer = SP(cuStreamQuery)(blocking);
  const bool old_done = old_owner.done.load();

  if (answer == CUDA_SUCCESS) {
    EXPECT_EQ(early_completion(old_owner, again, old_owner.bytes, old_done, "the stream query"), "");
  } else {
    EXPECT_EQ(answer, CUDA_ERROR_NOT_READY);
  }
  SP(cuMemFreeAsync)(again, blocking);
}

// The device's current pool through cuMemAllocAsync, as cudaMallocAsync reaches it.
TEST_F(LegacyOrder, BlockingStreamReusingALegacyFreeOfTheDefaultPoolIsNotCompleteBeforeTheLegacyWork) {
  ASSERT_EQ(SP(cuDeviceSetMemPool)(device, pool), CUDA_SUCCESS);
  old_owner.bytes = kBlockBytes;
  ASSERT_EQ(SP(cuMemAllocAsync)(&old_owner.block, old_owner.bytes, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuLaunchHostFunc)(nullptr, old_owner_work, &old_owner), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemFreeAsync)(old_owner.block, nullptr), CUDA_SUCCESS);

  CUdeviceptr block = 0;
  ASSERT_EQ(SP(cuMemAllocAsync)(&block, old_owner.bytes, blocking), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuStreamSynchronize)(blocking), CUDA_SUCCESS);
  const bool old_done = old_owner.done.load();

  EXPECT_EQ(early_completion(old_owner, block, old_owner.bytes, old_done, "the stream synchronize"), "");
  SP(cuMemFreeAsync)(block, blocking);
  SP(cuCtxSynchronize)();
  CUmemoryPool default_pool = nullptr;
  ASSERT_EQ(SP(cuDeviceGetDefaultMemPool)(&default_pool, device), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuDeviceSetMemPool)(device, default_pool), CUDA_SUCCESS);
}

// What the markers before legacy-stream reuse cost, and where: each test in a process of its own,
// so that what the registry has seen (a blocking stream stays seen) is this test's alone. Only the
// non-blocking streams of SafetyTest exist until a test makes another.
class LegacyPairs : public SafetyTest {
 protected:
  static constexpr int kPairs = 32;
  // kPairs legacy-stream pairs of one size: the markers (cuEventRecord calls) they cost, and how
  // many distinct blocks they went through.
  std::pair<unsigned long long, std::size_t> records_and_blocks() {
    std::set<CUdeviceptr> blocks;
    const unsigned long long before = fake_calls("cuEventRecord");
    for (int i = 0; i < kPairs; ++i) {
      CUdeviceptr block = 0;
      EXPECT_EQ(SP(cuMemAllocFromPoolAsync)(&block, kBlockBytes, pool, CU_STREAM_LEGACY), CUDA_SUCCESS);
      blocks.insert(block);
      EXPECT_EQ(SP(cuMemFreeAsync)(block, CU_STREAM_LEGACY), CUDA_SUCCESS);
    }
    return {fake_calls("cuEventRecord") - before, blocks.size()};
  }
};

TEST_F(LegacyPairs, WithNoBlockingStreamInSightTheLegacyStreamsPairsRecordNothing) {
  const auto [records, blocks] = records_and_blocks();
  EXPECT_EQ(records, 0u);
  EXPECT_EQ(blocks, 1u) << "the legacy stream takes its own free again at once";
}

// One marker per batch of frees, and a batch of blocks held (HappensBefore::kAnchorBatchMisses: 8).
TEST_F(LegacyPairs, OnceABlockingStreamIsCreatedTheLegacyStreamMarksItsFreesInBatches) {
  CUstream blocking = nullptr;
  ASSERT_EQ(SP(cuStreamCreate)(&blocking, CU_STREAM_DEFAULT), CUDA_SUCCESS);
  const auto [records, blocks] = records_and_blocks();
  EXPECT_GE(records, 1u);
  EXPECT_LE(records, kPairs / 8 + 1);
  EXPECT_LE(blocks, 9u);
  SP(cuStreamDestroy_v2)(blocking);
}

TEST_F(LegacyPairs, OnceAPerThreadStreamIsSeenTheLegacyStreamMarksItsFreesInBatches) {
  CUdeviceptr block = 0;
  ASSERT_EQ(SP(cuMemAllocFromPoolAsync)(&block, 4096, pool, CU_STREAM_PER_THREAD), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemFreeAsync)(block, CU_STREAM_PER_THREAD), CUDA_SUCCESS);
  const auto [records, blocks] = records_and_blocks();
  EXPECT_GE(records, 1u);
  EXPECT_LE(records, kPairs / 8 + 1);
  EXPECT_LE(blocks, 9u);
}

}  // namespace
}  // namespace safety
