// Reuse across devices. A device-1 stream allocates a block of a device-0 pool (device 1 has
// access), queues a write into it that is held back for kSlowWriteMs (a kernel spinning on
// %globaltimer, or a sleeping host function and a memset) and frees the block behind it. Then a
// device-0 stream allocates the same size from the same pool and writes its own pattern at once.
// If the device-0 stream got memory overlapping the block while device 1's write still ran, that
// late write lands in the new owner's data: the detector reads it back once both streams ended.
// The orderings: an event recorded on the device-1 stream after the free and waited for by the
// device-0 stream (reuse is allowed, behind device 1's write); none (reuse must wait for the write
// or not happen); a cuCtxSynchronize of device 0's context, which says nothing of device 1's stream.
#include <cstdio>
#include <tuple>

#include "two_gpus.hpp"

namespace conformance::two_gpus {
namespace {

constexpr std::size_t kWords = kMiB / sizeof(std::uint32_t);

enum class Ordering { event, none, device0_synchronize };

std::string ordering_name(Ordering ordering) {
  switch (ordering) {
    case Ordering::event: return "OrderedByAnEventOfDevice1";
    case Ordering::none: return "Unordered";
    case Ordering::device0_synchronize: return "AfterSynchronizingDevice0sContext";
  }
  return "Unknown";
}

class TwoGpusReuse : public TwoGpusTest, public ::testing::WithParamInterface<std::tuple<Writer, Ordering>> {
 protected:
  void SetUp() override {
    TwoGpusTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    require_writer(std::get<0>(GetParam()));
  }
};

TEST_P(TwoGpusReuse, Device0GetsTheBlockOfADevice1FreeOnlyBehindDevice1sWrite) {
  const auto [writer, ordering] = GetParam();
  CONFORMANCE_KEEP_ALL_POOL(pool, 0);
  CUmemAccessDesc grant = access_for(1, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  CU_ASSERT_OK(cuMemPoolSetAccess(pool.get(), &grant, 1));
  ContextStream s0(context0_);
  ContextStream s1(context1_);
  ContextEvent freed(context1_);
  CU_ASSERT_OK(s0.status());
  CU_ASSERT_OK(s1.status());
  CU_ASSERT_OK(freed.status());

  // The old owner, on device 1: allocate, a write held back, free behind it.
  CUdeviceptr old_block = 0;
  {
    ScopedContext scope(context1_);
    CU_ASSERT_OK(cuMemAllocFromPoolAsync(&old_block, kMiB, pool.get(), s1.get()));
    CU_ASSERT_OK(enqueue_write(writer, context1_, s1.get(), old_block, kWords, kOldPattern, kSlowWriteMs));
    CU_ASSERT_OK(cuMemFreeAsync(old_block, s1.get()));
    if (ordering == Ordering::event) {
      CU_ASSERT_OK(cuEventRecord(freed.get(), s1.get()));
    }
  }

  // The new owner, on device 0.
  if (ordering == Ordering::event) {
    CU_ASSERT_OK(cuStreamWaitEvent(s0.get(), freed.get(), 0));
  }
  if (ordering == Ordering::device0_synchronize) {
    CU_ASSERT_OK(cuCtxSynchronize());
  }
  CUdeviceptr new_block = 0;
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&new_block, kMiB, pool.get(), s0.get()));
  CU_ASSERT_OK(cuMemsetD32Async(new_block, kNewPattern, kWords, s0.get()));
  CU_ASSERT_OK(cuStreamSynchronize(s0.get()));
  {
    ScopedContext scope(context1_);
    CU_ASSERT_OK(cuStreamSynchronize(s1.get()));  // device 1's late write, if any, has landed now
  }
  std::vector<std::uint32_t> words;
  CU_ASSERT_OK(read_words(s0.get(), new_block, kWords, &words));

  const bool reused = new_block == old_block;
  std::printf("two-gpus reuse (%s, %s): the device-0 allocation %s the device-1 block\n", writer_name(writer).c_str(),
              ordering_name(ordering).c_str(), reused ? "reused" : "did not reuse");
  RecordProperty("reused", reused ? "yes" : "no");
  EXPECT_EQ("", mismatch(words, kNewPattern))
      << "device 1's write, queued before the free, landed in device 0's new allocation (reused: " << reused << ")";
  CU_EXPECT_OK(cuMemFreeAsync(new_block, s0.get()));
}

INSTANTIATE_TEST_SUITE_P(
    TwoGpus, TwoGpusReuse,
    ::testing::Combine(::testing::Values(Writer::kernel, Writer::memset),
                       ::testing::Values(Ordering::event, Ordering::none, Ordering::device0_synchronize)),
    [](const ::testing::TestParamInfo<std::tuple<Writer, Ordering>>& param_info) {
      return writer_name(std::get<0>(param_info.param)) + ordering_name(std::get<1>(param_info.param));
    });

}  // namespace
}  // namespace conformance::two_gpus
