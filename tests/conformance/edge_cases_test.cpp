// driver-behaviour.md, "Edge cases": the allocation and free calls at their boundaries, in
// driver-API terms (cudaErrorMemoryAllocation is CUDA_ERROR_OUT_OF_MEMORY, cudaErrorInvalidValue
// is CUDA_ERROR_INVALID_VALUE).
#include "conformance.hpp"

#include <algorithm>
#include <cstdlib>

namespace conformance {
namespace {

// Rounds up to a multiple of 2 MiB so that huge sizes stay plausible allocation sizes.
std::uint64_t round_up_2mib(std::uint64_t bytes) { return (bytes + 2 * kMiB - 1) / (2 * kMiB) * (2 * kMiB); }

TEST(EdgeCases, ZeroByteAllocationReturnsNoPointerAndNoError) {
  // Measured through cudart: success and NULL. The driver entry point is not measured on its own,
  // so INVALID_VALUE is tolerated; a non-null pointer or another error is not.
  CONFORMANCE_STREAM(stream);
  CUdeviceptr p = 0;
  const CUresult result = cuMemAllocAsync(&p, 0, stream.get());
  EXPECT_TRUE(result == CUDA_SUCCESS || result == CUDA_ERROR_INVALID_VALUE) << ::testing::PrintToString(result);
  EXPECT_EQ(0U, p);
  CU_EXPECT_OK(cuStreamSynchronize(stream.get()));
}

TEST(EdgeCases, FreeOfNullIsHarmless) {
  // Measured through cudart: success. As above, the bare driver may say INVALID_VALUE.
  CONFORMANCE_STREAM(stream);
  const CUresult result = cuMemFreeAsync(0, stream.get());
  EXPECT_TRUE(result == CUDA_SUCCESS || result == CUDA_ERROR_INVALID_VALUE) << ::testing::PrintToString(result);
  CU_EXPECT_OK(cuStreamSynchronize(stream.get()));
  CUdeviceptr p = 0;
  CU_ASSERT_OK(cuMemAllocAsync(&p, 16, stream.get()));  // the stream still works afterwards
  CU_EXPECT_OK(cuMemFreeAsync(p, stream.get()));
}

TEST(EdgeCases, NullResultPointerIsInvalidValue) {
  CONFORMANCE_STREAM(stream);
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemAllocAsync(nullptr, 16, stream.get()));
  CUmemoryPool pool = nullptr;
  CU_ASSERT_OK(cuDeviceGetDefaultMemPool(&pool, device()));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemAllocFromPoolAsync(nullptr, 16, pool, stream.get()));
}

TEST(EdgeCases, AbsurdlyLargeRequestFailsOutOfMemoryAndIsNotSticky) {
  // The runtime row uses 1 << 50; here the size is derived from the device so that it is absurd
  // on the 139 GiB H200 and on the fake driver's 16 GiB alike.
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  memory_info(&free_bytes, &total_bytes);
  const std::uint64_t absurd = round_up_2mib(std::uint64_t{total_bytes} * 8192);
  CONFORMANCE_STREAM(stream);
  CUdeviceptr p = 0;
  EXPECT_EQ(CUDA_ERROR_OUT_OF_MEMORY, cuMemAllocAsync(&p, absurd, stream.get()));
  EXPECT_EQ(0U, p);
  CUdeviceptr q = 0;
  CU_ASSERT_OK(cuMemAllocAsync(&q, kMiB, stream.get()));  // the failure is not sticky
  EXPECT_NE(0U, q);
  CU_EXPECT_OK(cuMemFreeAsync(q, stream.get()));
  CU_EXPECT_OK(cuStreamSynchronize(stream.get()));
  CUmemoryPool pool = nullptr;
  CU_ASSERT_OK(cuDeviceGetDefaultMemPool(&pool, device()));
  CU_EXPECT_OK(cuMemPoolTrimTo(pool, 0));  // do not leave a big reservation to later tests
}

TEST(EdgeCases, RequestAboveFreeMemoryFailsAndStreampoolLeavesThePoolUnchanged) {
  CONFORMANCE_KEEP_ALL_POOL(pool, 0);
  CONFORMANCE_STREAM(stream);
  CUdeviceptr warm = 0;
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&warm, kMiB, pool.get(), stream.get()));
  CU_ASSERT_OK(cuMemFreeAsync(warm, stream.get()));
  CU_ASSERT_OK(cuStreamSynchronize(stream.get()));
  const std::uint64_t reserved_before = reserved(pool.get());
  const std::uint64_t used_before = used(pool.get());

  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  memory_info(&free_bytes, &total_bytes);
  const std::uint64_t beyond = round_up_2mib(std::uint64_t{free_bytes} +
                                             std::max<std::uint64_t>(64 * kMiB, (total_bytes - free_bytes) / 2));
  CUdeviceptr p = 0;
  EXPECT_EQ(CUDA_ERROR_OUT_OF_MEMORY, cuMemAllocFromPoolAsync(&p, beyond, pool.get(), stream.get()));
  EXPECT_EQ(0U, p);
  const std::uint64_t reserved_after = reserved(pool.get());
  EXPECT_EQ(used_before, used(pool.get()));
  if (under_streampool()) {
    EXPECT_EQ(reserved_before, reserved_after) << "streampool leaves the pool unchanged after a failed request";
  } else {
    // Measured: the driver keeps almost the whole device reserved after the failed attempt.
    EXPECT_GE(reserved_after, reserved_before);
  }

  CUdeviceptr next = 0;
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&next, kMiB, pool.get(), stream.get()));  // the next request works
  CU_EXPECT_OK(cuMemFreeAsync(next, stream.get()));
  CU_EXPECT_OK(cuStreamSynchronize(stream.get()));
}

