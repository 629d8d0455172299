// A program linked against the shared libcudart calls cudaMallocAsync / cudaFreeAsync through
// the dynamic linker: under LD_PRELOAD, streampool's definitions answer first and reach its
// hooks without cudart's per-call work. Over the CPU-only fake driver cudart itself cannot
// initialise, which makes the point visible: the successful path never enters cudart, and only
// a failing call is handed to cudart's own function.
#include <cuda_runtime_api.h>

#include "hooks_test_api.hpp"

namespace hooks_test {
namespace {

class CudartFastPath : public DriverTest {};

TEST_F(CudartFastPath, TheProgramsCudaMallocAsyncIsStreampools) {
  void* ours = streampool_symbol("cudaMallocAsync");
  ASSERT_NE(ours, nullptr);
  EXPECT_EQ(reinterpret_cast<void*>(&::cudaMallocAsync), ours);  // what this program's calls bind to
  EXPECT_EQ(reinterpret_cast<void*>(&::cudaFreeAsync), streampool_symbol("cudaFreeAsync"));
}

TEST_F(CudartFastPath, AllocationsAndFreesThroughCudartNamesAreServedByThePool) {
  CUmemoryPool pool = create_device_pool();
  void* first = nullptr;
  ASSERT_EQ(cudaMallocFromPoolAsync(&first, 1 << 20, reinterpret_cast<cudaMemPool_t>(pool),
                                    reinterpret_cast<cudaStream_t>(stream)),
            cudaSuccess);
  CUmemoryPool owner = nullptr;
  ASSERT_EQ(SP(cuPointerGetAttribute)(&owner, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE,
                                      reinterpret_cast<CUdeviceptr>(first)),
            CUDA_SUCCESS);
  EXPECT_EQ(owner, pool);
  EXPECT_EQ(pool_attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 1u << 20);
  EXPECT_EQ(cudaFreeAsync(first, reinterpret_cast<cudaStream_t>(stream)), cudaSuccess);
  EXPECT_EQ(pool_attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 0u);

  void* again = nullptr;  // the stream's own free, reused at once
  ASSERT_EQ(cudaMallocFromPoolAsync(&again, 1 << 20, reinterpret_cast<cudaMemPool_t>(pool),
                                    reinterpret_cast<cudaStream_t>(stream)),
            cudaSuccess);
  EXPECT_EQ(again, first);
  EXPECT_EQ(cudaFreeAsync(again, reinterpret_cast<cudaStream_t>(stream)), cudaSuccess);
  EXPECT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuMemPoolDestroy)(pool), CUDA_SUCCESS);
}

TEST_F(CudartFastPath, TheDeviceCurrentPoolServesCudaMallocAsync) {
  CUmemoryPool current = nullptr;
  ASSERT_EQ(SP(cuDeviceGetMemPool)(&current, device), CUDA_SUCCESS);
  void* ptr = nullptr;
  ASSERT_EQ(cudaMallocAsync(&ptr, 4096, reinterpret_cast<cudaStream_t>(stream)), cudaSuccess);
  CUmemoryPool owner = nullptr;
  ASSERT_EQ(SP(cuPointerGetAttribute)(&owner, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE,
                                      reinterpret_cast<CUdeviceptr>(ptr)),
            CUDA_SUCCESS);
  EXPECT_EQ(owner, current);
  EXPECT_EQ(cudaFreeAsync(ptr, reinterpret_cast<cudaStream_t>(stream)), cudaSuccess);
  EXPECT_EQ(cudaFreeAsync(nullptr, reinterpret_cast<cudaStream_t>(stream)), cudaSuccess);
}

TEST_F(CudartFastPath, AFailingCallIsHandedToCudartsOwnFunction) {
  // A null result pointer never reaches the pool: cudart answers (here it cannot even start
  // over the fake driver, so any error will do; on a GPU it is cudaErrorInvalidValue).
  EXPECT_NE(cudaMallocAsync(nullptr, 16, reinterpret_cast<cudaStream_t>(stream)), cudaSuccess);
}

}  // namespace
}  // namespace hooks_test
