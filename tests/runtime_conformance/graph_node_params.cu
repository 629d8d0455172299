// Graph nodes' parameters read back and changed after the node was added (in the graph and in an
// instantiated graph), instantiation with parameters, and user objects owned by graphs. The fake
// driver keeps event nodes, instantiation parameters and user objects; copy, memset, kernel and
// memory nodes' parameters are asked of the GPU's driver (the *OnGpu suites).
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "conformance.cuh"

namespace {

__device__ int g_counters[8];

__global__ void fill_values(int* values, int count, int value) {
  const int index = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (index < count) values[index] = value;
}

// Polls `flag` for up to 5 s: NVIDIA's driver runs user-object destructors on a thread of its own.
bool becomes_true(const std::atomic<bool>& flag) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!flag && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return flag;
}

void CUDART_CB set_flag(void* data) { static_cast<std::atomic<bool>*>(data)->store(true); }

TEST(GraphNodeParams, EventNodesAnswerAndChangeTheirEvents) {
  cudaEvent_t first = nullptr, second = nullptr;
  ASSERT_CUDA(cudaEventCreateWithFlags(&first, cudaEventDisableTiming));
  ASSERT_CUDA(cudaEventCreateWithFlags(&second, cudaEventDisableTiming));
  cudaGraph_t graph = nullptr;
  ASSERT_CUDA(cudaGraphCreate(&graph, 0));
  cudaGraphNode_t record = nullptr, wait = nullptr;
  ASSERT_CUDA(cudaGraphAddEventRecordNode(&record, graph, nullptr, 0, first));
  ASSERT_CUDA(cudaGraphAddEventWaitNode(&wait, graph, &record, 1, first));
  cudaEvent_t seen = nullptr;

  ASSERT_CUDA(cudaGraphEventRecordNodeGetEvent(record, &seen));
  EXPECT_EQ(seen, first);
  ASSERT_CUDA(cudaGraphEventRecordNodeSetEvent(record, second));
  ASSERT_CUDA(cudaGraphEventRecordNodeGetEvent(record, &seen));
  EXPECT_EQ(seen, second);
  ASSERT_CUDA(cudaGraphEventWaitNodeGetEvent(wait, &seen));
  EXPECT_EQ(seen, first);
  ASSERT_CUDA(cudaGraphEventWaitNodeSetEvent(wait, second));
  ASSERT_CUDA(cudaGraphEventWaitNodeGetEvent(wait, &seen));
  EXPECT_EQ(seen, second);

  EXPECT_CUDA(cudaGraphDestroy(graph));
  EXPECT_CUDA(cudaEventDestroy(first));
  EXPECT_CUDA(cudaEventDestroy(second));
}

TEST(GraphNodeParams, InstantiateWithParamsSucceedsAndTheGraphRuns) {
  cudaGraph_t graph = nullptr;
  ASSERT_CUDA(cudaGraphCreate(&graph, 0));
  conformance::Order order;
  conformance::Step step{&order, 7};
  cudaHostNodeParams host{conformance::note, &step};
  cudaGraphNode_t node = nullptr;
  ASSERT_CUDA(cudaGraphAddHostNode(&node, graph, nullptr, 0, &host));
  cudaStream_t stream = nullptr;
  ASSERT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaGraphInstantiateParams params{};
  params.result_out = cudaGraphInstantiateError;
  cudaGraphExec_t exec = nullptr;

  ASSERT_CUDA(cudaGraphInstantiateWithParams(&exec, graph, &params));
  EXPECT_EQ(params.result_out, cudaGraphInstantiateSuccess);
  ASSERT_CUDA(cudaGraphLaunch(exec, stream));
  ASSERT_CUDA(cudaStreamSynchronize(stream));

  EXPECT_EQ(order.seen, std::vector<int>{7});
  EXPECT_CUDA(cudaGraphExecDestroy(exec));
  EXPECT_CUDA(cudaGraphDestroy(graph));
  EXPECT_CUDA(cudaStreamDestroy(stream));
}

