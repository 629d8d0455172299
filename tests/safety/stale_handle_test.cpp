// Class 6: a stream handle that outlived its stream must not lend its old kind or context to the
// stream that gets the handle next.
//
// Each test: a blocking stream S (created without CU_STREAM_NON_BLOCKING, so it synchronises
// implicitly with the legacy default stream) is used with streampool, then goes away: with its
// context, when the program releases the primary context down to zero (cuDevicePrimaryCtxRelease,
// which destroys it), or by cuStreamDestroy while another thread creates a stream in the middle of
// it. A new non-blocking stream N then gets S's handle (the driver reuses handles; the fake driver
// deterministically). The legacy stream frees a block behind work that still uses it, and N
// allocates the same size. Violation: N gets the legacy stream's block and N's work runs while the
// legacy stream's work on it still runs: N was taken for S, a blocking stream, and so as ordered
// after the legacy stream, which a non-blocking stream never is.
// The context variants create N in another context C2 and free a block on N behind work that
// still uses it; the program synchronizes S's old context, which waits for nothing of C2, and
// another stream of C2 allocates the same size. Violation: it gets N's block while N's work on it
// still runs: N was taken for a stream of the synchronized context.
#include <thread>

#include "safety_support.hpp"

namespace safety {
namespace {

class StaleHandle : public SafetyTest {
 protected:
  void TearDown() override {
    if (reused != nullptr) SP(cuStreamDestroy_v2)(reused);
    SafetyTest::TearDown();
  }

  // A blocking stream streampool has allocated and freed on.
  void create_known_blocking_stream() {
    ASSERT_EQ(SP(cuStreamCreate)(&old_stream, CU_STREAM_DEFAULT), CUDA_SUCCESS);
    CUdeviceptr warm = 0;
    ASSERT_EQ(SP(cuMemAllocFromPoolAsync)(&warm, 4096, pool, old_stream), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuMemFreeAsync)(warm, old_stream), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuStreamSynchronize)(old_stream), CUDA_SUCCESS);
  }

  // Every retain of the primary context released (the context and its streams are destroyed), then
  // retained again and current.
  void release_primary_context_to_zero(decltype(&::cuDevicePrimaryCtxRelease_v2) release) {
    unsigned flags = 0;
    int active = 1;
    for (int releases = 0; active != 0 && releases < 16; ++releases) {
      ASSERT_EQ(release(device), CUDA_SUCCESS);
      ASSERT_EQ(SP(cuDevicePrimaryCtxGetState)(device, &flags, &active), CUDA_SUCCESS);
    }
    ASSERT_EQ(active, 0);
    ASSERT_EQ(SP(cuDevicePrimaryCtxRetain)(&primary, device), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuCtxSetCurrent)(primary), CUDA_SUCCESS);
  }

  void create_stream_on_the_old_handle() {
    ASSERT_EQ(SP(cuStreamCreate)(&reused, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    ASSERT_EQ(reused, old_stream) << "the fake driver hands the destroyed handle out again";
  }

  // The legacy stream gives up a block; the stream on the old handle takes the same size.
  void legacy_free_then_reuse(CUmemoryPool from) {
    ASSERT_NO_FATAL_FAILURE(give_up_block(old_owner, from, CU_STREAM_LEGACY));
    ASSERT_NO_FATAL_FAILURE(take_block(new_owner, old_owner, from, reused));
    expect_safe(CU_STREAM_LEGACY, reused);
  }

  // The fixture's streams would go with the context too; only the old stream's handle is freed.
  void drop_fixture_streams() {
    ASSERT_EQ(SP(cuStreamDestroy_v2)(a), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuStreamDestroy_v2)(b), CUDA_SUCCESS);
    a = b = nullptr;
  }

  CUstream old_stream = nullptr;
  CUstream reused = nullptr;
};

