// Which pool an allocation on a created stream comes from, over a fake driver with two devices:
// the stream's own device's current pool, whichever context is current. The hooks keep the route
// of each stream they resolved in per-thread caches (a few most recent routes per hook, and a
// table of streams indexed by handle bits); a cache entry of one stream must never answer for
// another, so streams of both devices are used in turn, more of them than the caches hold.
#include <cstdlib>
#include <thread>
#include <vector>

#include "fault_switch.hpp"
#include "hooks_test_api.hpp"

namespace hooks_test {
namespace {

// Two fake devices, set before the fake driver reads its configuration (on the first cuInit).
const bool two_devices = [] { return setenv("STREAMPOOL_FAKE_DEVICES", "2", 0) == 0; }();

class StreamRoutes : public DriverTest {
 protected:
  void SetUp() override {
    DriverTest::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_TRUE(two_devices);
    ASSERT_EQ(SP(cuDevicePrimaryCtxRetain)(&device1, 1), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuDeviceGetMemPool)(&pools[0], 0), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuDeviceGetMemPool)(&pools[1], 1), CUDA_SUCCESS);
    ASSERT_NE(pools[0], pools[1]);
  }
  void TearDown() override {
    SP(cuCtxSetCurrent)(context);
    for (CUstream created : streams) SP(cuStreamDestroy_v2)(created);
    if (device1 != nullptr) SP(cuDevicePrimaryCtxRelease_v2)(1);
    DriverTest::TearDown();
  }

  // `count` streams of each device, created in that device's primary context, listed in turn:
  // device 0's, device 1's, device 0's, ...
  void create_streams_in_turn(int count) {
    for (int i = 0; i < count; ++i) {
      for (int owner = 0; owner < 2; ++owner) {
        ASSERT_EQ(SP(cuCtxSetCurrent)(owner == 0 ? context : device1), CUDA_SUCCESS);
        CUstream created = nullptr;
        ASSERT_EQ(SP(cuStreamCreate)(&created, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
        streams.push_back(created);
        owners.push_back(owner);
      }
    }
    ASSERT_EQ(SP(cuCtxSetCurrent)(context), CUDA_SUCCESS);
  }

  CUcontext device1 = nullptr;
  CUmemoryPool pools[2] = {nullptr, nullptr};
  std::vector<CUstream> streams;
  std::vector<int> owners;
};

TEST_F(StreamRoutes, StreamsOfTwoDevicesUsedInTurnEachAllocateFromTheirOwnDevicesPool) {
  constexpr int kStreamsPerDevice = 24;  // more than the caches hold, so entries are replaced
  ASSERT_NO_FATAL_FAILURE(create_streams_in_turn(kStreamsPerDevice));

  int misrouted = 0;
  for (int round = 0; round < 3; ++round) {
    for (std::size_t i = 0; i < streams.size(); ++i) {
      CUdeviceptr block = 0;
      ASSERT_EQ(SP(cuMemAllocAsync)(&block, 256, streams[i]), CUDA_SUCCESS);
      CUmemoryPool served_by = nullptr;
      ASSERT_EQ(SP(cuPointerGetAttribute)(&served_by, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, block), CUDA_SUCCESS);
      if (served_by != pools[owners[i]]) ++misrouted;
      ASSERT_EQ(SP(cuMemFreeAsync)(block, streams[i]), CUDA_SUCCESS);
    }
  }

  EXPECT_EQ(misrouted, 0) << "allocations served by the other device's pool";
  for (CUstream created : streams) EXPECT_EQ(SP(cuStreamSynchronize)(created), CUDA_SUCCESS);
}

// A stream used on one thread while another destroys it (the program's race, which CUDA leaves
// undefined; streampool must not carry it further): the use registers the stream again after the
// destroy's hook forgot it and before the driver destroyed it. The next stream the driver creates
// under that handle, here on the other device, must still be served by its own device's pool: a
// creation forgets whatever is known of its handle, and every route cached for it.
TEST_F(StreamRoutes, AStreamUsedWhileItIsDestroyedLeavesNothingToTheNextStreamUnderItsHandle) {
  CUstream doomed = nullptr;
  ASSERT_EQ(SP(cuStreamCreate)(&doomed, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);  // device 0
  ASSERT_NO_FATAL_FAILURE(delay_before("cuStreamDestroy_v2", 1'000'000));
  const unsigned long long destroys = fake_calls("cuStreamDestroy_v2");
  std::thread destroyer([doomed] { SP(cuStreamDestroy_v2)(doomed); });
  while (fake_calls("cuStreamDestroy_v2") == destroys) std::this_thread::yield();  // in the driver, not yet acted
  CUdeviceptr during = 0;
  const CUresult used = SP(cuMemAllocAsync)(&during, 256, doomed);
  destroyer.join();
  ASSERT_NO_FATAL_FAILURE(delay_before("cuStreamDestroy_v2", 0));
  EXPECT_EQ(used, CUDA_SUCCESS);

  ASSERT_EQ(SP(cuCtxSetCurrent)(device1), CUDA_SUCCESS);
  CUstream reborn = nullptr;
  ASSERT_EQ(SP(cuStreamCreate)(&reborn, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  streams.push_back(reborn);
  ASSERT_EQ(reborn, doomed) << "the fake did not reuse the stream handle";
  ASSERT_EQ(SP(cuCtxSetCurrent)(context), CUDA_SUCCESS);
  CUdeviceptr block = 0;
  ASSERT_EQ(SP(cuMemAllocAsync)(&block, 256, reborn), CUDA_SUCCESS);
  CUmemoryPool served_by = nullptr;
  EXPECT_EQ(SP(cuPointerGetAttribute)(&served_by, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, block), CUDA_SUCCESS);
  EXPECT_EQ(served_by, pools[1]) << "the new stream was served as the destroyed one of device 0";
  EXPECT_EQ(SP(cuMemFreeAsync)(block, reborn), CUDA_SUCCESS);
  if (used == CUDA_SUCCESS) {
    EXPECT_EQ(SP(cuMemFreeAsync)(during, CU_STREAM_LEGACY), CUDA_SUCCESS);
  }
  EXPECT_EQ(SP(cuStreamSynchronize)(reborn), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuCtxSynchronize)(), CUDA_SUCCESS);
}

}  // namespace
}  // namespace hooks_test
