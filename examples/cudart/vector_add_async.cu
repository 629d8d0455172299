// Vector add with cudaMallocAsync on two streams joined by an event, for streampool's runtime
// (built with `nvcc -cudart none`, linked to streampool::cudart). On a GPU it checks the sums; over
// streampool's fake driver (which records launches instead of running them) it checks the launch
// record: the kernel's name, grid and block.
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <cstdio>

#include "show_maps.h"
#include <cstring>
#include <vector>

#define CHECK(call)                                                                      \
  do {                                                                                   \
    cudaError_t check_error_ = (call);                                                   \
    if (check_error_ != cudaSuccess) {                                                   \
      std::fprintf(stderr, "%s failed: %s (%s)\n", #call, cudaGetErrorName(check_error_), \
                   cudaGetErrorString(check_error_));                                    \
      return 1;                                                                          \
    }                                                                                    \
  } while (0)

__global__ void vector_add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

using LaunchCount = unsigned long long (*)();
using LaunchAt = int (*)(unsigned long long, char*, unsigned long long, unsigned int*, unsigned int*);

int main() {
  const int n = 1 << 16;
  const size_t bytes = n * sizeof(float);
  std::vector<float> a(n), b(n), c(n, 0.0f);
  for (int i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i);
    b[i] = static_cast<float>(2 * i);
  }
  cudaStream_t upload, compute;
  cudaEvent_t uploaded;
  CHECK(cudaStreamCreateWithFlags(&upload, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
  CHECK(cudaEventCreateWithFlags(&uploaded, cudaEventDisableTiming));
  float *da, *db, *dc;
  CHECK(cudaMallocAsync(reinterpret_cast<void**>(&da), bytes, upload));
  CHECK(cudaMallocAsync(reinterpret_cast<void**>(&db), bytes, upload));
  CHECK(cudaMallocAsync(reinterpret_cast<void**>(&dc), bytes, compute));
  CHECK(cudaMemcpyAsync(da, a.data(), bytes, cudaMemcpyHostToDevice, upload));
  CHECK(cudaMemcpyAsync(db, b.data(), bytes, cudaMemcpyHostToDevice, upload));
  CHECK(cudaEventRecord(uploaded, upload));
  CHECK(cudaStreamWaitEvent(compute, uploaded, 0));
  const int block = 256;
  const int grid = (n + block - 1) / block;
  vector_add<<<grid, block, 0, compute>>>(da, db, dc, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpyAsync(c.data(), dc, bytes, cudaMemcpyDeviceToHost, compute));
  CHECK(cudaFreeAsync(da, compute));
  CHECK(cudaFreeAsync(db, compute));
  CHECK(cudaFreeAsync(dc, compute));
  CHECK(cudaStreamSynchronize(compute));
  CHECK(cudaStreamSynchronize(upload));

  // Over the fake driver (it exports the launch record), the launch is checked instead of the sums.
  // The driver is loaded privately by the runtime; it is found by its SONAME.
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  auto launch_count = reinterpret_cast<LaunchCount>(driver ? dlsym(driver, "streampool_fake_launch_count") : nullptr);
  auto launch_at = reinterpret_cast<LaunchAt>(driver ? dlsym(driver, "streampool_fake_launch_at") : nullptr);
  if (launch_count != nullptr && launch_at != nullptr) {
    char name[128];
    unsigned int g[3], bl[3];
    if (launch_count() != 1 || launch_at(0, name, sizeof(name), g, bl) != 0 ||
        std::strcmp(name, "_Z10vector_addPKfS0_Pfi") != 0 || g[0] != static_cast<unsigned>(grid) ||
        bl[0] != static_cast<unsigned>(block)) {
      std::fprintf(stderr, "launch record mismatch: %llu launches, first %s <<<%u, %u>>>\n", launch_count(), name,
                   g[0], bl[0]);
      return 1;
    }
    std::printf("vector_add_async: launch recorded (fake driver): %s <<<%u, %u>>>\n", name, g[0], bl[0]);
  } else {
    for (int i = 0; i < n; ++i) {
      if (c[i] != a[i] + b[i]) {
        std::fprintf(stderr, "mismatch at %d: %f != %f\n", i, c[i], a[i] + b[i]);
        return 1;
      }
    }
    std::printf("vector_add_async: %d sums correct\n", n);
  }
  show_cuda_maps();
  CHECK(cudaEventDestroy(uploaded));
  CHECK(cudaStreamDestroy(upload));
  CHECK(cudaStreamDestroy(compute));
  return 0;
}
