// driver-behaviour.md, "Reuse semantics": when a freed block is handed out again. Each scenario
// uses its own pool with RELEASE_THRESHOLD = UINT64_MAX. "A long kernel" is a sleeping host
// function, so a free enqueued behind it stays pending for kLongKernelMs.
#include "conformance.hpp"

namespace conformance {
namespace {

class Reuse : public ::testing::Test {
 protected:
  void SetUp() override {
    CU_ASSERT_OK(s1_.status());
    CU_ASSERT_OK(s2_.status());
    CU_ASSERT_OK(event_.status());
  }

  // Allocates `bytes` on s1 and frees it on s1 behind a long kernel; returns the address.
  CUdeviceptr free_pending_on_s1(CUmemoryPool pool, std::uint64_t bytes) {
    CUdeviceptr p = 0;
    EXPECT_EQ(CUDA_SUCCESS, cuMemAllocFromPoolAsync(&p, bytes, pool, s1_.get()));
    EXPECT_EQ(CUDA_SUCCESS, enqueue_long_kernel(s1_.get()));
    EXPECT_EQ(CUDA_SUCCESS, cuMemFreeAsync(p, s1_.get()));
    return p;
  }

  // Allocates 1 MiB on s1, hands it to s2 through an event and frees it on s2 behind a long
  // kernel; returns the address.
  CUdeviceptr allocate_on_s1_free_on_s2(CUmemoryPool pool) {
    CUdeviceptr p = 0;
    EXPECT_EQ(CUDA_SUCCESS, cuMemAllocFromPoolAsync(&p, kMiB, pool, s1_.get()));
    EXPECT_EQ(CUDA_SUCCESS, cuEventRecord(event_.get(), s1_.get()));
    EXPECT_EQ(CUDA_SUCCESS, cuStreamWaitEvent(s2_.get(), event_.get(), 0));
    EXPECT_EQ(CUDA_SUCCESS, enqueue_long_kernel(s2_.get()));
    EXPECT_EQ(CUDA_SUCCESS, cuMemFreeAsync(p, s2_.get()));
    return p;
  }

  OwnedStream s1_;
  OwnedStream s2_;
  OwnedEvent event_;
};

TEST_F(Reuse, SameStreamSameSizeGetsTheSameAddress) {
  CONFORMANCE_KEEP_ALL_POOL(pool, 0);
  CUdeviceptr p = 0;
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&p, kMiB, pool.get(), s1_.get()));
  CU_ASSERT_OK(enqueue_long_kernel(s1_.get(), 50));  // same-stream reuse needs no completion
  CU_ASSERT_OK(cuMemFreeAsync(p, s1_.get()));
  CUdeviceptr q = 0;
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&q, kMiB, pool.get(), s1_.get()));
  EXPECT_EQ(p, q);
  CU_EXPECT_OK(cuMemFreeAsync(q, s1_.get()));
}

TEST_F(Reuse, SmallRequestIsCarvedFromTheStartOfAFreedLargeBlock) {
  CONFORMANCE_KEEP_ALL_POOL(pool, 0);
  CUdeviceptr big = 0;
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&big, 32 * kMiB, pool.get(), s1_.get()));
  CU_ASSERT_OK(cuMemFreeAsync(big, s1_.get()));
  CUdeviceptr small = 0;
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&small, kMiB, pool.get(), s1_.get()));
  EXPECT_EQ(big, small);
  CU_EXPECT_OK(cuMemFreeAsync(small, s1_.get()));
}

TEST_F(Reuse, AdjacentFreesCoalesce) {
  CONFORMANCE_KEEP_ALL_POOL(pool, 0);
  CUdeviceptr a = 0;
  CUdeviceptr b = 0;
  CUdeviceptr fence = 0;  // keeps the two holes from merging with the pool's free tail
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&a, kMiB, pool.get(), s1_.get()));
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&b, kMiB, pool.get(), s1_.get()));
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&fence, kMiB, pool.get(), s1_.get()));
  ASSERT_EQ(a + kMiB, b);
  ASSERT_EQ(b + kMiB, fence);
  CU_ASSERT_OK(cuMemFreeAsync(a, s1_.get()));
  CU_ASSERT_OK(cuMemFreeAsync(b, s1_.get()));
  CUdeviceptr both = 0;
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&both, 2 * kMiB, pool.get(), s1_.get()));
  EXPECT_EQ(a, both);
  CU_EXPECT_OK(cuMemFreeAsync(both, s1_.get()));
  CU_EXPECT_OK(cuMemFreeAsync(fence, s1_.get()));
}

TEST_F(Reuse, PendingFreeOnAnotherStreamIsNotReusedWhileThePoolCanGrow) {
  CONFORMANCE_KEEP_ALL_POOL(pool, 0);
  const CUdeviceptr p = free_pending_on_s1(pool.get(), kMiB);
  CUdeviceptr q = 0;
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&q, kMiB, pool.get(), s2_.get()));
  EXPECT_NE(p, q) << "no internal dependency is inserted while growing is possible";
  EXPECT_TRUE(becomes_idle_within(s2_.get(), kLongKernelMs / 2)) << "s2 must not wait for s1";
  CU_EXPECT_OK(cuMemFreeAsync(q, s2_.get()));
}

TEST_F(Reuse, EventDependencyLetsAnotherStreamReuse) {
  CONFORMANCE_KEEP_ALL_POOL(pool, 0);
  const CUdeviceptr p = free_pending_on_s1(pool.get(), kMiB);
  CU_ASSERT_OK(cuEventRecord(event_.get(), s1_.get()));
  CU_ASSERT_OK(cuStreamWaitEvent(s2_.get(), event_.get(), 0));
  CUdeviceptr q = 0;
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&q, kMiB, pool.get(), s2_.get()));
  EXPECT_EQ(p, q);
  CU_EXPECT_OK(cuMemFreeAsync(q, s2_.get()));
}

