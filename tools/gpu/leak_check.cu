// Leaks on purpose from two named functions and frees one pointer twice, for leak_check.sh: the
// leak report (STREAMPOOL_LEAKS=1) must group the live allocations under leak_from_model (4 MiB,
// first) and leak_from_cache (3 x 64 KiB), and report the double free with both call sites.
// Host code only: built with -rdynamic so that the functions' names are in the dynamic table.
#include <cuda_runtime.h>

#include <cstdio>

extern "C" __attribute__((noinline)) void* leak_from_model(cudaStream_t stream) {
  void* pointer = nullptr;
  if (cudaMallocAsync(&pointer, 4 << 20, stream) != cudaSuccess) return nullptr;
  asm volatile("" ::: "memory");  // keeps this frame: no tail call
  return pointer;
}

extern "C" __attribute__((noinline)) void* leak_from_cache(cudaStream_t stream) {
  void* pointer = nullptr;
  if (cudaMallocAsync(&pointer, 64 << 10, stream) != cudaSuccess) return nullptr;
  asm volatile("" ::: "memory");
  return pointer;
}

extern "C" __attribute__((noinline)) int free_twice(void* pointer, cudaStream_t stream) {
  const int first = cudaFreeAsync(pointer, stream);
  const int second = cudaFreeAsync(pointer, stream);
  std::printf("first free %d, second free %d\n", first, second);
  asm volatile("" ::: "memory");
  return first;
}

int main() {
  cudaStream_t stream = nullptr;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
    std::printf("no stream\n");
    return 1;
  }
  for (int i = 0; i < 3; ++i) {
    if (leak_from_cache(stream) == nullptr) return 1;
  }
  if (leak_from_model(stream) == nullptr) return 1;
  void* pointer = leak_from_cache(stream);
  if (pointer == nullptr || free_twice(pointer, stream) != 0) return 1;
  cudaStreamSynchronize(stream);
  std::printf("done\n");
  return 0;
}
