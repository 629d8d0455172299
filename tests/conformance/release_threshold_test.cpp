// driver-behaviour.md, "Sizes, rounding, growth": the release threshold acts only at
// synchronisation (stream, event, context synchronize), never at a successful query.
#include "conformance.hpp"

#include <chrono>
#include <thread>

namespace conformance {
namespace {

// A pool with the given threshold that holds a freed allocation of `bytes` (no sync yet).
void free_without_sync(CUmemoryPool pool, CUstream stream, std::uint64_t bytes) {
  CUdeviceptr p = 0;
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&p, bytes, pool, stream));
  CU_ASSERT_OK(cuMemsetD8Async(p, 0, bytes, stream));
  CU_ASSERT_OK(cuMemFreeAsync(p, stream));
}

// Polls cuStreamQuery until the stream reports its work done.
void query_until_idle(CUstream stream) {
  for (int i = 0; i < 10000; ++i) {
    const CUresult result = cuStreamQuery(stream);
    if (result == CUDA_SUCCESS) return;
    ASSERT_EQ(CUDA_ERROR_NOT_READY, result);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  FAIL() << "the stream did not become idle within 10 s";
}

TEST(ReleaseThreshold, FreeWithoutSyncKeepsTheMemory) {
  OwnedPool pool(device_pool_props());  // threshold 0
  CU_ASSERT_OK(pool.status());
  CONFORMANCE_STREAM(stream);
  ASSERT_NO_FATAL_FAILURE(free_without_sync(pool.get(), stream.get(), kMiB));
  const std::uint64_t held = reserved(pool.get());
  if (under_streampool()) {
    EXPECT_GE(held, kMiB);
  } else {
    EXPECT_EQ(kDriverChunk, held);
  }
  EXPECT_EQ(0U, used(pool.get()));
}

TEST(ReleaseThreshold, SuccessfulStreamQueryDoesNotRelease) {
  OwnedPool pool(device_pool_props());
  CU_ASSERT_OK(pool.status());
  CONFORMANCE_STREAM(stream);
  ASSERT_NO_FATAL_FAILURE(free_without_sync(pool.get(), stream.get(), kMiB));
  const std::uint64_t held = reserved(pool.get());
  ASSERT_GT(held, 0U);
  ASSERT_NO_FATAL_FAILURE(query_until_idle(stream.get()));
  EXPECT_EQ(held, reserved(pool.get()));
}

TEST(ReleaseThreshold, EventSynchronizeReleasesDownToThreshold) {
  OwnedPool pool(device_pool_props());
  CU_ASSERT_OK(pool.status());
  CONFORMANCE_STREAM(stream);
  OwnedEvent event;
  CU_ASSERT_OK(event.status());
  ASSERT_NO_FATAL_FAILURE(free_without_sync(pool.get(), stream.get(), kMiB));
  CU_ASSERT_OK(cuEventRecord(event.get(), stream.get()));
  CU_ASSERT_OK(cuEventSynchronize(event.get()));
  EXPECT_EQ(0U, reserved(pool.get()));
}

TEST(ReleaseThreshold, ContextSynchronizeReleasesDownToThreshold) {
  OwnedPool pool(device_pool_props());
  CU_ASSERT_OK(pool.status());
  CONFORMANCE_STREAM(stream);
  ASSERT_NO_FATAL_FAILURE(free_without_sync(pool.get(), stream.get(), kMiB));
  CU_ASSERT_OK(cuCtxSynchronize());
  EXPECT_EQ(0U, reserved(pool.get()));
}

TEST(ReleaseThreshold, StreamSynchronizeWithThresholdZeroReleasesEverything) {
  OwnedPool pool(device_pool_props());
  CU_ASSERT_OK(pool.status());
  CONFORMANCE_STREAM(stream);
  CUdeviceptr p[3] = {};
  for (CUdeviceptr& slot : p) {
    CU_ASSERT_OK(cuMemAllocFromPoolAsync(&slot, 5 * kMiB, pool.get(), stream.get()));
  }
  for (CUdeviceptr slot : p) {
    CU_ASSERT_OK(cuMemFreeAsync(slot, stream.get()));
  }
  CU_ASSERT_OK(cuStreamSynchronize(stream.get()));
  EXPECT_EQ(0U, reserved(pool.get()));
  EXPECT_GE(reserved_high(pool.get()), 15 * kMiB);
}

TEST(ReleaseThreshold, PoolAllocatesAgainAfterReleasingEverything) {
  CUmemoryPool pool = nullptr;
  CU_ASSERT_OK(cuDeviceGetDefaultMemPool(&pool, device()));  // threshold 0 unless a test changed it
  CU_ASSERT_OK(set_u64(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, 0));
  CONFORMANCE_STREAM(stream);
  for (int round = 0; round < 3; ++round) {
    CUdeviceptr p = 0;
    CU_ASSERT_OK(cuMemAllocAsync(&p, 3 * kMiB, stream.get())) << "round " << round;
    CU_ASSERT_OK(cuMemsetD8Async(p, static_cast<unsigned char>(round + 1), 3 * kMiB, stream.get()));
    unsigned char byte = 0;
    CU_ASSERT_OK(cuMemcpyDtoHAsync(&byte, p + 3 * kMiB - 1, 1, stream.get()));
    CU_ASSERT_OK(cuMemFreeAsync(p, stream.get()));
    CU_ASSERT_OK(cuStreamSynchronize(stream.get()));
    EXPECT_EQ(round + 1, byte);
    EXPECT_EQ(0U, reserved(pool)) << "round " << round;
  }
}

TEST(ReleaseThreshold, SynchronizingAnIdleStreamKeepsThePoolUsable) {
  // The release check at a synchronize must not touch a free still pending on another stream.
  OwnedPool pool(device_pool_props());  // threshold 0
  CU_ASSERT_OK(pool.status());
  CONFORMANCE_STREAM(busy);
  CONFORMANCE_STREAM(idle);
  for (int round = 0; round < 3; ++round) {
    CUdeviceptr p = 0;
    CU_ASSERT_OK(cuMemAllocFromPoolAsync(&p, 3 * kMiB, pool.get(), busy.get())) << "round " << round;
    CU_ASSERT_OK(cuMemsetD8Async(p, 1, 3 * kMiB, busy.get()));
    CU_ASSERT_OK(cuMemFreeAsync(p, busy.get()));
    CU_ASSERT_OK(cuStreamSynchronize(idle.get()));
    CU_ASSERT_OK(cuStreamSynchronize(busy.get()));
  }
  EXPECT_EQ(0U, used(pool.get()));
}

TEST(ReleaseThreshold, NonZeroThresholdIsAnUpperBoundAfterSynchronize) {
  OwnedPool pool(device_pool_props());
  CU_ASSERT_OK(pool.status());
  CU_ASSERT_OK(set_u64(pool.get(), CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, 8 * kMiB));
  CONFORMANCE_STREAM(stream);
  ASSERT_NO_FATAL_FAILURE(free_without_sync(pool.get(), stream.get(), 64 * kMiB));
  ASSERT_GE(reserved(pool.get()), 64 * kMiB);
  CU_ASSERT_OK(cuStreamSynchronize(stream.get()));
  const std::uint64_t held = reserved(pool.get());
  if (under_streampool()) {
    EXPECT_LE(held, 8 * kMiB) << "streampool may keep up to the threshold";
  } else {
    EXPECT_EQ(0U, held) << "the driver releases whole chunks, going below the threshold";
  }
}

}  // namespace
}  // namespace conformance
