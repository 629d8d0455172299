// Stream capture and graphs: capture status and information, what cannot be captured, graphs built
// node by node (host nodes run in dependency order on every launch), instantiate, upload, launch and
// graph memory; on a GPU, captured allocations, copies, kernels and host functions replayed, and a
// graph of alloc, kernel and free nodes (the fake driver runs no captured copy or host function).
#include <mutex>
#include <numeric>
#include <vector>

#include "conformance.cuh"

using conformance::clear_last_error;
using conformance::note;
using conformance::Order;
using conformance::Step;

namespace {

class Graphs : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
  void TearDown() override { EXPECT_CUDA(cudaStreamDestroy(stream_)); }

  // Instantiates `graph`, uploads it, launches it `times`, waits, and destroys both.
  void replay(cudaGraph_t graph, int times) {
    cudaGraphExec_t exec = nullptr;
    ASSERT_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    ASSERT_CUDA(cudaGraphUpload(exec, stream_));
    for (int i = 0; i < times; ++i) ASSERT_CUDA(cudaGraphLaunch(exec, stream_));
    ASSERT_CUDA(cudaStreamSynchronize(stream_));
    EXPECT_CUDA(cudaGraphExecDestroy(exec));
    EXPECT_CUDA(cudaGraphDestroy(graph));
  }

  cudaStream_t stream_ = nullptr;
};

TEST_F(Graphs, IsCapturingIsNoneThenActiveThenNone) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusInvalidated;
  ASSERT_CUDA(cudaStreamIsCapturing(stream_, &status));
  EXPECT_EQ(status, cudaStreamCaptureStatusNone);

  ASSERT_CUDA(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  ASSERT_CUDA(cudaStreamIsCapturing(stream_, &status));
  EXPECT_EQ(status, cudaStreamCaptureStatusActive);
  cudaGraph_t graph = nullptr;
  ASSERT_CUDA(cudaStreamEndCapture(stream_, &graph));
  ASSERT_CUDA(cudaStreamIsCapturing(stream_, &status));
  EXPECT_EQ(status, cudaStreamCaptureStatusNone);

  EXPECT_NE(graph, nullptr);
  EXPECT_CUDA(cudaGraphDestroy(graph));
}

TEST_F(Graphs, CaptureInfoGivesEachCaptureItsIdAndGraph) {
  unsigned long long ids[2] = {0, 0};
  for (unsigned long long& id : ids) {
    ASSERT_CUDA(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeGlobal));
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    cudaGraph_t capturing = nullptr;
    ASSERT_CUDA(cudaStreamGetCaptureInfo(stream_, &status, &id, &capturing, nullptr, nullptr, nullptr));
    EXPECT_EQ(status, cudaStreamCaptureStatusActive);
    EXPECT_NE(capturing, nullptr);
    cudaGraph_t graph = nullptr;
    ASSERT_CUDA(cudaStreamEndCapture(stream_, &graph));
    EXPECT_CUDA(cudaGraphDestroy(graph));
  }
  EXPECT_NE(ids[0], 0u);
  EXPECT_NE(ids[0], ids[1]);
}

TEST_F(Graphs, CaptureInfoOfAStreamNotCapturingIsNone) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusActive;
  ASSERT_CUDA(cudaStreamGetCaptureInfo(stream_, &status, nullptr, nullptr, nullptr, nullptr, nullptr));
  EXPECT_EQ(status, cudaStreamCaptureStatusNone);
}

TEST_F(Graphs, LegacyDefaultStreamCannotBeCaptured) {
  clear_last_error();
  EXPECT_EQ(cudaStreamBeginCapture(cudaStreamLegacy, cudaStreamCaptureModeGlobal), cudaErrorStreamCaptureUnsupported);
  EXPECT_EQ(cudaGetLastError(), cudaErrorStreamCaptureUnsupported);
}

TEST_F(Graphs, EndCaptureOfAStreamNotCapturingIsIllegalState) {
  clear_last_error();
  cudaGraph_t graph = nullptr;
  EXPECT_EQ(cudaStreamEndCapture(stream_, &graph), cudaErrorIllegalState);
  clear_last_error();
}

TEST_F(Graphs, EventQueryDuringAGlobalCaptureIsUnsupportedAndInvalidatesIt) {
  clear_last_error();
  cudaEvent_t event = nullptr;
  ASSERT_CUDA(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  ASSERT_CUDA(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeGlobal));

  EXPECT_EQ(cudaEventQuery(event), cudaErrorStreamCaptureUnsupported);

  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  ASSERT_CUDA(cudaStreamIsCapturing(stream_, &status));
  EXPECT_EQ(status, cudaStreamCaptureStatusInvalidated);
  cudaGraph_t graph = nullptr;
  EXPECT_EQ(cudaStreamEndCapture(stream_, &graph), cudaErrorStreamCaptureInvalidated);
  EXPECT_CUDA(cudaEventDestroy(event));
  clear_last_error();
}

