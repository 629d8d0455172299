// A library for the conformance suite's cudaLibrary* tests: built on its own into a fat binary
// (nvcc -fatbin) that the tests load at run time, as a program loads a plugin's kernels.
extern "C" __global__ void library_add(int* values, int count, int amount) {
  const int index = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (index < count) values[index] += amount;
}

extern "C" __device__ int library_counter;
__device__ int library_counter = 17;