TEST(EdgeCases, LegacyAndPerThreadDefaultStreamsAllocate) {
  for (CUstream stream : {static_cast<CUstream>(nullptr), legacy_stream(), per_thread_stream()}) {
    CUdeviceptr p = 0;
    CU_ASSERT_OK(cuMemAllocAsync(&p, 16, stream));
    EXPECT_NE(0U, p);
    CU_EXPECT_OK(cuMemsetD8Async(p, 0x11, 16, stream));
    CU_EXPECT_OK(cuMemFreeAsync(p, stream));
    CU_EXPECT_OK(cuStreamSynchronize(stream));
  }
}

TEST(EdgeCases, PlainFreeOfAPoolPointerWorksAndReusesTheBlock) {
  CONFORMANCE_KEEP_ALL_POOL(pool, 0);
  CONFORMANCE_STREAM(stream);
  CUdeviceptr a = 0;
  CUdeviceptr b = 0;
  CUdeviceptr c = 0;
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&a, 1000, pool.get(), stream.get()));
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&b, 1000, pool.get(), stream.get()));
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&c, 1000, pool.get(), stream.get()));
  CU_ASSERT_OK(cuStreamSynchronize(stream.get()));
  ASSERT_EQ(3000U, used(pool.get()));

  CU_ASSERT_OK(cuMemFree(b));
  // Driver bug (measured): USED_MEM_CURRENT is never decreased by cuMemFree. streampool is exact.
  EXPECT_EQ(under_streampool() ? 2000U : 3000U, used(pool.get()));

  CUdeviceptr d = 0;
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&d, 1000, pool.get(), stream.get()));
  EXPECT_EQ(b, d) << "the next allocation of that size reuses the block";
  if (under_streampool()) {
    EXPECT_EQ(3000U, used(pool.get()));
  }

  CU_ASSERT_OK(cuMemFreeAsync(a, stream.get()));
  CU_ASSERT_OK(cuMemFreeAsync(c, stream.get()));
  CU_ASSERT_OK(cuMemFreeAsync(d, stream.get()));
  CU_ASSERT_OK(cuStreamSynchronize(stream.get()));
  EXPECT_EQ(under_streampool() ? 0U : 1000U, used(pool.get()));
}

TEST(EdgeCases, DoubleFreeIsInvalidValue) {
  CONFORMANCE_KEEP_ALL_POOL(pool, 0);
  CONFORMANCE_STREAM(stream);
  CUdeviceptr p = 0;
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&p, kMiB, pool.get(), stream.get()));
  CU_ASSERT_OK(cuMemFreeAsync(p, stream.get()));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemFreeAsync(p, stream.get()));
  CU_EXPECT_OK(cuStreamSynchronize(stream.get()));
  EXPECT_EQ(0U, used(pool.get()));
}

TEST(EdgeCases, FreeOfAnInteriorPointerIsInvalidValue) {
  CONFORMANCE_KEEP_ALL_POOL(pool, 0);
  CONFORMANCE_STREAM(stream);
  CUdeviceptr p = 0;
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&p, kMiB, pool.get(), stream.get()));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemFreeAsync(p + 512, stream.get()));
  EXPECT_EQ(kMiB, used(pool.get())) << "the allocation is still live";
  CU_EXPECT_OK(cuMemFreeAsync(p, stream.get()));
  CU_EXPECT_OK(cuStreamSynchronize(stream.get()));
}

TEST(EdgeCases, AsyncFreeOfAPlainAllocationSucceeds) {
  // The driver does not check that the pointer came from a pool; streampool must forward it.
  CONFORMANCE_STREAM(stream);
  CUdeviceptr p = 0;
  CU_ASSERT_OK(cuMemAlloc(&p, kMiB));
  CU_EXPECT_OK(cuMemFreeAsync(p, stream.get()));
  CU_EXPECT_OK(cuStreamSynchronize(stream.get()));
}

TEST(EdgeCases, InvalidStreamHandleIsAnErrorNotACrash) {
  if (!under_streampool()) {
    GTEST_SKIP() << "NVIDIA's driver segfaults on an invalid stream handle (driver-behaviour.md); "
                    "only streampool promises an error code";
  }
  // Run in a re-executed child so that a crash fails this test instead of the whole suite.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        const auto bogus = reinterpret_cast<CUstream>(std::uintptr_t{0x12345});
        CUdeviceptr p = 0;
        if (cuMemAllocAsync(&p, 16, bogus) == CUDA_SUCCESS) std::_Exit(1);
        CUdeviceptr q = 0;
        if (cuMemAllocAsync(&q, 16, nullptr) != CUDA_SUCCESS) std::_Exit(2);
        if (cuStreamSynchronize(nullptr) != CUDA_SUCCESS) std::_Exit(3);
        if (cuMemFreeAsync(q, bogus) == CUDA_SUCCESS) std::_Exit(4);
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace conformance
