// Pools of two devices used together: copies between a device-0 pool and a device-1 pool, and
// one thread that switches contexts with cuCtxSetCurrent and allocates from each device's
// default (current) pool.
#include <memory>

#include "two_gpus.hpp"

namespace conformance::two_gpus {
namespace {

constexpr std::size_t kWords = 4 * kMiB / sizeof(std::uint32_t);

std::vector<std::uint32_t> numbered_words(std::size_t count, std::uint32_t seed) {
  std::vector<std::uint32_t> words(count);
  for (std::size_t index = 0; index < count; ++index) words[index] = seed ^ static_cast<std::uint32_t>(index * 2654435761u);
  return words;
}

enum class Copy { peer, device_to_device };

class TwoGpusCopies : public TwoGpusTest, public ::testing::WithParamInterface<Copy> {
 protected:
  void SetUp() override {
    TwoGpusTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
  }

  // Copies `words` words from `src` (of src_context) to `dst` (of dst_context) on `stream`, a
  // stream of src_context, and waits for it.
  CUresult copy(CUdeviceptr dst, CUcontext dst_context, CUdeviceptr src, CUcontext src_context, CUstream stream) {
    ScopedContext scope(src_context);
    const std::size_t bytes = kWords * sizeof(std::uint32_t);
    const CUresult queued = GetParam() == Copy::peer ? cuMemcpyPeerAsync(dst, dst_context, src, src_context, bytes, stream)
                                                     : cuMemcpyDtoDAsync(dst, src, bytes, stream);
    return queued != CUDA_SUCCESS ? queued : cuStreamSynchronize(stream);
  }
};

TEST_P(TwoGpusCopies, CopiesBetweenPoolsOfTwoDevicesKeepTheData) {
  OwnedPool pool0(pool_props_on(0));
  CU_ASSERT_OK(pool0.status());
  std::unique_ptr<OwnedPool> pool1;
  {
    ScopedContext scope(context1_);
    pool1 = std::make_unique<OwnedPool>(pool_props_on(1));
  }
  CU_ASSERT_OK(pool1->status());
  // Each device may reach the other's pool, as a program copying between them would set up.
  CUmemAccessDesc to_device1 = access_for(1, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  CUmemAccessDesc to_device0 = access_for(0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  CU_ASSERT_OK(cuMemPoolSetAccess(pool0.get(), &to_device1, 1));
  CU_ASSERT_OK(cuMemPoolSetAccess(pool1->get(), &to_device0, 1));
  ContextStream s0(context0_);
  ContextStream s1(context1_);
  CU_ASSERT_OK(s0.status());
  CU_ASSERT_OK(s1.status());
  const std::size_t bytes = kWords * sizeof(std::uint32_t);
  CUdeviceptr on0 = 0;
  CUdeviceptr on1 = 0;
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&on0, bytes, pool0.get(), s0.get()));
  {
    ScopedContext scope(context1_);
    CU_ASSERT_OK(cuMemAllocFromPoolAsync(&on1, bytes, pool1->get(), s1.get()));
    CU_ASSERT_OK(cuMemsetD32Async(on1, 0, kWords, s1.get()));
    CU_ASSERT_OK(cuStreamSynchronize(s1.get()));
  }
  const std::vector<std::uint32_t> sent = numbered_words(kWords, 0x12345678u);
  CU_ASSERT_OK(cuMemcpyHtoDAsync(on0, sent.data(), bytes, s0.get()));
  CU_ASSERT_OK(cuStreamSynchronize(s0.get()));

  CU_ASSERT_OK(copy(on1, context1_, on0, context0_, s0.get()));  // device 0 -> device 1
  std::vector<std::uint32_t> on_device1;
  {
    ScopedContext scope(context1_);
    CU_ASSERT_OK(read_words(s1.get(), on1, kWords, &on_device1));
  }
  EXPECT_TRUE(on_device1 == sent) << "device 0 -> device 1 changed the data";

  CU_ASSERT_OK(cuMemsetD32Async(on0, 0, kWords, s0.get()));
  CU_ASSERT_OK(cuStreamSynchronize(s0.get()));
  CU_ASSERT_OK(copy(on0, context0_, on1, context1_, s1.get()));  // device 1 -> device 0
  std::vector<std::uint32_t> back_on_device0;
  CU_ASSERT_OK(read_words(s0.get(), on0, kWords, &back_on_device0));
  EXPECT_TRUE(back_on_device0 == sent) << "device 1 -> device 0 changed the data";

  CU_EXPECT_OK(cuMemFreeAsync(on0, s0.get()));
  ScopedContext scope(context1_);
  CU_EXPECT_OK(cuMemFreeAsync(on1, s1.get()));
  CU_EXPECT_OK(cuStreamSynchronize(s1.get()));
}

INSTANTIATE_TEST_SUITE_P(TwoGpus, TwoGpusCopies, ::testing::Values(Copy::peer, Copy::device_to_device),
                         [](const ::testing::TestParamInfo<Copy>& param_info) {
                           return param_info.param == Copy::peer ? "Peer" : "DeviceToDevice";
                         });

// --- One thread, two devices' default pools ------------------------------------------------------

using TwoGpusDefaultPools = TwoGpusTest;

CUmemoryPool pool_of(CUdeviceptr pointer) {
  CUmemoryPool pool = nullptr;
  EXPECT_EQ(CUDA_SUCCESS, cuPointerGetAttribute(&pool, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, pointer));
  return pool;
}

int device_of(CUdeviceptr pointer) {
  int ordinal = -1;
  EXPECT_EQ(CUDA_SUCCESS, cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, pointer));
  return ordinal;
}

TEST_F(TwoGpusDefaultPools, OneThreadSwitchingContextsAllocatesFromEachDevicesCurrentPool) {
  CUmemoryPool current[2] = {};
  CU_ASSERT_OK(cuDeviceGetMemPool(&current[0], 0));
  CU_ASSERT_OK(cuDeviceGetMemPool(&current[1], 1));
  ASSERT_NE(current[0], current[1]);
  const CUcontext contexts[2] = {context0_, context1_};
  ContextStream s0(context0_);
  ContextStream s1(context1_);
  CU_ASSERT_OK(s0.status());
  CU_ASSERT_OK(s1.status());
  const CUstream streams[2] = {s0.get(), s1.get()};

  // Eight allocations, alternating devices; odd rounds use the current context's legacy stream
  // (handle 0), which only the current context names.
  struct Allocation {
    int device;
    CUstream stream;
    CUdeviceptr pointer;
  };
  std::vector<Allocation> allocations;
  for (int round = 0; round < 8; ++round) {
    const int device = round % 2;
    const CUstream stream = (round / 2) % 2 == 0 ? streams[device] : nullptr;
    CU_ASSERT_OK(cuCtxSetCurrent(contexts[device]));
    CUdeviceptr pointer = 0;
    CU_ASSERT_OK(cuMemAllocAsync(&pointer, kMiB, stream));
    CU_ASSERT_OK(cuMemsetD32Async(pointer, 0x1000u + static_cast<unsigned>(round), kMiB / 4, stream));
    allocations.push_back({device, stream, pointer});
    EXPECT_EQ(current[device], pool_of(pointer)) << "round " << round;
    EXPECT_EQ(device, device_of(pointer)) << "round " << round;
  }

  for (std::size_t round = 0; round < allocations.size(); ++round) {
    const Allocation& allocation = allocations[round];
    CU_ASSERT_OK(cuCtxSetCurrent(contexts[allocation.device]));
    std::vector<std::uint32_t> words;
    CU_ASSERT_OK(read_words(allocation.stream, allocation.pointer, kMiB / 4, &words));
    EXPECT_EQ("", mismatch(words, 0x1000u + static_cast<unsigned>(round))) << "round " << round;
    CU_EXPECT_OK(cuMemFreeAsync(allocation.pointer, allocation.stream));
    CU_EXPECT_OK(cuStreamSynchronize(allocation.stream));
  }
  CU_EXPECT_OK(cuCtxSetCurrent(context0_));
}

TEST_F(TwoGpusDefaultPools, SettingDevice1sCurrentPoolLeavesDevice0sAlone) {
  CUmemoryPool device0_current = nullptr;
  CUmemoryPool device1_current = nullptr;
  CU_ASSERT_OK(cuDeviceGetMemPool(&device0_current, 0));
  CU_ASSERT_OK(cuDeviceGetMemPool(&device1_current, 1));
  std::unique_ptr<OwnedPool> created;
  {
    ScopedContext scope(context1_);
    created = std::make_unique<OwnedPool>(pool_props_on(1));
  }
  CU_ASSERT_OK(created->status());
  // Put device 1's pool back whatever happens below (before `created` is destroyed).
  struct Restore {
    CUmemoryPool pool;
    ~Restore() { (void)cuDeviceSetMemPool(1, pool); }
  } restore{device1_current};
  CU_ASSERT_OK(cuDeviceSetMemPool(1, created->get()));

  CUmemoryPool now = nullptr;
  CU_ASSERT_OK(cuDeviceGetMemPool(&now, 1));
  EXPECT_EQ(created->get(), now);
  CU_ASSERT_OK(cuDeviceGetMemPool(&now, 0));
  EXPECT_EQ(device0_current, now);

  CUdeviceptr on1 = 0;
  CUdeviceptr on0 = 0;
  CU_ASSERT_OK(cuCtxSetCurrent(context1_));
  CU_ASSERT_OK(cuMemAllocAsync(&on1, kMiB, nullptr));
  EXPECT_EQ(created->get(), pool_of(on1));
  CU_ASSERT_OK(cuCtxSetCurrent(context0_));
  CU_ASSERT_OK(cuMemAllocAsync(&on0, kMiB, nullptr));
  EXPECT_EQ(device0_current, pool_of(on0));

  CU_EXPECT_OK(cuMemFreeAsync(on0, nullptr));
  CU_EXPECT_OK(cuCtxSynchronize());
  CU_ASSERT_OK(cuCtxSetCurrent(context1_));
  CU_EXPECT_OK(cuMemFreeAsync(on1, nullptr));
  CU_EXPECT_OK(cuCtxSynchronize());
  CU_EXPECT_OK(cuCtxSetCurrent(context0_));
}

}  // namespace
}  // namespace conformance::two_gpus
