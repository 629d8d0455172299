// driver-behaviour.md, "Graph capture": stream-ordered allocations on a capturing stream become
// graph memory nodes; the graph instantiates and runs; graph memory is not counted in the pool.
#include "conformance.hpp"

#include <vector>

namespace conformance {
namespace {

constexpr std::size_t kBytes = 256 * kKiB;

// Owns a captured graph and its executable.
struct Graph {
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  ~Graph() {
    if (exec != nullptr) (void)cuGraphExecDestroy(exec);
    if (graph != nullptr) (void)cuGraphDestroy(graph);
  }
};

// Counts the graph's nodes of one type.
std::size_t count_nodes(CUgraph graph, CUgraphNodeType type) {
  std::size_t count = 0;
  if (cuGraphGetNodes(graph, nullptr, &count) != CUDA_SUCCESS) return 0;
  std::vector<CUgraphNode> nodes(count);
  if (cuGraphGetNodes(graph, nodes.data(), &count) != CUDA_SUCCESS) return 0;
  std::size_t matching = 0;
  for (CUgraphNode node : nodes) {
    CUgraphNodeType node_type{};
    if (cuGraphNodeGetType(node, &node_type) == CUDA_SUCCESS && node_type == type) ++matching;
  }
  return matching;
}

// Captures: allocate (from `pool`, or the device's current pool when null), memset, copy the
// bytes out to `out`, free. Then instantiates, launches and checks `out`.
void capture_run_and_check(CUmemoryPool pool, CUstreamCaptureMode mode) {
  CONFORMANCE_STREAM(stream);
  CUdeviceptr out = 0;
  CU_ASSERT_OK(cuMemAlloc(&out, kBytes));
  CU_ASSERT_OK(cuMemsetD8(out, 0, kBytes));

  Graph g;
  CU_ASSERT_OK(cuStreamBeginCapture(stream.get(), mode));
  CUdeviceptr p = 0;
  const CUresult alloc = pool != nullptr ? cuMemAllocFromPoolAsync(&p, kBytes, pool, stream.get())
                                         : cuMemAllocAsync(&p, kBytes, stream.get());
  const CUresult memset = cuMemsetD8Async(p, 0x5a, kBytes, stream.get());
  const CUresult copy = cuMemcpyDtoDAsync(out, p, kBytes, stream.get());
  const CUresult release = cuMemFreeAsync(p, stream.get());
  const CUresult end = cuStreamEndCapture(stream.get(), &g.graph);
  CU_ASSERT_OK(alloc);
  CU_ASSERT_OK(memset);
  CU_ASSERT_OK(copy);
  CU_ASSERT_OK(release);
  CU_ASSERT_OK(end);
  ASSERT_NE(nullptr, g.graph);
  if (on_fake_driver()) {
    // The fake records captures but builds and runs no graphs: what streampool must do (pass the
    // captured calls through, leave its pools alone) has been checked; the rest needs a GPU.
    CU_EXPECT_OK(cuMemFree(out));
    return;
  }
  EXPECT_EQ(1U, count_nodes(g.graph, CU_GRAPH_NODE_TYPE_MEM_ALLOC));
  EXPECT_EQ(1U, count_nodes(g.graph, CU_GRAPH_NODE_TYPE_MEM_FREE));

  CU_ASSERT_OK(cuGraphInstantiate(&g.exec, g.graph, 0));
  for (int launch = 0; launch < 2; ++launch) {
    CU_ASSERT_OK(cuGraphLaunch(g.exec, stream.get()));
  }
  CU_ASSERT_OK(cuStreamSynchronize(stream.get()));

  std::vector<unsigned char> host(kBytes, 0);
  CU_ASSERT_OK(cuMemcpyDtoH(host.data(), out, kBytes));
  EXPECT_EQ(0x5a, host.front());
  EXPECT_EQ(0x5a, host.back());
  CU_EXPECT_OK(cuMemFree(out));
}

TEST(GraphCapture, AsyncAllocAndFreeBecomeMemoryNodesOutsideThePool) {
  CUmemoryPool pool = nullptr;
  CU_ASSERT_OK(cuDeviceGetDefaultMemPool(&pool, device()));
  CU_ASSERT_OK(cuCtxSynchronize());
  const std::uint64_t used_before = used(pool);
  CU_ASSERT_OK(set_u64(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, 0));
  ASSERT_NO_FATAL_FAILURE(capture_run_and_check(nullptr, CU_STREAM_CAPTURE_MODE_GLOBAL));
  EXPECT_EQ(used_before, used(pool));
  EXPECT_EQ(used_before, used_high(pool)) << "graph memory is not counted in the pool";
}

TEST(GraphCapture, AllocFromACreatedPoolDuringCaptureLeavesThePoolUntouched) {
  OwnedPool pool(device_pool_props());
  CU_ASSERT_OK(pool.status());
  ASSERT_NO_FATAL_FAILURE(capture_run_and_check(pool.get(), CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  EXPECT_EQ(0U, used(pool.get()));
  EXPECT_EQ(0U, used_high(pool.get()));
}

TEST(GraphCapture, PoolStillServesOrdinaryAllocationsAfterACapture) {
  CONFORMANCE_KEEP_ALL_POOL(pool, 0);
  ASSERT_NO_FATAL_FAILURE(capture_run_and_check(pool.get(), CU_STREAM_CAPTURE_MODE_RELAXED));
  CONFORMANCE_STREAM(stream);
  CUdeviceptr p = 0;
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&p, kBytes, pool.get(), stream.get()));
  EXPECT_EQ(kBytes, used(pool.get()));
  CU_EXPECT_OK(cuMemFreeAsync(p, stream.get()));
  CU_EXPECT_OK(cuStreamSynchronize(stream.get()));
  EXPECT_EQ(0U, used(pool.get()));
}

}  // namespace
}  // namespace conformance