TEST_F(Reuse, EventDependencyIsIgnoredWhenFollowIsOff) {
  CONFORMANCE_KEEP_ALL_POOL(pool, 0);
  CU_ASSERT_OK(set_int(pool.get(), CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES, 0));
  const CUdeviceptr p = free_pending_on_s1(pool.get(), kMiB);
  CU_ASSERT_OK(cuEventRecord(event_.get(), s1_.get()));
  CU_ASSERT_OK(cuStreamWaitEvent(s2_.get(), event_.get(), 0));
  CUdeviceptr q = 0;
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&q, kMiB, pool.get(), s2_.get()));
  EXPECT_NE(p, q);
  CU_EXPECT_OK(cuMemFreeAsync(q, s2_.get()));
}

TEST_F(Reuse, CompletedFreeIsReusedOpportunistically) {
  CONFORMANCE_KEEP_ALL_POOL(pool, 0);
  CUdeviceptr p = 0;
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&p, kMiB, pool.get(), s1_.get()));
  CU_ASSERT_OK(cuMemFreeAsync(p, s1_.get()));
  CU_ASSERT_OK(cuStreamSynchronize(s1_.get()));
  CUdeviceptr q = 0;
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&q, kMiB, pool.get(), s2_.get()));
  EXPECT_EQ(p, q);
  CU_EXPECT_OK(cuMemFreeAsync(q, s2_.get()));
}

TEST_F(Reuse, HostSynchronizeOrdersTheFreeEvenWithoutOpportunisticReuse) {
  CONFORMANCE_KEEP_ALL_POOL(pool, 0);
  CU_ASSERT_OK(set_int(pool.get(), CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, 0));
  CUdeviceptr p = 0;
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&p, kMiB, pool.get(), s1_.get()));
  CU_ASSERT_OK(cuMemFreeAsync(p, s1_.get()));
  CU_ASSERT_OK(cuStreamSynchronize(s1_.get()));
  CUdeviceptr q = 0;
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&q, kMiB, pool.get(), s2_.get()));
  EXPECT_EQ(p, q);
  CU_EXPECT_OK(cuMemFreeAsync(q, s2_.get()));
}

TEST_F(Reuse, FullPoolInsertsAnInternalDependency) {
  // A 32 MiB cap with 24 MiB pending free on s1: a second 24 MiB request cannot grow the pool.
  OwnedPool pool(device_pool_props(32 * kMiB));
  CU_ASSERT_OK(pool.status());
  CU_ASSERT_OK(set_u64(pool.get(), CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, kNoThreshold));
  const CUdeviceptr p = free_pending_on_s1(pool.get(), 24 * kMiB);
  CUdeviceptr q = 0;
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&q, 24 * kMiB, pool.get(), s2_.get()));
  EXPECT_EQ(p, q);
  EXPECT_EQ(CUDA_ERROR_NOT_READY, cuStreamQuery(s2_.get())) << "s2 now waits for s1's long kernel";
  CU_EXPECT_OK(cuMemFreeAsync(q, s2_.get()));
  CU_EXPECT_OK(cuStreamSynchronize(s2_.get()));
  CU_EXPECT_OK(cuStreamQuery(s1_.get())) << "s2 finished only after s1's work";
}

TEST_F(Reuse, FullPoolWithoutInternalDependenciesIsOutOfMemory) {
  OwnedPool pool(device_pool_props(32 * kMiB));
  CU_ASSERT_OK(pool.status());
  CU_ASSERT_OK(set_u64(pool.get(), CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, kNoThreshold));
  CU_ASSERT_OK(set_int(pool.get(), CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES, 0));
  (void)free_pending_on_s1(pool.get(), 24 * kMiB);
  CUdeviceptr q = 0;
  EXPECT_EQ(CUDA_ERROR_OUT_OF_MEMORY, cuMemAllocFromPoolAsync(&q, 24 * kMiB, pool.get(), s2_.get()));
  EXPECT_EQ(0U, q);
  EXPECT_TRUE(becomes_idle_within(s2_.get(), kLongKernelMs / 2)) << "no wait was inserted";
}

TEST_F(Reuse, FreedBlockBelongsToTheFreeingStream) {
  // Allocated on s1, freed on s2 behind a long kernel: s2 reuses it at once.
  CONFORMANCE_KEEP_ALL_POOL(pool, 0);
  const CUdeviceptr p = allocate_on_s1_free_on_s2(pool.get());
  CUdeviceptr q = 0;
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&q, kMiB, pool.get(), s2_.get()));
  EXPECT_EQ(p, q);
  CU_EXPECT_OK(cuMemFreeAsync(q, s2_.get()));
}

TEST_F(Reuse, FreedBlockIsNotHandedBackToTheAllocatingStream) {
  // Allocated on s1, freed on s2 behind a long kernel: s1 does not get it back.
  CONFORMANCE_KEEP_ALL_POOL(pool, 0);
  const CUdeviceptr p = allocate_on_s1_free_on_s2(pool.get());
  CUdeviceptr q = 0;
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&q, kMiB, pool.get(), s1_.get()));
  EXPECT_NE(p, q);
  CU_EXPECT_OK(cuMemFreeAsync(q, s1_.get()));
}

}  // namespace
}  // namespace conformance