TEST(GraphNodeParams, NullOutputsAreInvalidValueAndTheLastError) {
  cudaGraph_t graph = nullptr;
  ASSERT_CUDA(cudaGraphCreate(&graph, 0));
  cudaGraphNode_t node = nullptr;
  ASSERT_CUDA(cudaGraphAddEmptyNode(&node, graph, nullptr, 0));
  cudaGraphExec_t exec = nullptr;
  conformance::clear_last_error();

  EXPECT_EQ(cudaGraphKernelNodeGetParams(node, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGraphMemcpyNodeGetParams(node, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGraphMemsetNodeGetParams(node, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGraphEventRecordNodeGetEvent(node, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGraphEventWaitNodeGetEvent(node, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGraphMemAllocNodeGetParams(node, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGraphMemFreeNodeGetParams(node, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGraphNodeSetParams(node, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGraphInstantiateWithParams(&exec, graph, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_CUDA(cudaGraphDestroy(graph));
}

TEST(UserObjects, AReferenceMovedToAGraphRunsTheDestructorWhenTheGraphGoes) {
  std::atomic<bool> destroyed{false};
  cudaUserObject_t object = nullptr;
  ASSERT_CUDA(cudaUserObjectCreate(&object, &destroyed, set_flag, 1, cudaUserObjectNoDestructorSync));
  cudaGraph_t graph = nullptr;
  ASSERT_CUDA(cudaGraphCreate(&graph, 0));

  ASSERT_CUDA(cudaGraphRetainUserObject(graph, object, 1, cudaGraphUserObjectMove));
  EXPECT_FALSE(destroyed);
  ASSERT_CUDA(cudaGraphDestroy(graph));

  EXPECT_TRUE(becomes_true(destroyed));
}

TEST(UserObjects, ReferencesOfTheProgramAndAGraphAreCountedTogether) {
  std::atomic<bool> destroyed{false};
  cudaUserObject_t object = nullptr;
  ASSERT_CUDA(cudaUserObjectCreate(&object, &destroyed, set_flag, 1, cudaUserObjectNoDestructorSync));
  cudaGraph_t graph = nullptr;
  ASSERT_CUDA(cudaGraphCreate(&graph, 0));

  ASSERT_CUDA(cudaUserObjectRetain(object, 2));
  ASSERT_CUDA(cudaGraphRetainUserObject(graph, object, 1, 0));
  ASSERT_CUDA(cudaUserObjectRelease(object, 3));
  ASSERT_CUDA(cudaGraphReleaseUserObject(graph, object, 1));

  EXPECT_TRUE(becomes_true(destroyed));
  EXPECT_CUDA(cudaGraphDestroy(graph));
}

TEST(UserObjects, CreateWithoutAnOutputIsInvalidValue) {
  std::atomic<bool> destroyed{false};
  conformance::clear_last_error();
  EXPECT_EQ(cudaUserObjectCreate(nullptr, &destroyed, set_flag, 1, cudaUserObjectNoDestructorSync),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
}

class GraphNodeParamsOnGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_CUDA(cudaGraphCreate(&graph_, 0));
    ASSERT_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }
  void TearDown() override {
    if (exec_ != nullptr) EXPECT_CUDA(cudaGraphExecDestroy(exec_));
    EXPECT_CUDA(cudaGraphDestroy(graph_));
    EXPECT_CUDA(cudaStreamDestroy(stream_));
  }
  void run() {
    ASSERT_CUDA(cudaGraphInstantiate(&exec_, graph_, 0));
    ASSERT_CUDA(cudaGraphLaunch(exec_, stream_));
    ASSERT_CUDA(cudaStreamSynchronize(stream_));
  }
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

TEST_F(GraphNodeParamsOnGpu, CopyNodeAnswersItsCopyAndSetParams1DRedirectsIt) {
  constexpr std::size_t kBytes = 1024;
  void *source = nullptr, *first = nullptr, *second = nullptr;
  ASSERT_CUDA(cudaMalloc(&source, kBytes));
  ASSERT_CUDA(cudaMalloc(&first, kBytes));
  ASSERT_CUDA(cudaMalloc(&second, kBytes));
  ASSERT_CUDA(cudaMemset(source, 0x3d, kBytes));
  ASSERT_CUDA(cudaMemset(second, 0, kBytes));
  cudaGraphNode_t node = nullptr;
  ASSERT_CUDA(cudaGraphAddMemcpyNode1D(&node, graph_, nullptr, 0, first, source, kBytes, cudaMemcpyDeviceToDevice));

  cudaMemcpy3DParms params{};
  ASSERT_CUDA(cudaGraphMemcpyNodeGetParams(node, &params));
  EXPECT_EQ(params.srcPtr.ptr, source);
  EXPECT_EQ(params.dstPtr.ptr, first);
  EXPECT_EQ(params.extent.width, kBytes);
  EXPECT_EQ(params.extent.height, 1u);
  EXPECT_EQ(params.extent.depth, 1u);
  ASSERT_CUDA(cudaGraphMemcpyNodeSetParams1D(node, second, source, kBytes, cudaMemcpyDeviceToDevice));
  run();

  std::vector<unsigned char> back(kBytes);
  ASSERT_CUDA(cudaMemcpy(back.data(), second, kBytes, cudaMemcpyDeviceToHost));
  EXPECT_EQ(back, std::vector<unsigned char>(kBytes, 0x3d));
  EXPECT_CUDA(cudaFree(source));
  EXPECT_CUDA(cudaFree(first));
  EXPECT_CUDA(cudaFree(second));
}

TEST_F(GraphNodeParamsOnGpu, MemsetNodeAnswersItsParametersAndExecSetParamsChangesTheValue) {
  constexpr std::size_t kCount = 256;
  int* values = nullptr;
  ASSERT_CUDA(cudaMalloc(&values, kCount * sizeof(int)));
  cudaMemsetParams memset{};
  memset.dst = values;
  memset.value = 5;
  memset.elementSize = sizeof(int);
  memset.width = kCount;
  memset.height = 1;
  cudaGraphNode_t node = nullptr;
  ASSERT_CUDA(cudaGraphAddMemsetNode(&node, graph_, nullptr, 0, &memset));

  cudaMemsetParams seen{};
  ASSERT_CUDA(cudaGraphMemsetNodeGetParams(node, &seen));
  EXPECT_EQ(seen.dst, values);
  EXPECT_EQ(seen.value, 5u);
  EXPECT_EQ(seen.elementSize, sizeof(int));
  EXPECT_EQ(seen.width, kCount);
  memset.value = 9;
  ASSERT_CUDA(cudaGraphMemsetNodeSetParams(node, &memset));
  run();
  std::vector<int> back(kCount);
  ASSERT_CUDA(cudaMemcpy(back.data(), values, kCount * sizeof(int), cudaMemcpyDeviceToHost));
  EXPECT_EQ(back, std::vector<int>(kCount, 9));

  memset.value = 11;
  ASSERT_CUDA(cudaGraphExecMemsetNodeSetParams(exec_, node, &memset));
  ASSERT_CUDA(cudaGraphLaunch(exec_, stream_));
  ASSERT_CUDA(cudaStreamSynchronize(stream_));
  ASSERT_CUDA(cudaMemcpy(back.data(), values, kCount * sizeof(int), cudaMemcpyDeviceToHost));
  EXPECT_EQ(back, std::vector<int>(kCount, 11));
  EXPECT_CUDA(cudaFree(values));
}

TEST_F(GraphNodeParamsOnGpu, KernelNodeAnswersItsHostStubShapeAndAttributes) {
  int* values = nullptr;
  ASSERT_CUDA(cudaMalloc(&values, 64 * sizeof(int)));
  int count = 64, value = 3;
  void* args[] = {&values, &count, &value};
  cudaKernelNodeParams kernel{};
  kernel.func = reinterpret_cast<void*>(fill_values);
  kernel.gridDim = dim3(2);
  kernel.blockDim = dim3(32);
  kernel.kernelParams = args;
  cudaGraphNode_t node = nullptr, copy = nullptr;
  ASSERT_CUDA(cudaGraphAddKernelNode(&node, graph_, nullptr, 0, &kernel));
  ASSERT_CUDA(cudaGraphAddKernelNode(&copy, graph_, &node, 1, &kernel));

  cudaKernelNodeParams seen{};
  ASSERT_CUDA(cudaGraphKernelNodeGetParams(node, &seen));
  EXPECT_EQ(seen.func, reinterpret_cast<void*>(fill_values));
  EXPECT_EQ(seen.gridDim.x, 2u);
  EXPECT_EQ(seen.blockDim.x, 32u);
  cudaKernelNodeAttrValue priority{};
  priority.priority = 1;
  ASSERT_CUDA(cudaGraphKernelNodeSetAttribute(node, cudaLaunchAttributePriority, &priority));
  ASSERT_CUDA(cudaGraphKernelNodeCopyAttributes(copy, node));
  cudaKernelNodeAttrValue copied{};
  ASSERT_CUDA(cudaGraphKernelNodeGetAttribute(copy, cudaLaunchAttributePriority, &copied));
  // NVIDIA's driver answers 0 for the copy of a node given priority 1 (through either runtime).
  EXPECT_EQ(copied.priority, 0);
  run();

  std::vector<int> back(64);
  ASSERT_CUDA(cudaMemcpy(back.data(), values, 64 * sizeof(int), cudaMemcpyDeviceToHost));
  EXPECT_EQ(back, std::vector<int>(64, 3));
  EXPECT_CUDA(cudaFree(values));
}

TEST_F(GraphNodeParamsOnGpu, SymbolCopyNodesReachTheDeviceVariable) {
  std::vector<int> values{1, 2, 3, 4, 5, 6, 7, 8}, back(8, 0);
  cudaGraphNode_t in = nullptr, out = nullptr;
  ASSERT_CUDA(cudaGraphAddMemcpyNodeToSymbol(&in, graph_, nullptr, 0, g_counters, values.data(), sizeof(int) * 8, 0,
                                             cudaMemcpyHostToDevice));
  ASSERT_CUDA(cudaGraphAddMemcpyNodeFromSymbol(&out, graph_, &in, 1, back.data(), g_counters, sizeof(int) * 4,
                                               sizeof(int) * 4, cudaMemcpyDeviceToHost));
  run();
  EXPECT_EQ(back, (std::vector<int>{5, 6, 7, 8, 0, 0, 0, 0}));

  std::vector<int> more(8, 42);
  ASSERT_CUDA(cudaGraphExecMemcpyNodeSetParamsToSymbol(exec_, in, g_counters, more.data(), sizeof(int) * 8, 0,
                                                       cudaMemcpyHostToDevice));
  ASSERT_CUDA(cudaGraphLaunch(exec_, stream_));
  ASSERT_CUDA(cudaStreamSynchronize(stream_));
  EXPECT_EQ(back, (std::vector<int>{42, 42, 42, 42, 0, 0, 0, 0}));
}

TEST_F(GraphNodeParamsOnGpu, GenericSetParamsChangesAMemsetNode) {
  int* values = nullptr;
  ASSERT_CUDA(cudaMalloc(&values, 32 * sizeof(int)));
  cudaGraphNodeParams params{};
  params.type = cudaGraphNodeTypeMemset;
  params.memset.dst = values;
  params.memset.value = 1;
  params.memset.elementSize = sizeof(int);
  params.memset.width = 32;
  params.memset.height = 1;
  cudaGraphNode_t node = nullptr;
  ASSERT_CUDA(cudaGraphAddNode(&node, graph_, nullptr, nullptr, 0, &params));
  params.memset.value = 4;
  ASSERT_CUDA(cudaGraphNodeSetParams(node, &params));
  run();
  std::vector<int> back(32);
  ASSERT_CUDA(cudaMemcpy(back.data(), values, 32 * sizeof(int), cudaMemcpyDeviceToHost));
  EXPECT_EQ(back, std::vector<int>(32, 4));

  params.memset.value = 6;
  ASSERT_CUDA(cudaGraphExecNodeSetParams(exec_, node, &params));
  ASSERT_CUDA(cudaGraphLaunch(exec_, stream_));
  ASSERT_CUDA(cudaStreamSynchronize(stream_));
  ASSERT_CUDA(cudaMemcpy(back.data(), values, 32 * sizeof(int), cudaMemcpyDeviceToHost));
  EXPECT_EQ(back, std::vector<int>(32, 6));
  EXPECT_CUDA(cudaFree(values));
}

TEST_F(GraphNodeParamsOnGpu, MemoryNodesAnswerTheirAllocation) {
  cudaMemAllocNodeParams alloc{};
  alloc.poolProps.allocType = cudaMemAllocationTypePinned;
  alloc.poolProps.location.type = cudaMemLocationTypeDevice;
  alloc.poolProps.location.id = 0;
  alloc.bytesize = 1 << 20;
  cudaGraphNode_t alloc_node = nullptr, free_node = nullptr;
  ASSERT_CUDA(cudaGraphAddMemAllocNode(&alloc_node, graph_, nullptr, 0, &alloc));
  ASSERT_CUDA(cudaGraphAddMemFreeNode(&free_node, graph_, &alloc_node, 1, alloc.dptr));

  cudaMemAllocNodeParams seen{};
  ASSERT_CUDA(cudaGraphMemAllocNodeGetParams(alloc_node, &seen));
  EXPECT_EQ(seen.dptr, alloc.dptr);
  EXPECT_EQ(seen.bytesize, alloc.bytesize);
  void* freed = nullptr;
  ASSERT_CUDA(cudaGraphMemFreeNodeGetParams(free_node, &freed));
  EXPECT_EQ(freed, alloc.dptr);
}

TEST_F(GraphNodeParamsOnGpu, ExecEventAndChildGraphUpdatesTakeEffect) {
  cudaEvent_t first = nullptr, second = nullptr;
  ASSERT_CUDA(cudaEventCreateWithFlags(&first, cudaEventDisableTiming));
  ASSERT_CUDA(cudaEventCreateWithFlags(&second, cudaEventDisableTiming));
  cudaGraphNode_t record = nullptr;
  ASSERT_CUDA(cudaGraphAddEventRecordNode(&record, graph_, nullptr, 0, first));
  cudaGraph_t child = nullptr;
  ASSERT_CUDA(cudaGraphCreate(&child, 0));
  cudaGraphNode_t empty = nullptr, child_node = nullptr;
  ASSERT_CUDA(cudaGraphAddEmptyNode(&empty, child, nullptr, 0));
  ASSERT_CUDA(cudaGraphAddChildGraphNode(&child_node, graph_, &record, 1, child));
  run();

  ASSERT_CUDA(cudaGraphExecEventRecordNodeSetEvent(exec_, record, second));
  ASSERT_CUDA(cudaGraphExecChildGraphNodeSetParams(exec_, child_node, child));
  ASSERT_CUDA(cudaGraphLaunch(exec_, stream_));
  ASSERT_CUDA(cudaStreamSynchronize(stream_));
  EXPECT_CUDA(cudaEventQuery(second));
  EXPECT_CUDA(cudaGraphDestroy(child));
  EXPECT_CUDA(cudaEventDestroy(first));
  EXPECT_CUDA(cudaEventDestroy(second));
}

}  // namespace