TEST_F(Graphs, CapturedAllocationAndFreeInstantiateAndReplay) {
  ASSERT_CUDA(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeGlobal));
  void* memory = nullptr;
  ASSERT_CUDA(cudaMallocAsync(&memory, 1 << 20, stream_));
  ASSERT_CUDA(cudaMemsetAsync(memory, 0, 1 << 20, stream_));
  ASSERT_CUDA(cudaFreeAsync(memory, stream_));
  cudaGraph_t graph = nullptr;
  ASSERT_CUDA(cudaStreamEndCapture(stream_, &graph));

  replay(graph, 3);

  EXPECT_CUDA(cudaDeviceGraphMemTrim(0));
}

TEST_F(Graphs, HostNodesRunInDependencyOrderOnEveryLaunch) {
  cudaGraph_t graph = nullptr;
  ASSERT_CUDA(cudaGraphCreate(&graph, 0));
  Order order;
  Step steps[] = {{&order, 1}, {&order, 2}, {&order, 3}};
  cudaGraphNode_t previous = nullptr, empty = nullptr;
  for (Step& step : steps) {
    cudaHostNodeParams params{};
    params.fn = note;
    params.userData = &step;
    cudaGraphNode_t node = nullptr;
    ASSERT_CUDA(cudaGraphAddHostNode(&node, graph, previous ? &previous : nullptr, previous ? 1 : 0, &params));
    previous = node;
  }
  ASSERT_CUDA(cudaGraphAddEmptyNode(&empty, graph, &previous, 1));

  replay(graph, 2);

  EXPECT_EQ(order.seen, (std::vector<int>{1, 2, 3, 1, 2, 3}));
}

TEST_F(Graphs, EventRecordNodeCompletesWithTheGraph) {
  cudaGraph_t graph = nullptr;
  ASSERT_CUDA(cudaGraphCreate(&graph, 0));
  cudaEvent_t event = nullptr;
  ASSERT_CUDA(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  cudaGraphNode_t empty = nullptr, record = nullptr;
  ASSERT_CUDA(cudaGraphAddEmptyNode(&empty, graph, nullptr, 0));
  ASSERT_CUDA(cudaGraphAddEventRecordNode(&record, graph, &empty, 1, event));

  replay(graph, 1);

  EXPECT_CUDA(cudaEventQuery(event));
  EXPECT_CUDA(cudaEventDestroy(event));
}

__global__ void add_into(int* total, const int* part, int count) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) total[i] += part[i];
}

__global__ void fill(int* values, int count, int value) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) values[i] = value;
}

constexpr int kCount = 4096;

TEST_F(Graphs, GraphMemTrimOfAMissingDeviceIsInvalidDevice) {
  clear_last_error();
  int count = 0;
  ASSERT_CUDA(cudaGetDeviceCount(&count));
  EXPECT_EQ(cudaDeviceGraphMemTrim(count), cudaErrorInvalidDevice);
  clear_last_error();
}

using GraphsOnGpu = Graphs;

TEST_F(GraphsOnGpu, CapturedAllocationCopyAndKernelReplayWithFreshInput) {
  int *pinned_in = nullptr, *total = nullptr;
  ASSERT_CUDA(cudaMallocHost(&pinned_in, kCount * sizeof(int)));
  ASSERT_CUDA(cudaMalloc(&total, kCount * sizeof(int)));
  ASSERT_CUDA(cudaMemset(total, 0, kCount * sizeof(int)));
  ASSERT_CUDA(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeGlobal));
  int* part = nullptr;
  ASSERT_CUDA(cudaMallocAsync(&part, kCount * sizeof(int), stream_));
  ASSERT_CUDA(cudaMemcpyAsync(part, pinned_in, kCount * sizeof(int), cudaMemcpyHostToDevice, stream_));
  add_into<<<kCount / 256, 256, 0, stream_>>>(total, part, kCount);
  ASSERT_CUDA(cudaFreeAsync(part, stream_));
  cudaGraph_t graph = nullptr;
  ASSERT_CUDA(cudaStreamEndCapture(stream_, &graph));
  cudaGraphExec_t exec = nullptr;
  ASSERT_CUDA(cudaGraphInstantiate(&exec, graph, 0));

  for (int round = 1; round <= 3; ++round) {
    for (int i = 0; i < kCount; ++i) pinned_in[i] = round * i;
    ASSERT_CUDA(cudaGraphLaunch(exec, stream_));
    ASSERT_CUDA(cudaStreamSynchronize(stream_));
  }

  std::vector<int> back(kCount);
  ASSERT_CUDA(cudaMemcpy(back.data(), total, kCount * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < kCount; ++i) ASSERT_EQ(back[i], 6 * i) << i;
  EXPECT_CUDA(cudaGraphExecDestroy(exec));
  EXPECT_CUDA(cudaGraphDestroy(graph));
  EXPECT_CUDA(cudaFree(total));
  EXPECT_CUDA(cudaFreeHost(pinned_in));
  EXPECT_CUDA(cudaDeviceGraphMemTrim(0));
}

