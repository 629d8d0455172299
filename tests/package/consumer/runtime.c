/* Linked against streampool's CUDA runtime (libstreampool_cudart.so, as libcudart.so.13): an
 * allocation in stream order from the default pool, reused on the same stream. */
#include <stdio.h>

#include <cuda_runtime_api.h>

int main(void) {
  cudaStream_t stream = NULL;
  void* first = NULL;
  void* second = NULL;
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices < 1) return 1;
  if (cudaStreamCreate(&stream) != cudaSuccess) return 1;
  if (cudaMallocAsync(&first, 1 << 20, stream) != cudaSuccess) return 1;
  if (cudaFreeAsync(first, stream) != cudaSuccess) return 1;
  if (cudaMallocAsync(&second, 1 << 20, stream) != cudaSuccess) return 1;
  if (cudaFreeAsync(second, stream) != cudaSuccess || cudaStreamSynchronize(stream) != cudaSuccess) return 1;
  printf("runtime: %d device(s), same-stream reuse %s\n", devices, first == second ? "yes" : "no");
  return first == second ? 0 : 1;
}
