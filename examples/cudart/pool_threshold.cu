// A created pool with a release threshold: allocations on a stream, their statistics printed, and
// the check that memory the threshold keeps stays reserved after a synchronize while memory above
// it is released. Built with `nvcc -cudart none` and linked to streampool::cudart; it launches no
// kernel, so it checks the same things over the fake driver and on a GPU.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

#include "show_maps.h"

#define CHECK(call)                                                                                    \
  do {                                                                                                 \
    cudaError_t check_error_ = (call);                                                                 \
    if (check_error_ != cudaSuccess) {                                                                 \
      std::fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorName(check_error_));                  \
      return 1;                                                                                        \
    }                                                                                                  \
  } while (0)

static std::uint64_t attribute(cudaMemPool_t pool, cudaMemPoolAttr attr) {
  std::uint64_t value = 0;
  if (cudaMemPoolGetAttribute(pool, attr, &value) != cudaSuccess) return ~0ull;
  return value;
}

static void print_stats(const char* when, cudaMemPool_t pool) {
  std::printf("%-28s reserved %10llu  used %10llu  reserved high %10llu  used high %10llu\n", when,
              static_cast<unsigned long long>(attribute(pool, cudaMemPoolAttrReservedMemCurrent)),
              static_cast<unsigned long long>(attribute(pool, cudaMemPoolAttrUsedMemCurrent)),
              static_cast<unsigned long long>(attribute(pool, cudaMemPoolAttrReservedMemHigh)),
              static_cast<unsigned long long>(attribute(pool, cudaMemPoolAttrUsedMemHigh)));
}

int main() {
  const std::uint64_t threshold = 64ull << 20;
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 0;
  cudaMemPool_t pool;
  CHECK(cudaMemPoolCreate(&pool, &props));
  std::uint64_t value = threshold;
  CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &value));
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  void* blocks[8];
  for (void*& block : blocks) CHECK(cudaMallocFromPoolAsync(&block, 16ull << 20, pool, stream));
  print_stats("after 8 x 16 MiB:", pool);
  if (attribute(pool, cudaMemPoolAttrUsedMemCurrent) != (128ull << 20)) {
    std::fprintf(stderr, "used memory should be 128 MiB\n");
    return 1;
  }
  for (void* block : blocks) CHECK(cudaFreeAsync(block, stream));
  CHECK(cudaStreamSynchronize(stream));
  print_stats("after free + synchronize:", pool);
  const std::uint64_t reserved = attribute(pool, cudaMemPoolAttrReservedMemCurrent);
  if (attribute(pool, cudaMemPoolAttrUsedMemCurrent) != 0 || reserved > threshold + (32ull << 20)) {
    std::fprintf(stderr, "after the synchronize the pool should keep about its threshold, keeps %llu\n",
                 static_cast<unsigned long long>(reserved));
    return 1;
  }
  CHECK(cudaMemPoolTrimTo(pool, 0));
  print_stats("after trim to 0:", pool);
  if (attribute(pool, cudaMemPoolAttrReservedMemCurrent) != 0) {
    std::fprintf(stderr, "trim to 0 should release everything\n");
    return 1;
  }
  show_cuda_maps();
  CHECK(cudaStreamDestroy(stream));
  CHECK(cudaMemPoolDestroy(pool));
  std::printf("pool_threshold: ok\n");
  return 0;
}
