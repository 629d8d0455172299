// The cases of tools/gpu/nvtx_check.sh: what compute-sanitizer's memcheck sees of pool memory.
//
//   nvtx_check overflow        two neighbouring blocks of the device's pool (cudaMallocAsync), a
//                              kernel writing one element past the first, that is into the second
//   nvtx_check queued-free     a kernel that works a while on a block in bounds, and the block's
//                              cudaFreeAsync on the same stream queued right behind it: legal
//   nvtx_check other-stream    a block freed on one stream while a kernel on another stream,
//                              launched after the free, writes it: a use after free
//   nvtx_check bench PAIRS     cudaMallocAsync + cudaFreeAsync of 1 MiB on one stream, PAIRS times
//                              (after a warm-up): prints ns per pair
//
// Each prints one line of what it did; a CUDA error is printed and makes the exit status 1.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#define CHECK(call)                                                                    \
  do {                                                                                 \
    cudaError_t error_ = (call);                                                       \
    if (error_ != cudaSuccess) {                                                       \
      std::printf("error: %s: %s (line %d)\n", #call, cudaGetErrorName(error_), __LINE__); \
      return 1;                                                                        \
    }                                                                                  \
  } while (0)

__global__ void write_elements(int* data, int count) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) data[i] = i;
}

// Busy for about `cycles` clock cycles, then writes its block in bounds.
__global__ void slow_write(int* data, int count, long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) data[i] = -i;
}

namespace {

constexpr int kElements = 256;  // 1 KiB: two blocks of it lie next to each other in one pool

int overflow(cudaStream_t stream) {
  int* first = nullptr;
  int* second = nullptr;
  CHECK(cudaMallocAsync(reinterpret_cast<void**>(&first), kElements * sizeof(int), stream));
  CHECK(cudaMallocAsync(reinterpret_cast<void**>(&second), kElements * sizeof(int), stream));
  const long long distance = reinterpret_cast<char*>(second) - reinterpret_cast<char*>(first);
  std::printf("overflow: first %p second %p (second - first = %lld bytes); writing %d elements into %d\n",
              static_cast<void*>(first), static_cast<void*>(second), distance, kElements + 1, kElements);
  write_elements<<<1, kElements + 1, 0, stream>>>(first, kElements + 1);  // one past the end
  CHECK(cudaGetLastError());
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaFreeAsync(first, stream));
  CHECK(cudaFreeAsync(second, stream));
  CHECK(cudaStreamSynchronize(stream));
  return 0;
}

int queued_free(cudaStream_t stream) {
  int* block = nullptr;
  CHECK(cudaMallocAsync(reinterpret_cast<void**>(&block), kElements * sizeof(int), stream));
  slow_write<<<1, kElements, 0, stream>>>(block, kElements, 200000000LL);  // ~0.1 s
  CHECK(cudaGetLastError());
  CHECK(cudaFreeAsync(block, stream));  // queued behind the kernel: legal
  const cudaError_t still_running = cudaStreamQuery(stream);
  CHECK(cudaStreamSynchronize(stream));
  std::printf("queued-free: kernel in bounds, free queued behind it (stream %s when the free returned)\n",
              still_running == cudaErrorNotReady ? "busy" : "idle");
  return 0;
}

int other_stream(cudaStream_t stream) {
  cudaStream_t other = nullptr;
  CHECK(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  int* block = nullptr;
  CHECK(cudaMallocAsync(reinterpret_cast<void**>(&block), kElements * sizeof(int), stream));
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaFreeAsync(block, stream));
  CHECK(cudaStreamSynchronize(stream));
  write_elements<<<1, kElements, 0, other>>>(block, kElements);  // after the free: a use after free
  CHECK(cudaGetLastError());
  CHECK(cudaStreamSynchronize(other));
  std::printf("other-stream: wrote a block after its free had completed\n");
  CHECK(cudaStreamDestroy(other));
  return 0;
}

int bench(cudaStream_t stream, long pairs) {
  void* block = nullptr;
  for (int i = 0; i < 1000; ++i) {
    CHECK(cudaMallocAsync(&block, 1 << 20, stream));
    CHECK(cudaFreeAsync(block, stream));
  }
  const auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < pairs; ++i) {
    CHECK(cudaMallocAsync(&block, 1 << 20, stream));
    CHECK(cudaFreeAsync(block, stream));
  }
  const auto stop = std::chrono::steady_clock::now();
  CHECK(cudaStreamSynchronize(stream));
  const double ns = std::chrono::duration<double, std::nano>(stop - start).count() / static_cast<double>(pairs);
  std::printf("bench: %ld pairs of 1 MiB, %.1f ns per pair\n", pairs, ns);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "overflow";
  CHECK(cudaSetDevice(0));
  CHECK(cudaFree(nullptr));  // the runtime initialised before anything else (NVTX tools want it)
  // What the tool set (the sign streampool's automatic mode reads), for the log.
  const char* nvtx_injection = std::getenv("NVTX_INJECTION64_PATH");
  const char* cuda_injection = std::getenv("CUDA_INJECTION64_PATH");
  std::printf("NVTX_INJECTION64_PATH=%s CUDA_INJECTION64_PATH=%s\n", nvtx_injection ? nvtx_injection : "(unset)",
              cuda_injection ? cuda_injection : "(unset)");
  // Freed memory stays in the pool (mapped), so that only the pool's own bookkeeping can tell a
  // freed or neighbouring block from a live one.
  cudaMemPool_t pool = nullptr;
  CHECK(cudaDeviceGetDefaultMemPool(&pool, 0));
  unsigned long long keep = ~0ull;
  CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  cudaStream_t stream = nullptr;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  int status = 2;
  if (std::strcmp(mode, "overflow") == 0) status = overflow(stream);
  if (std::strcmp(mode, "queued-free") == 0) status = queued_free(stream);
  if (std::strcmp(mode, "other-stream") == 0) status = other_stream(stream);
  if (std::strcmp(mode, "bench") == 0) status = bench(stream, argc > 2 ? std::atol(argv[2]) : 1000000);
  if (status == 2) std::printf("usage: nvtx_check overflow|queued-free|other-stream|bench [PAIRS]\n");
  CHECK(cudaStreamDestroy(stream));
  return status;
}
