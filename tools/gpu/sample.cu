// A CUDA-samples-style program using the runtime's stream-ordered allocator: a vector add on one
// stream, a reduction of its result on a second stream that waits on an event, frees on the other
// stream, a created pool next to the default one, and the pool attributes. Integer data, so every
// printed number is exact and the output is the same on NVIDIA's driver and under streampool.
// Prints no addresses or timings. Built by run_programs.sh with nvcc's default static cudart and
// with -cudart shared.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                                                \
  do {                                                                                             \
    cudaError_t check_status = (call);                                                             \
    if (check_status != cudaSuccess) {                                                             \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,                     \
                   cudaGetErrorName(check_status));                                                \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

__global__ void vector_add(const int* a, const int* b, int* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

// One partial sum per block (tree reduction in shared memory), summed again on the host.
__global__ void block_sums(const int* in, unsigned long long* partial, int n) {
  __shared__ unsigned long long cache[256];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  cache[threadIdx.x] = i < n ? static_cast<unsigned long long>(in[i]) : 0ULL;
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) cache[threadIdx.x] += cache[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = cache[0];
}

static unsigned long long pool_attr(cudaMemPool_t pool, cudaMemPoolAttr attr) {
  std::uint64_t value = 0;
  CHECK(cudaMemPoolGetAttribute(pool, attr, &value));
  return value;
}

int main() {
  int device = 0;
  CHECK(cudaSetDevice(device));
  int pools_supported = 0;
  CHECK(cudaDeviceGetAttribute(&pools_supported, cudaDevAttrMemoryPoolsSupported, device));
  std::printf("memory pools supported: %d\n", pools_supported);

  cudaMemPool_t pool = nullptr;
  CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
  std::uint64_t threshold = UINT64_MAX;
  CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  std::printf("default pool threshold: %llu\n", pool_attr(pool, cudaMemPoolAttrReleaseThreshold));

  cudaMemPoolProps props = {};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  cudaMemPool_t own_pool = nullptr;
  CHECK(cudaMemPoolCreate(&own_pool, &props));

  cudaStream_t s1 = nullptr;
  cudaStream_t s2 = nullptr;
  CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  cudaEvent_t added = nullptr;
  CHECK(cudaEventCreateWithFlags(&added, cudaEventDisableTiming));

  const int n = 1 << 20;
  const int threads = 256;
  const int blocks = (n + threads - 1) / threads;
  const std::size_t bytes = sizeof(int) * static_cast<std::size_t>(n);
  int* host_a = nullptr;
  int* host_b = nullptr;
  CHECK(cudaMallocHost(&host_a, bytes));
  CHECK(cudaMallocHost(&host_b, bytes));
  std::vector<unsigned long long> host_partial(static_cast<std::size_t>(blocks));

  for (int round = 0; round < 8; ++round) {
    for (int i = 0; i < n; ++i) {
      host_a[i] = (i * 7 + round) % 1000;
      host_b[i] = (i % 13) * (round + 1);
    }
    int* a = nullptr;
    int* b = nullptr;
    int* c = nullptr;
    unsigned long long* partial = nullptr;
    CHECK(cudaMallocAsync(&a, bytes, s1));
    CHECK(cudaMallocAsync(&b, bytes, s1));
    CHECK(cudaMallocFromPoolAsync(&c, bytes, own_pool, s1));
    CHECK(cudaMemcpyAsync(a, host_a, bytes, cudaMemcpyHostToDevice, s1));
    CHECK(cudaMemcpyAsync(b, host_b, bytes, cudaMemcpyHostToDevice, s1));
    vector_add<<<blocks, threads, 0, s1>>>(a, b, c, n);
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(added, s1));
    CHECK(cudaStreamWaitEvent(s2, added, 0));
    CHECK(cudaMallocAsync(&partial, sizeof(unsigned long long) * blocks, s2));
    if (round == 0) {  // everything of this round is live: used = the bytes asked for
      std::printf("used while live: default %llu, own %llu\n", pool_attr(pool, cudaMemPoolAttrUsedMemCurrent),
                  pool_attr(own_pool, cudaMemPoolAttrUsedMemCurrent));
    }
    CHECK(cudaFreeAsync(a, s1));  // freed on the allocating stream
    block_sums<<<blocks, threads, 0, s2>>>(c, partial, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpyAsync(host_partial.data(), partial, sizeof(unsigned long long) * blocks,
                          cudaMemcpyDeviceToHost, s2));
    CHECK(cudaFreeAsync(b, s2));  // freed on another stream, ordered by the event
    CHECK(cudaFreeAsync(c, s2));
    CHECK(cudaFreeAsync(partial, s2));
    CHECK(cudaStreamSynchronize(s2));
    CHECK(cudaStreamSynchronize(s1));

    unsigned long long total = 0;
    for (unsigned long long part : host_partial) total += part;
    unsigned long long expected = 0;
    for (int i = 0; i < n; ++i) expected += static_cast<unsigned long long>(host_a[i] + host_b[i]);
    std::printf("round %d: sum %llu %s\n", round, total, total == expected ? "ok" : "MISMATCH");
  }

  CHECK(cudaStreamSynchronize(s1));
  std::printf("used after frees: default %llu, own %llu\n", pool_attr(pool, cudaMemPoolAttrUsedMemCurrent),
              pool_attr(own_pool, cudaMemPoolAttrUsedMemCurrent));
  std::printf("used high: default %llu, own %llu\n", pool_attr(pool, cudaMemPoolAttrUsedMemHigh),
              pool_attr(own_pool, cudaMemPoolAttrUsedMemHigh));
  const unsigned long long reserved = pool_attr(pool, cudaMemPoolAttrReservedMemCurrent);
  std::printf("default pool keeps memory (threshold max): %s\n", reserved > 0 ? "yes" : "no");
  std::uint64_t zero = 0;
  CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &zero));
  std::printf("used high after reset: %llu\n", pool_attr(pool, cudaMemPoolAttrUsedMemHigh));
  CHECK(cudaMemPoolTrimTo(pool, 0));
  CHECK(cudaMemPoolTrimTo(own_pool, 0));
  std::printf("reserved after trim: default %llu, own %llu\n", pool_attr(pool, cudaMemPoolAttrReservedMemCurrent),
              pool_attr(own_pool, cudaMemPoolAttrReservedMemCurrent));

  threshold = 0;
  CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  CHECK(cudaMemPoolDestroy(own_pool));
  CHECK(cudaEventDestroy(added));
  CHECK(cudaStreamDestroy(s1));
  CHECK(cudaStreamDestroy(s2));
  CHECK(cudaFreeHost(host_a));
  CHECK(cudaFreeHost(host_b));
  std::printf("done\n");
  return 0;
}
