// A program built as nvcc builds one by default (here against NVIDIA's shared libcudart.so.13): its
// first runtime call makes NVIDIA's cudart load libcuda.so.1 by name (the fake, through
// LD_LIBRARY_PATH) and ask it for every entry point it uses. nvidia_cudart_check.py reads the
// fake's trace of that start.
#include <cuda_runtime.h>

#include <cstdio>

__global__ void fill(int* out, int value) { out[threadIdx.x] = value; }

int main() {
  int devices = 0;
  const cudaError_t count = cudaGetDeviceCount(&devices);
  std::printf("cudaGetDeviceCount -> %s, %d devices\n", cudaGetErrorName(count), devices);
  if (count != cudaSuccess) return 0;  // the runtime did not start: the trace says where it stopped
  int* buffer = nullptr;
  const cudaError_t allocated = cudaMalloc(&buffer, 32 * sizeof(int));
  std::printf("cudaMalloc -> %s\n", cudaGetErrorName(allocated));
  if (allocated != cudaSuccess) return 0;
  fill<<<1, 32>>>(buffer, 7);
  std::printf("launch -> %s\n", cudaGetErrorName(cudaGetLastError()));
  std::printf("cudaFree -> %s\n", cudaGetErrorName(cudaFree(buffer)));
  return 0;
}
