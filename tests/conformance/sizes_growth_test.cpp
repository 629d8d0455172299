// driver-behaviour.md, "Sizes, rounding, growth": byte accounting, placement, how a pool grows
// and how TrimTo shrinks it. The driver grows in 32 MiB chunks; streampool maps granules, so its
// RESERVED may be lower: those tests assert the driver's numbers on the driver and the
// properties (granule multiples, bounds, contiguity) under streampool.
#include "conformance.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <map>
#include <random>
#include <vector>

namespace conformance {
namespace {

bool is_power_of_two(std::size_t x) { return x != 0 && (x & (x - 1)) == 0; }

bool device_is_h200() {
  char name[256] = {};
  if (cuDeviceGetName(name, sizeof name, device()) != CUDA_SUCCESS) return false;
  return std::strstr(name, "H200") != nullptr;
}

TEST(SizesGrowth, UsedBytesCountTheBytesAskedFor) {
  CONFORMANCE_KEEP_ALL_POOL(pool, 0);
  CONFORMANCE_STREAM(stream);
  CUdeviceptr a = 0;
  CUdeviceptr b = 0;
  CUdeviceptr c = 0;
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&a, 1, pool.get(), stream.get()));
  EXPECT_EQ(1U, used(pool.get()));
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&b, 1, pool.get(), stream.get()));
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&c, 1000, pool.get(), stream.get()));
  EXPECT_EQ(1002U, used(pool.get()));
  EXPECT_EQ(1002U, used_high(pool.get()));
  for (CUdeviceptr p : {a, b, c}) {
    CU_EXPECT_OK(cuMemFreeAsync(p, stream.get()));
  }
  CU_EXPECT_OK(cuStreamSynchronize(stream.get()));
  EXPECT_EQ(0U, used(pool.get()));
  EXPECT_EQ(1002U, used_high(pool.get()));
}

TEST(SizesGrowth, ConsecutiveSmallAllocationsAre512BytesApart) {
  CONFORMANCE_KEEP_ALL_POOL(pool, 0);
  CONFORMANCE_STREAM(stream);
  CUdeviceptr p[4] = {};
  for (CUdeviceptr& slot : p) {
    CU_ASSERT_OK(cuMemAllocFromPoolAsync(&slot, 1, pool.get(), stream.get()));
  }
  for (int i = 1; i < 4; ++i) {
    EXPECT_EQ(p[i - 1] + 512, p[i]) << "allocation " << i;
  }
  for (CUdeviceptr slot : p) {
    CU_EXPECT_OK(cuMemFreeAsync(slot, stream.get()));
  }
  CU_EXPECT_OK(cuStreamSynchronize(stream.get()));
}

TEST(SizesGrowth, FirstAllocationReservesOneChunkOrGranules) {
  CONFORMANCE_KEEP_ALL_POOL(pool, 0);
  CONFORMANCE_STREAM(stream);
  CUdeviceptr p = 0;
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&p, 1, pool.get(), stream.get()));
  const std::uint64_t held = reserved(pool.get());
  if (under_streampool()) {
    EXPECT_GT(held, 0U);
    EXPECT_LE(held, kDriverChunk);
    EXPECT_EQ(0U, held % vmm_granularity());
    EXPECT_EQ(0U, p % 512);
  } else {
    EXPECT_EQ(kDriverChunk, held);
    EXPECT_EQ(0U, p % kDriverChunk) << "the chunk is 32 MiB aligned";
  }
  EXPECT_EQ(held, reserved_high(pool.get()));
  CU_EXPECT_OK(cuMemFreeAsync(p, stream.get()));
  CU_EXPECT_OK(cuStreamSynchronize(stream.get()));
}