// The fake driver holds cuStreamDestroy open after the stream is gone (its handle free again), and
// meanwhile this thread creates N on that handle and allocates on it.
void destroy_while_another_thread_reuses_the_handle(const char* destroy_name, CUcontext context, CUstream old_stream,
                                                    CUstream* reused, CUmemoryPool pool) {
  auto destroy = reinterpret_cast<decltype(&::cuStreamDestroy_v2)>(streampool_symbol(destroy_name));
  ASSERT_NE(destroy, nullptr);
  set_delay_after(destroy_name, 60000);
  const unsigned long long calls_before = fake_calls(destroy_name);
  std::thread destroyer([&] {
    SP(cuCtxSetCurrent)(context);
    destroy(old_stream);
  });
  wait_for_call(destroy_name, calls_before);
  sleep_ms(5);  // the destroy acts at once, then the fake holds it
  const CUresult created = SP(cuStreamCreate)(reused, CU_STREAM_NON_BLOCKING);
  CUdeviceptr early = 0;
  const CUresult allocated = SP(cuMemAllocFromPoolAsync)(&early, 4096, pool, *reused);
  SP(cuMemFreeAsync)(early, *reused);
  destroyer.join();
  clear_delays();
  ASSERT_EQ(created, CUDA_SUCCESS);
  ASSERT_EQ(*reused, old_stream) << "the fake driver hands the destroyed handle out again";
  ASSERT_EQ(allocated, CUDA_SUCCESS);
}

// N in a created context on S's handle; a second stream of that context takes what N frees.
class StaleHandleInAnotherContext : public StaleHandle {
 protected:
  void TearDown() override {
    if (created != nullptr) {
      SP(cuCtxPushCurrent_v2)(created);
      SP(cuCtxSynchronize)();
      SP(cuStreamDestroy_v2)(reused);
      reused = nullptr;
      if (taking != nullptr) SP(cuStreamDestroy_v2)(taking);
      SP(cuCtxDestroy_v2)(created);
    }
    StaleHandle::TearDown();
  }

