// Allocations captured into a graph and replayed, for streampool's runtime (built with
// `nvcc -cudart none`, linked to streampool::cudart). Two graphs do the same work: a temporary
// buffer is allocated, filled by one kernel, added into a running total by another, and freed.
//   - the first is made by stream capture (cudaMallocAsync, two <<<>>> launches, cudaFreeAsync);
//   - the second is built by hand (cudaGraphAddMemAllocNode, two kernel nodes, cudaGraphAddMemFreeNode)
//     and uploaded before its first launch.
// Each is instantiated once and launched kReplays times; then the graphs go and
// cudaDeviceGraphMemTrim gives their memory back. On a GPU the totals are checked; over
// streampool's fake driver (which records launches instead of running them) the launch record is:
// capture records nothing, and each replay records the graph's two kernels, in order.
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "show_maps.h"

#define CHECK(call)                                                                      \
  do {                                                                                   \
    cudaError_t check_error_ = (call);                                                   \
    if (check_error_ != cudaSuccess) {                                                   \
      std::fprintf(stderr, "%s failed: %s (%s)\n", #call, cudaGetErrorName(check_error_), \
                   cudaGetErrorString(check_error_));                                    \
      return 1;                                                                          \
    }                                                                                    \
  } while (0)

__global__ void generate(float* out, int n, float step) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = step * static_cast<float>(i);
}

__global__ void accumulate(float* total, const float* part, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) total[i] += part[i];
}

using LaunchCount = unsigned long long (*)();
using LaunchAt = int (*)(unsigned long long, char*, unsigned long long, unsigned int*, unsigned int*);

namespace {

constexpr int kN = 1 << 14;
constexpr int kBlock = 256;
constexpr int kGrid = (kN + kBlock - 1) / kBlock;
constexpr int kReplays = 5;
constexpr size_t kBytes = kN * sizeof(float);

// The graph of stream capture: allocation, two kernels and the free, all on `stream`.
int capture_graph(cudaStream_t stream, float* total, float step, cudaGraph_t* graph) {
  CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  CHECK(cudaStreamIsCapturing(stream, &status));
  if (status != cudaStreamCaptureStatusActive) {
    std::fprintf(stderr, "stream is not capturing after cudaStreamBeginCapture\n");
    return 1;
  }
  float* part = nullptr;
  CHECK(cudaMallocAsync(reinterpret_cast<void**>(&part), kBytes, stream));
  generate<<<kGrid, kBlock, 0, stream>>>(part, kN, step);
  CHECK(cudaGetLastError());
  accumulate<<<kGrid, kBlock, 0, stream>>>(total, part, kN);
  CHECK(cudaGetLastError());
  CHECK(cudaFreeAsync(part, stream));
  CHECK(cudaStreamEndCapture(stream, graph));
  return 0;
}

// The same work as a graph built node by node.
int build_graph(float* total, float step, cudaGraph_t* graph) {
  CHECK(cudaGraphCreate(graph, 0));
  cudaMemAllocNodeParams alloc{};
  alloc.poolProps.allocType = cudaMemAllocationTypePinned;
  alloc.poolProps.location.type = cudaMemLocationTypeDevice;
  alloc.poolProps.location.id = 0;
  alloc.bytesize = kBytes;
  cudaGraphNode_t alloc_node, generate_node, accumulate_node, free_node;
  CHECK(cudaGraphAddMemAllocNode(&alloc_node, *graph, nullptr, 0, &alloc));
  float* part = static_cast<float*>(alloc.dptr);
  int n = kN;
  void* generate_args[] = {&part, &n, &step};
  cudaKernelNodeParams kernel{};
  kernel.func = reinterpret_cast<void*>(generate);
  kernel.gridDim = dim3(kGrid);
  kernel.blockDim = dim3(kBlock);
  kernel.kernelParams = generate_args;
  CHECK(cudaGraphAddKernelNode(&generate_node, *graph, &alloc_node, 1, &kernel));
  void* accumulate_args[] = {&total, &part, &n};
  kernel.func = reinterpret_cast<void*>(accumulate);
  kernel.kernelParams = accumulate_args;
  CHECK(cudaGraphAddKernelNode(&accumulate_node, *graph, &generate_node, 1, &kernel));
  CHECK(cudaGraphAddMemFreeNode(&free_node, *graph, &accumulate_node, 1, part));
  return 0;
}

int replay(cudaGraph_t graph, cudaStream_t stream, bool upload) {
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  if (upload) CHECK(cudaGraphUpload(exec, stream));
  for (int i = 0; i < kReplays; ++i) CHECK(cudaGraphLaunch(exec, stream));
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  return 0;
}

// On a GPU: each total is kReplays times the generated values.
int check_totals(const float* device_total, float step, const char* which) {
  std::vector<float> total(kN);
  CHECK(cudaMemcpy(total.data(), device_total, kBytes, cudaMemcpyDeviceToHost));
  for (int i = 0; i < kN; ++i) {
    const float expected = static_cast<float>(kReplays) * step * static_cast<float>(i);
    if (total[i] != expected) {
      std::fprintf(stderr, "%s graph: mismatch at %d: %f != %f\n", which, i, total[i], expected);
      return 1;
    }
  }
  std::printf("graph_replay: %s graph replayed %d times, %d totals correct\n", which, kReplays, kN);
  return 0;
}

// Over the fake driver: 2 * kReplays launches per graph, generate then accumulate each time.
int check_launch_record(LaunchCount launch_count, LaunchAt launch_at, unsigned long long first, const char* which) {
  const unsigned long long expected = 2ULL * kReplays;
  if (launch_count() - first != expected) {
    std::fprintf(stderr, "%s graph: %llu launches recorded, expected %llu\n", which, launch_count() - first, expected);
    return 1;
  }
  for (unsigned long long i = 0; i < expected; ++i) {
    char name[128];
    unsigned int grid[3], block[3];
    const char* want = i % 2 == 0 ? "_Z8generatePfif" : "_Z10accumulatePfPKfi";
    if (launch_at(first + i, name, sizeof(name), grid, block) != 0 || std::strcmp(name, want) != 0 ||
        grid[0] != static_cast<unsigned>(kGrid) || block[0] != static_cast<unsigned>(kBlock)) {
      std::fprintf(stderr, "%s graph: launch %llu is %s <<<%u, %u>>>, expected %s\n", which, i, name, grid[0],
                   block[0], want);
      return 1;
    }
  }
  std::printf("graph_replay: %s graph replayed %d times (fake driver: %llu launches recorded)\n", which, kReplays,
              expected);
  return 0;
}

}  // namespace