TEST_F(GraphsOnGpu, CudaMallocDuringAGlobalCaptureIsUnsupportedAndInvalidatesIt) {
  clear_last_error();
  ASSERT_CUDA(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeGlobal));
  void* memory = nullptr;

  EXPECT_EQ(cudaMalloc(&memory, 4096), cudaErrorStreamCaptureUnsupported);

  cudaGraph_t graph = nullptr;
  EXPECT_EQ(cudaStreamEndCapture(stream_, &graph), cudaErrorStreamCaptureInvalidated);
  clear_last_error();
}

// The fake driver does not model the legacy stream's implicit dependency on a blocking capture.
TEST_F(GraphsOnGpu, LegacyStreamQueryDuringABlockingStreamsCaptureIsImplicitAndLeavesItValid) {
  clear_last_error();
  cudaStream_t blocking = nullptr;
  ASSERT_CUDA(cudaStreamCreate(&blocking));
  ASSERT_CUDA(cudaStreamBeginCapture(blocking, cudaStreamCaptureModeGlobal));
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;

  EXPECT_EQ(cudaStreamIsCapturing(cudaStreamLegacy, &status), cudaErrorStreamCaptureImplicit);

  cudaGraph_t graph = nullptr;
  EXPECT_CUDA(cudaStreamEndCapture(blocking, &graph));
  if (graph != nullptr) EXPECT_CUDA(cudaGraphDestroy(graph));
  EXPECT_CUDA(cudaStreamDestroy(blocking));
  clear_last_error();
}

TEST_F(GraphsOnGpu, CapturedHostFunctionRunsOnEveryLaunch) {
  Order order;
  Step step{&order, 9};
  ASSERT_CUDA(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeGlobal));
  ASSERT_CUDA(cudaLaunchHostFunc(stream_, note, &step));
  cudaGraph_t graph = nullptr;
  ASSERT_CUDA(cudaStreamEndCapture(stream_, &graph));
  EXPECT_TRUE(order.seen.empty());  // captured, not run

  replay(graph, 3);

  EXPECT_EQ(order.seen, (std::vector<int>{9, 9, 9}));
}

TEST_F(GraphsOnGpu, BuiltGraphOfAllocKernelAndFreeNodesComputes) {
  int* total = nullptr;
  ASSERT_CUDA(cudaMalloc(&total, kCount * sizeof(int)));
  ASSERT_CUDA(cudaMemset(total, 0, kCount * sizeof(int)));
  cudaGraph_t graph = nullptr;
  ASSERT_CUDA(cudaGraphCreate(&graph, 0));
  cudaMemAllocNodeParams alloc{};
  alloc.poolProps.allocType = cudaMemAllocationTypePinned;
  alloc.poolProps.location.type = cudaMemLocationTypeDevice;
  alloc.poolProps.location.id = 0;
  alloc.bytesize = kCount * sizeof(int);
  cudaGraphNode_t alloc_node = nullptr, fill_node = nullptr, kernel_node = nullptr, free_node = nullptr;
  ASSERT_CUDA(cudaGraphAddMemAllocNode(&alloc_node, graph, nullptr, 0, &alloc));
  int* part = static_cast<int*>(alloc.dptr);
  int count = kCount, one = 1;
  void* fill_args[] = {&part, &count, &one};
  cudaKernelNodeParams kernel{};
  kernel.func = reinterpret_cast<void*>(fill);
  kernel.gridDim = dim3(kCount / 256);
  kernel.blockDim = dim3(256);
  kernel.kernelParams = fill_args;
  ASSERT_CUDA(cudaGraphAddKernelNode(&fill_node, graph, &alloc_node, 1, &kernel));
  void* args[] = {&total, &part, &count};
  kernel.func = reinterpret_cast<void*>(add_into);
  kernel.kernelParams = args;
  ASSERT_CUDA(cudaGraphAddKernelNode(&kernel_node, graph, &fill_node, 1, &kernel));
  ASSERT_CUDA(cudaGraphAddMemFreeNode(&free_node, graph, &kernel_node, 1, part));

  replay(graph, 4);

  std::vector<int> back(kCount);
  ASSERT_CUDA(cudaMemcpy(back.data(), total, kCount * sizeof(int), cudaMemcpyDeviceToHost));
  EXPECT_EQ(back, std::vector<int>(kCount, 4));
  EXPECT_CUDA(cudaFree(total));
}

}  // namespace
