// Graphs over the fake driver, as the graph_replay example uses them: a kernel launched on a
// capturing stream becomes a node of the captured graph and is recorded each time the graph is
// launched (never at capture); kernel nodes of a graph built by hand are recorded per launch; graph
// memory has its address when the alloc node is added; upload and graph memory trim check their
// arguments.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "fake_registration.hpp"

namespace {

using runtime_test::fake_driver;
using runtime_test::launched_names;

void stub_graph_kernel() {}

const void* kernel() { return reinterpret_cast<const void*>(&stub_graph_kernel); }

class GraphReplay : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    void** handle = __cudaRegisterFatBinary(&runtime_test::g_fat_binary);
    __cudaRegisterFunction(handle, reinterpret_cast<const char*>(&stub_graph_kernel), nullptr, "_Z12graph_kernelv",
                           -1, nullptr, nullptr, nullptr, nullptr, nullptr);
    __cudaRegisterFatBinaryEnd(handle);
  }
  void SetUp() override {
    ASSERT_EQ(cudaFree(nullptr), cudaSuccess);  // the driver is loaded
    ASSERT_NE(fake_driver(), nullptr);
    runtime_test::reset_launches();
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), cudaSuccess);
  }
  void TearDown() override { EXPECT_EQ(cudaStreamDestroy(stream_), cudaSuccess); }

  // Instantiates `graph`, launches it `times` on the stream and waits.
  void replay(cudaGraph_t graph, int times) {
    cudaGraphExec_t exec = nullptr;
    ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    for (int i = 0; i < times; ++i) ASSERT_EQ(cudaGraphLaunch(exec, stream_), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  }

  cudaStream_t stream_ = nullptr;
};

TEST_F(GraphReplay, CapturedLaunchIsRecordedPerGraphLaunchAndNotAtCapture) {
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeGlobal), cudaSuccess);
  ASSERT_EQ(cudaLaunchKernel(kernel(), dim3(4), dim3(32), nullptr, 0, stream_), cudaSuccess);
  ASSERT_EQ(cudaStreamEndCapture(stream_, &graph), cudaSuccess);
  EXPECT_TRUE(launched_names().empty());

  replay(graph, 3);

  EXPECT_EQ(launched_names(), std::vector<std::string>(3, "_Z12graph_kernelv"));
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
}

TEST_F(GraphReplay, KernelNodeOfABuiltGraphIsRecordedPerGraphLaunch) {
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaGraphCreate(&graph, 0), cudaSuccess);
  cudaKernelNodeParams params{};
  params.func = const_cast<void*>(kernel());
  params.gridDim = dim3(2);
  params.blockDim = dim3(64);
  cudaGraphNode_t node = nullptr;
  ASSERT_EQ(cudaGraphAddKernelNode(&node, graph, nullptr, 0, &params), cudaSuccess);

  replay(graph, 2);

  EXPECT_EQ(launched_names(), std::vector<std::string>(2, "_Z12graph_kernelv"));
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
}

TEST_F(GraphReplay, MemAllocNodeHasItsAddressWhenAddedAndFreeNodeTakesIt) {
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaGraphCreate(&graph, 0), cudaSuccess);
  cudaMemAllocNodeParams params{};
  params.poolProps.allocType = cudaMemAllocationTypePinned;
  params.poolProps.location.type = cudaMemLocationTypeDevice;
  params.poolProps.location.id = 0;
  params.bytesize = 4096;
  cudaGraphNode_t alloc_node = nullptr, free_node = nullptr;

  ASSERT_EQ(cudaGraphAddMemAllocNode(&alloc_node, graph, nullptr, 0, &params), cudaSuccess);

  ASSERT_NE(params.dptr, nullptr);
  const char text[] = "graph memory";
  char back[sizeof(text)] = {};
  EXPECT_EQ(cudaMemcpy(params.dptr, text, sizeof(text), cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(back, params.dptr, sizeof(text), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_STREQ(back, text);
  EXPECT_EQ(cudaGraphAddMemFreeNode(&free_node, graph, &alloc_node, 1, params.dptr), cudaSuccess);
  replay(graph, 2);
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
}

TEST_F(GraphReplay, FreeNodeOfMemoryNotAllocatedIsInvalidValue) {
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaGraphCreate(&graph, 0), cudaSuccess);
  int not_device_memory = 0;
  cudaGraphNode_t node = nullptr;

  EXPECT_EQ(cudaGraphAddMemFreeNode(&node, graph, nullptr, 0, &not_device_memory), cudaErrorInvalidValue);

  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
}

TEST_F(GraphReplay, UploadOfAnInstantiatedGraphSucceedsAndOfADestroyedOneFails) {
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaGraphCreate(&graph, 0), cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);

  EXPECT_EQ(cudaGraphUpload(exec, stream_), cudaSuccess);
  ASSERT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_NE(cudaGraphUpload(exec, stream_), cudaSuccess);

  (void)cudaGetLastError();
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
}

TEST_F(GraphReplay, GraphMemTrimOfTheDeviceSucceedsAndOfAMissingOneIsInvalidDevice) {
  EXPECT_EQ(cudaDeviceGraphMemTrim(0), cudaSuccess);
  EXPECT_EQ(cudaDeviceGraphMemTrim(99), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidDevice);
}

}  // namespace