int main() {
  // Over the fake driver (it exports the launch record), launches are checked instead of results.
  // The driver is loaded privately by the runtime; it is found by its SONAME once the runtime started.
  CHECK(cudaFree(nullptr));
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  auto launch_count = reinterpret_cast<LaunchCount>(driver ? dlsym(driver, "streampool_fake_launch_count") : nullptr);
  auto launch_at = reinterpret_cast<LaunchAt>(driver ? dlsym(driver, "streampool_fake_launch_at") : nullptr);
  const bool fake = launch_count != nullptr && launch_at != nullptr;

  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  float *captured_total, *built_total;
  CHECK(cudaMalloc(reinterpret_cast<void**>(&captured_total), kBytes));
  CHECK(cudaMalloc(reinterpret_cast<void**>(&built_total), kBytes));
  CHECK(cudaMemset(captured_total, 0, kBytes));
  CHECK(cudaMemset(built_total, 0, kBytes));

  cudaGraph_t captured, built;
  const unsigned long long before_capture = fake ? launch_count() : 0;
  if (capture_graph(stream, captured_total, 1.0f, &captured) != 0) return 1;
  if (fake && launch_count() != before_capture) {
    std::fprintf(stderr, "captured kernels ran at capture (%llu launches recorded)\n", launch_count() - before_capture);
    return 1;
  }
  const unsigned long long before_captured = fake ? launch_count() : 0;
  if (replay(captured, stream, false) != 0) return 1;
  if (fake ? check_launch_record(launch_count, launch_at, before_captured, "captured")
           : check_totals(captured_total, 1.0f, "captured")) {
    return 1;
  }

  if (build_graph(built_total, 2.0f, &built) != 0) return 1;
  const unsigned long long before_built = fake ? launch_count() : 0;
  if (replay(built, stream, true) != 0) return 1;
  if (fake ? check_launch_record(launch_count, launch_at, before_built, "built")
           : check_totals(built_total, 2.0f, "built")) {
    return 1;
  }

  // The graphs are gone: their memory goes back to the system.
  CHECK(cudaDeviceGraphMemTrim(0));
  show_cuda_maps();
  CHECK(cudaFree(captured_total));
  CHECK(cudaFree(built_total));
  CHECK(cudaStreamDestroy(stream));
  return 0;
}
