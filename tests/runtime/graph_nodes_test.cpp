// Graphs built by hand with copy and memset nodes, through the runtime's own calls and through the
// generic cudaGraphAddNode: the nodes run in dependency order when the graph is launched, the graph
// lists them with their types, and descriptions the runtime cannot express are its errors.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <vector>

namespace {

constexpr std::size_t kBytes = 64;

// A row of `bytes` bytes (driver_functions.h's helpers need nvcc's headers).
cudaPitchedPtr row(void* pointer, std::size_t bytes) { return cudaPitchedPtr{pointer, bytes, bytes, 1}; }

struct GraphNodes : ::testing::Test {
  void SetUp() override {
    ASSERT_EQ(cudaMalloc(&device, kBytes), cudaSuccess);
    ASSERT_EQ(cudaMemset(device, 0, kBytes), cudaSuccess);
    ASSERT_EQ(cudaGraphCreate(&graph, 0), cudaSuccess);
  }
  void TearDown() override {
    EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
    EXPECT_EQ(cudaFree(device), cudaSuccess);
  }
  // Instantiates, launches on the legacy stream and waits.
  void run() {
    cudaGraphExec_t exec = nullptr;
    ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    ASSERT_EQ(cudaGraphLaunch(exec, nullptr), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(nullptr), cudaSuccess);
    EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  }
  void* device = nullptr;
  cudaGraph_t graph = nullptr;
};

TEST_F(GraphNodes, MemsetThenCopyNodesRunInOrderOnLaunch) {
  std::vector<unsigned char> host(kBytes, 0);
  cudaMemsetParams memset{};
  memset.dst = device;
  memset.value = 0x7;
  memset.elementSize = 1;
  memset.width = kBytes;
  memset.height = 1;
  cudaGraphNode_t set = nullptr;
  cudaGraphNode_t copy = nullptr;
  ASSERT_EQ(cudaGraphAddMemsetNode(&set, graph, nullptr, 0, &memset), cudaSuccess);
  ASSERT_EQ(cudaGraphAddMemcpyNode1D(&copy, graph, &set, 1, host.data(), device, kBytes, cudaMemcpyDeviceToHost),
            cudaSuccess);
  EXPECT_EQ(host[0], 0);  // nothing runs before the launch

  run();

  EXPECT_EQ(host, std::vector<unsigned char>(kBytes, 0x7));
}

TEST_F(GraphNodes, GraphListsItsNodesWithTheirTypes) {
  int value = 3;
  cudaGraphNode_t empty = nullptr;
  cudaGraphNode_t copy = nullptr;
  ASSERT_EQ(cudaGraphAddEmptyNode(&empty, graph, nullptr, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphAddMemcpyNode1D(&copy, graph, &empty, 1, device, &value, sizeof(value), cudaMemcpyDefault),
            cudaSuccess);
  std::size_t count = 0;

  ASSERT_EQ(cudaGraphGetNodes(graph, nullptr, &count), cudaSuccess);
  std::vector<cudaGraphNode_t> nodes(count);
  ASSERT_EQ(cudaGraphGetNodes(graph, nodes.data(), &count), cudaSuccess);
  cudaGraphNodeType type = cudaGraphNodeTypeCount;
  ASSERT_EQ(cudaGraphNodeGetType(nodes.at(1), &type), cudaSuccess);

  EXPECT_EQ(count, 2u);
  EXPECT_EQ(nodes.at(0), empty);
  EXPECT_EQ(type, cudaGraphNodeTypeMemcpy);
}

TEST_F(GraphNodes, GenericAddNodeTranslatesCopyAndMemsetParameters) {
  std::vector<int> host(4, 0);
  cudaGraphNodeParams set{};
  set.type = cudaGraphNodeTypeMemset;
  set.memset.dst = device;
  set.memset.value = 0x01020304;
  set.memset.elementSize = 4;
  set.memset.width = 4;
  set.memset.height = 1;
  cudaGraphNodeParams copy{};
  copy.type = cudaGraphNodeTypeMemcpy;
  copy.memcpy.copyParams.srcPtr = row(device, sizeof(int) * 4);
  copy.memcpy.copyParams.dstPtr = row(host.data(), sizeof(int) * 4);
  copy.memcpy.copyParams.extent = cudaExtent{sizeof(int) * 4, 1, 1};
  copy.memcpy.copyParams.kind = cudaMemcpyDeviceToHost;
  cudaGraphNode_t set_node = nullptr;
  cudaGraphNode_t copy_node = nullptr;

  ASSERT_EQ(cudaGraphAddNode(&set_node, graph, nullptr, nullptr, 0, &set), cudaSuccess);
  ASSERT_EQ(cudaGraphAddNode(&copy_node, graph, &set_node, nullptr, 1, &copy), cudaSuccess);
  run();

  EXPECT_EQ(host, std::vector<int>(4, 0x01020304));
}

TEST_F(GraphNodes, WhatTheRuntimeCannotExpressIsItsError) {
  int value = 0;
  cudaGraphNode_t node = nullptr;
  (void)cudaGetLastError();

  EXPECT_EQ(cudaGraphAddMemcpyNode1D(&node, graph, nullptr, 0, device, &value, sizeof(value),
                                     static_cast<cudaMemcpyKind>(cudaMemcpyDefault + 1)),
            cudaErrorInvalidMemcpyDirection);
  cudaMemcpy3DParms from_array{};
  from_array.srcArray = reinterpret_cast<cudaArray_t>(&value);  // no array the driver knows
  from_array.dstPtr = row(device, 4);
  from_array.extent = cudaExtent{4, 1, 1};
  from_array.kind = cudaMemcpyDeviceToDevice;
  EXPECT_EQ(cudaGraphAddMemcpyNode(&node, graph, nullptr, 0, &from_array), cudaErrorInvalidResourceHandle);
  cudaGraphNodeParams kernel{};
  kernel.type = cudaGraphNodeTypeKernel;
  kernel.kernel.func = &value;  // not a registered kernel: an invalid handle, as for a launch of it
  EXPECT_EQ(cudaGraphAddNode(&node, graph, nullptr, nullptr, 0, &kernel), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidResourceHandle);
}

}  // namespace
