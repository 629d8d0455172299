// A marker meant for another thread's per-thread default stream is never recorded elsewhere.
//
// CU_STREAM_PER_THREAD names the calling thread's own per-thread stream, so streampool can record
// a marker in another thread's only from that thread: it cannot make such a stream's free a real
// wait of the allocating stream, and must not use the free through a wait. The test: thread T's
// per-thread stream frees a block of a capped pool (it cannot grow) behind work that still uses
// it; T stays alive; this thread's non-blocking stream B allocates the same size, which the pool
// can serve only by making B wait for T's free. Violation: B gets the block and B's work runs
// while T's work on it still runs: the wait was put behind a marker recorded in this thread's own
// per-thread stream, which had nothing to wait for.
#include <latch>
#include <thread>

#include "safety_support.hpp"

namespace safety {
namespace {

constexpr std::size_t kCappedBytes = std::size_t{32} << 20;  // the pool's whole size: one block

class PerThreadMarker : public SafetyTest {};

TEST_F(PerThreadMarker, AnotherThreadsPerThreadStreamsFreeIsNotTakenBehindAMarkerOfThisThreadsOwn) {
  CUmemoryPool capped = create_pool(device, kCappedBytes);
  std::latch freed(1);
  std::latch may_leave(1);
  std::thread owner([&] {
    SP(cuCtxSetCurrent)(primary);
    give_up_block(old_owner, capped, CU_STREAM_PER_THREAD, kCappedBytes);
    freed.count_down();
    may_leave.wait();  // its per-thread stream lives while this thread allocates
    SP(cuStreamSynchronize)(CU_STREAM_PER_THREAD);
  });
  freed.wait();

  new_owner.previous = &old_owner;
  new_owner.bytes = kCappedBytes;
  const CUresult allocated = SP(cuMemAllocFromPoolAsync)(&new_owner.block, kCappedBytes, capped, b);
  if (allocated == CUDA_SUCCESS) {
    EXPECT_EQ(SP(cuLaunchHostFunc)(b, new_owner_work, &new_owner), CUDA_SUCCESS);
  }
  may_leave.count_down();
  owner.join();
  ASSERT_EQ(SP(cuStreamSynchronize)(b), CUDA_SUCCESS);

  if (allocated == CUDA_SUCCESS) {
    EXPECT_EQ(violation(old_owner, new_owner), "");
    SP(cuMemFreeAsync)(new_owner.block, b);
  } else {
    EXPECT_EQ(allocated, CUDA_ERROR_OUT_OF_MEMORY);  // the free could not be made a real wait of B
  }
  SP(cuStreamSynchronize)(b);
  SP(cuMemPoolDestroy)(capped);
}

// The other side: a marker in this thread's own per-thread stream is recorded, so that its free,
// proven by a synchronize of that stream, serves another stream. A capped pool (it cannot grow)
// leaves B nothing else: without the marker the synchronize proves nothing the free needs (the
// per-thread stream's frees follow the legacy stream's work by the implicit order), and B's
// allocation could only fail.
TEST_F(PerThreadMarker, ThisThreadsPerThreadStreamsSynchronizedFreeServesAnotherStream) {
  CUmemoryPool capped = create_pool(device, kCappedBytes);
  give_up_block(old_owner, capped, CU_STREAM_PER_THREAD, kCappedBytes);
  const unsigned long long records_before = fake_calls("cuEventRecord");
  ASSERT_EQ(SP(cuStreamSynchronize)(CU_STREAM_PER_THREAD), CUDA_SUCCESS);
  EXPECT_GT(fake_calls("cuEventRecord"), records_before) << "no marker recorded in the per-thread stream";

  take_block(new_owner, old_owner, capped, b);
  EXPECT_EQ(new_owner.block, old_owner.block) << "the synchronized free did not serve the other stream";
  expect_safe(CU_STREAM_PER_THREAD, b);
  SP(cuStreamSynchronize)(b);
  SP(cuMemPoolDestroy)(capped);
}

}  // namespace
}  // namespace safety