TEST(SizesGrowth, VmmGranularityIsAPowerOfTwo) {
  const std::size_t minimum = vmm_granularity(CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  const std::size_t recommended = vmm_granularity(CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
  EXPECT_TRUE(is_power_of_two(minimum)) << minimum;
  EXPECT_EQ(0U, recommended % minimum);
  if (device_is_h200()) {
    EXPECT_EQ(2 * kMiB, minimum);
    EXPECT_EQ(2 * kMiB, recommended);
  }
}

TEST(SizesGrowth, GrowthIsContiguous) {
  CONFORMANCE_KEEP_ALL_POOL(pool, 0);
  CONFORMANCE_STREAM(stream);
  const std::uint64_t granule = vmm_granularity();
  CUdeviceptr a = 0;
  CUdeviceptr b = 0;
  CUdeviceptr c = 0;
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&a, 8 * kMiB, pool.get(), stream.get()));  // 24 MiB left in a chunk
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&b, 100 * kMiB, pool.get(), stream.get()));
  EXPECT_EQ(a + 8 * kMiB, b) << "the tail of the old space plus new space mapped right after it";
  const std::uint64_t after_b = reserved(pool.get());
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&c, 40 * kMiB, pool.get(), stream.get()));
  EXPECT_EQ(b + 100 * kMiB, c);
  const std::uint64_t after_c = reserved(pool.get());
  if (under_streampool()) {
    EXPECT_GE(after_b, 108 * kMiB);
    EXPECT_LE(after_b, 128 * kMiB);
    EXPECT_GE(after_c, 148 * kMiB);
    EXPECT_LE(after_c, 160 * kMiB);
    EXPECT_EQ(0U, after_b % granule);
    EXPECT_EQ(0U, after_c % granule);
  } else {
    EXPECT_EQ(128 * kMiB, after_b);
    EXPECT_EQ(160 * kMiB, after_c);
  }
  for (CUdeviceptr p : {a, b, c}) {
    CU_EXPECT_OK(cuMemFreeAsync(p, stream.get()));
  }
  CU_EXPECT_OK(cuStreamSynchronize(stream.get()));
}

// Four 32 MiB blocks, all freed: the pool holds four whole chunks (or 128 MiB of granules).
void fill_and_free_four_chunks(CUmemoryPool pool, CUstream stream) {
  CUdeviceptr p[4] = {};
  for (CUdeviceptr& slot : p) {
    CU_ASSERT_OK(cuMemAllocFromPoolAsync(&slot, kDriverChunk, pool, stream));
  }
  for (CUdeviceptr slot : p) {
    CU_ASSERT_OK(cuMemFreeAsync(slot, stream));
  }
  CU_ASSERT_OK(cuStreamSynchronize(stream));
  ASSERT_GE(reserved(pool), 4 * kDriverChunk);
}

TEST(SizesGrowth, TrimToKeepsAtLeastTheRequestedBytes) {
  CONFORMANCE_KEEP_ALL_POOL(pool, 0);
  CONFORMANCE_STREAM(stream);
  ASSERT_NO_FATAL_FAILURE(fill_and_free_four_chunks(pool.get(), stream.get()));
  CU_ASSERT_OK(cuMemPoolTrimTo(pool.get(), 10 * kMiB));
  const std::uint64_t held = reserved(pool.get());
  if (under_streampool()) {
    EXPECT_GE(held, 10 * kMiB);
    EXPECT_LE(held, kDriverChunk);
    EXPECT_EQ(0U, held % vmm_granularity());
  } else {
    EXPECT_EQ(kDriverChunk, held) << "the driver trims whole 32 MiB chunks";
  }
}

TEST(SizesGrowth, TrimToZeroReleasesEverythingFree) {
  CONFORMANCE_KEEP_ALL_POOL(pool, 0);
  CONFORMANCE_STREAM(stream);
  ASSERT_NO_FATAL_FAILURE(fill_and_free_four_chunks(pool.get(), stream.get()));
  const std::uint64_t high = reserved_high(pool.get());
  CU_ASSERT_OK(cuMemPoolTrimTo(pool.get(), 0));
  EXPECT_EQ(0U, reserved(pool.get()));
  EXPECT_EQ(high, reserved_high(pool.get())) << "trimming does not touch the watermark";
}