  // N frees a block behind work; the old context is synchronized; another stream of C2 (C2 is
  // current) takes the same size.
  void free_on_reused_then_synchronize_old_context(CUmemoryPool from) {
    ASSERT_EQ(SP(cuStreamCreate)(&taking, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    ASSERT_NO_FATAL_FAILURE(give_up_block(old_owner, from, reused));
    ASSERT_EQ(SP(cuCtxSynchronize_v2)(primary), CUDA_SUCCESS);
    ASSERT_NO_FATAL_FAILURE(take_block(new_owner, old_owner, from, taking));
    expect_safe(reused, taking);
  }

  CUcontext created = nullptr;
  CUstream taking = nullptr;
};

TEST_F(StaleHandleInAnotherContext, StreamOfAReleasedPrimaryContextDoesNotLendItsContextToTheNextStream) {
  ASSERT_NO_FATAL_FAILURE(drop_fixture_streams());
  ASSERT_NO_FATAL_FAILURE(create_known_blocking_stream());
  ASSERT_NO_FATAL_FAILURE(release_primary_context_to_zero(SP(cuDevicePrimaryCtxRelease_v2)));
  CUmemoryPool fresh = create_pool(device);
  ASSERT_EQ(SP(cuCtxCreate_v4)(&created, nullptr, 0, device), CUDA_SUCCESS);  // C2, now current

  ASSERT_EQ(SP(cuStreamCreate)(&reused, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(reused, old_stream) << "the fake driver hands the destroyed handle out again";

  free_on_reused_then_synchronize_old_context(fresh);
  SP(cuCtxSynchronize)();
  SP(cuMemPoolDestroy)(fresh);
}

TEST_F(StaleHandleInAnotherContext, StreamCreatedDuringAnotherStreamsDestroyDoesNotTakeItsContext) {
  ASSERT_NO_FATAL_FAILURE(create_known_blocking_stream());
  ASSERT_EQ(SP(cuCtxCreate_v4)(&created, nullptr, 0, device), CUDA_SUCCESS);  // C2, now current

  ASSERT_NO_FATAL_FAILURE(
      destroy_while_another_thread_reuses_the_handle("cuStreamDestroy_v2", primary, old_stream, &reused, pool));

  free_on_reused_then_synchronize_old_context(pool);
}

// The allocation hooks' route of a handle (its device and the device's current pool) is the
// stream's that holds the handle now: a stream of device 1 on the handle of a destroyed stream of
// device 0 allocates from device 1's pool.
TEST_F(StaleHandle, StreamOfAnotherDeviceOnADestroyedStreamsHandleAllocatesFromItsOwnDevicesPool) {
  ASSERT_EQ(SP(cuStreamCreate)(&old_stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  CUdeviceptr warm = 0;
  ASSERT_EQ(SP(cuMemAllocAsync)(&warm, kBlockBytes, old_stream), CUDA_SUCCESS);  // device 0's current pool
  ASSERT_EQ(SP(cuMemFreeAsync)(warm, old_stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuStreamSynchronize)(old_stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuStreamDestroy_v2)(old_stream), CUDA_SUCCESS);
  CUcontext device1 = nullptr;
  ASSERT_EQ(SP(cuDevicePrimaryCtxRetain)(&device1, 1), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuCtxSetCurrent)(device1), CUDA_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(create_stream_on_the_old_handle());
  CUmemoryPool device1_pool = nullptr;
  ASSERT_EQ(SP(cuDeviceGetMemPool)(&device1_pool, 1), CUDA_SUCCESS);

  CUdeviceptr block = 0;
  ASSERT_EQ(SP(cuMemAllocAsync)(&block, kBlockBytes, reused), CUDA_SUCCESS);
  CUmemoryPool served_by = nullptr;
  EXPECT_EQ(SP(cuPointerGetAttribute)(&served_by, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, block), CUDA_SUCCESS);

  EXPECT_EQ(served_by, device1_pool);
  EXPECT_EQ(SP(cuMemFreeAsync)(block, reused), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuStreamSynchronize)(reused), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuStreamDestroy_v2)(reused), CUDA_SUCCESS);
  reused = nullptr;
  EXPECT_EQ(SP(cuCtxSetCurrent)(primary), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuDevicePrimaryCtxRelease_v2)(1), CUDA_SUCCESS);
}

TEST_F(StaleHandle, StreamOfAReleasedPrimaryContextDoesNotLendItsKindToTheNextStream) {
  ASSERT_NO_FATAL_FAILURE(drop_fixture_streams());
  ASSERT_NO_FATAL_FAILURE(create_known_blocking_stream());

  ASSERT_NO_FATAL_FAILURE(release_primary_context_to_zero(SP(cuDevicePrimaryCtxRelease_v2)));
  ASSERT_NO_FATAL_FAILURE(create_stream_on_the_old_handle());
  CUmemoryPool fresh = create_pool(device);

  legacy_free_then_reuse(fresh);
  SP(cuMemPoolDestroy)(fresh);
}

TEST_F(StaleHandle, StreamOfAPrimaryContextReleasedThroughTheFirstAbiDoesNotLendItsKindToTheNextStream) {
  ASSERT_NO_FATAL_FAILURE(drop_fixture_streams());
  ASSERT_NO_FATAL_FAILURE(create_known_blocking_stream());

  ASSERT_NO_FATAL_FAILURE(release_primary_context_to_zero(
      reinterpret_cast<decltype(&::cuDevicePrimaryCtxRelease_v2)>(streampool_symbol("cuDevicePrimaryCtxRelease"))));
  ASSERT_NO_FATAL_FAILURE(create_stream_on_the_old_handle());
  CUmemoryPool fresh = create_pool(device);

  legacy_free_then_reuse(fresh);
  SP(cuMemPoolDestroy)(fresh);
}

TEST_F(StaleHandle, StreamCreatedDuringAnotherStreamsDestroyDoesNotTakeItsKind) {
  ASSERT_NO_FATAL_FAILURE(create_known_blocking_stream());

  ASSERT_NO_FATAL_FAILURE(
      destroy_while_another_thread_reuses_the_handle("cuStreamDestroy_v2", primary, old_stream, &reused, pool));

  legacy_free_then_reuse(pool);
}

TEST_F(StaleHandle, StreamCreatedDuringAnotherStreamsDestroyThroughTheFirstAbiDoesNotTakeItsKind) {
  ASSERT_NO_FATAL_FAILURE(create_known_blocking_stream());

  ASSERT_NO_FATAL_FAILURE(
      destroy_while_another_thread_reuses_the_handle("cuStreamDestroy", primary, old_stream, &reused, pool));

  legacy_free_then_reuse(pool);
}

}  // namespace
}  // namespace safety
