// The capture pattern of NVIDIA's simpleCudaGraphs and graphMemoryNodes samples, reduced: a
// global-mode capture on stream 1 forks to streams 2 and 3 with an event, each branch works
// (memsets, and with --alloc stream-ordered allocations and frees), the branches join back, the
// graph is instantiated and launched three times, and the result is checked. Prints "capture
// fork/join: ok" or the first failing call; exit status 0 only on success.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>

#define CHECK(call)                                                                   \
  do {                                                                                \
    cudaError_t status_ = (call);                                                     \
    if (status_ != cudaSuccess) {                                                     \
      std::printf("capture fork/join: %s failed: %s\n", #call, cudaGetErrorName(status_)); \
      return 1;                                                                       \
    }                                                                                 \
  } while (0)

__global__ void add_into(int* out, const int* a, const int* b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i] + 1;
}

int main(int argc, char** argv) {
  const bool alloc = argc > 1 && std::strcmp(argv[1], "--alloc") == 0;
  constexpr int n = 1 << 16;
  int *a = nullptr, *b = nullptr, *out = nullptr;
  CHECK(cudaMalloc(&out, n * sizeof(int)));
  if (!alloc) {
    CHECK(cudaMalloc(&a, n * sizeof(int)));
    CHECK(cudaMalloc(&b, n * sizeof(int)));
  }
  cudaStream_t s1, s2, s3;
  CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s3, cudaStreamNonBlocking));
  cudaEvent_t fork, joined2, joined3;
  CHECK(cudaEventCreate(&fork));
  CHECK(cudaEventCreate(&joined2));
  CHECK(cudaEventCreate(&joined3));

  CHECK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
  CHECK(cudaEventRecord(fork, s1));
  CHECK(cudaStreamWaitEvent(s2, fork, 0));
  CHECK(cudaStreamWaitEvent(s3, fork, 0));
  if (alloc) {
    CHECK(cudaMallocAsync(&a, n * sizeof(int), s2));
    CHECK(cudaMallocAsync(&b, n * sizeof(int), s3));
  }
  CHECK(cudaMemsetAsync(a, 0, n * sizeof(int), s2));
  CHECK(cudaMemsetAsync(b, 0, n * sizeof(int), s3));
  CHECK(cudaEventRecord(joined2, s2));
  CHECK(cudaEventRecord(joined3, s3));
  CHECK(cudaStreamWaitEvent(s1, joined2, 0));
  CHECK(cudaStreamWaitEvent(s1, joined3, 0));
  add_into<<<(n + 255) / 256, 256, 0, s1>>>(out, a, b, n);
  CHECK(cudaGetLastError());
  if (alloc) {
    CHECK(cudaFreeAsync(a, s1));
    CHECK(cudaFreeAsync(b, s1));
  }
  cudaGraph_t graph;
  CHECK(cudaStreamEndCapture(s1, &graph));
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int launch = 0; launch < 3; ++launch) CHECK(cudaGraphLaunch(exec, s1));
  CHECK(cudaStreamSynchronize(s1));
  static int host[n];
  CHECK(cudaMemcpy(host, out, sizeof host, cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) {
    if (host[i] != 1) {
      std::printf("capture fork/join: wrong result at %d: %d\n", i, host[i]);
      return 1;
    }
  }
  std::printf("capture fork/join%s: ok\n", alloc ? " with allocations" : "");
  return 0;
}