TEST(SizesGrowth, TrimToZeroKeepsWhatHoldsALiveAllocation) {
  CONFORMANCE_KEEP_ALL_POOL(pool, 0);
  CONFORMANCE_STREAM(stream);
  CUdeviceptr live = 0;
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&live, kMiB, pool.get(), stream.get()));
  CUdeviceptr big = 0;
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&big, 64 * kMiB, pool.get(), stream.get()));
  CU_ASSERT_OK(cuMemFreeAsync(big, stream.get()));
  CU_ASSERT_OK(cuStreamSynchronize(stream.get()));
  CU_ASSERT_OK(cuMemPoolTrimTo(pool.get(), 0));
  const std::uint64_t held = reserved(pool.get());
  if (under_streampool()) {
    EXPECT_GE(held, kMiB);
    EXPECT_LE(held, kDriverChunk);
    EXPECT_EQ(0U, held % vmm_granularity());
  } else {
    EXPECT_EQ(kDriverChunk, held) << "the 32 MiB chunk that holds the live allocation";
  }
  CU_ASSERT_OK(cuMemsetD8Async(live, 0x3c, kMiB, stream.get()));  // still mapped and usable
  unsigned char byte = 0;
  CU_ASSERT_OK(cuStreamSynchronize(stream.get()));
  CU_ASSERT_OK(cuMemcpyDtoH(&byte, live + kMiB - 1, 1));
  EXPECT_EQ(0x3c, byte);
  CU_EXPECT_OK(cuMemFreeAsync(live, stream.get()));
  CU_EXPECT_OK(cuStreamSynchronize(stream.get()));
}

TEST(SizesGrowth, RandomWorkloadNeverOverlapsAndCountsExactly) {
  // A small version of the measured random workload (log-uniform 256 B .. 16 MiB, threshold max):
  // no two live allocations overlap, USED is exact and RESERVED covers it.
  CONFORMANCE_KEEP_ALL_POOL(pool, 0);
  CONFORMANCE_STREAM(stream);
  std::mt19937_64 random(20261129);
  std::uniform_real_distribution<double> log_size(8.0, 24.0);  // log2 of 256 B .. 16 MiB
  std::vector<std::pair<CUdeviceptr, std::uint64_t>> live(64, {0, 0});
  std::map<CUdeviceptr, std::uint64_t> by_address;  // live ranges, to check overlap
  std::uint64_t live_bytes = 0;
  std::uint64_t peak_bytes = 0;
  for (int op = 0; op < 3000; ++op) {
    if (op % 500 == 499) {
      CU_ASSERT_OK(cuStreamSynchronize(stream.get()));
      ASSERT_EQ(live_bytes, used(pool.get())) << "op " << op;
      ASSERT_GE(reserved(pool.get()), used(pool.get()));
    }
    auto& slot = live[static_cast<std::size_t>(random() % live.size())];
    if (slot.first != 0) {
      CU_ASSERT_OK(cuMemFreeAsync(slot.first, stream.get()));
      by_address.erase(slot.first);
      live_bytes -= slot.second;
      slot = {0, 0};
      continue;
    }
    const auto size = static_cast<std::uint64_t>(std::exp2(log_size(random)));
    CUdeviceptr p = 0;
    CU_ASSERT_OK(cuMemAllocFromPoolAsync(&p, size, pool.get(), stream.get())) << "op " << op << " size " << size;
    auto next = by_address.lower_bound(p);
    if (next != by_address.end()) {
      ASSERT_LE(p + size, next->first) << "overlaps the next live block, op " << op;
    }
    if (next != by_address.begin()) {
      auto previous = std::prev(next);
      ASSERT_LE(previous->first + previous->second, p) << "overlaps the previous live block, op " << op;
    }
    by_address.emplace(p, size);
    slot = {p, size};
    live_bytes += size;
    peak_bytes = std::max(peak_bytes, live_bytes);
  }
  CU_ASSERT_OK(cuStreamSynchronize(stream.get()));
  EXPECT_EQ(live_bytes, used(pool.get()));
  EXPECT_GE(used_high(pool.get()), peak_bytes);
  EXPECT_GE(reserved_high(pool.get()), used_high(pool.get()));
  EXPECT_EQ(0U, reserved(pool.get()) % vmm_granularity());
  for (const auto& [p, size] : live) {
    if (p != 0) {
      CU_EXPECT_OK(cuMemFreeAsync(p, stream.get()));
    }
  }
  CU_EXPECT_OK(cuStreamSynchronize(stream.get()));
  EXPECT_EQ(0U, used(pool.get()));
}

}  // namespace
}  // namespace conformance
