// Graphs built by hand: host, empty, event-record and event-wait nodes run in order on the launch
// stream; instantiation copies the graph; bad handles are errors.
#include <atomic>
#include <vector>

#include "fake_test_support.hpp"

// The original instantiate entry point (cuda.h maps cuGraphInstantiate to ...WithFlags).
extern "C" CUresult cuGraphInstantiate_v2(CUgraphExec* phGraphExec, CUgraph hGraph, CUgraphNode* phErrorNode,
                                          char* logBuffer, size_t bufferSize);

namespace fake_test {
namespace {

using GraphsTest = FakeDriverTest;

// Host node: appends its tag to a shared list.
struct Trace {
  std::vector<int> order;
};
struct TraceStep {
  Trace* trace = nullptr;
  int tag = 0;
};
void CUDA_CB append_step(void* step) {
  auto* traced = static_cast<TraceStep*>(step);
  traced->trace->order.push_back(traced->tag);
}

CUgraphNode add_host(CUgraph graph, CUgraphNode after, CUhostFn fn, void* data) {
  CUDA_HOST_NODE_PARAMS params{};
  params.fn = fn;
  params.userData = data;
  CUgraphNode node = nullptr;
  EXPECT_EQ(cuGraphAddHostNode(&node, graph, after == nullptr ? nullptr : &after, after == nullptr ? 0 : 1, &params),
            CUDA_SUCCESS);
  return node;
}

TEST_F(GraphsTest, NodesRunInDependencyOrderOnEveryLaunch) {
  CUstream stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  CUgraph graph = nullptr;
  ASSERT_EQ(cuGraphCreate(&graph, 0), CUDA_SUCCESS);
  Trace trace;
  TraceStep first{&trace, 1};
  TraceStep second{&trace, 2};
  CUgraphNode one = add_host(graph, nullptr, append_step, &first);
  CUgraphNode empty = nullptr;
  ASSERT_EQ(cuGraphAddEmptyNode(&empty, graph, &one, 1), CUDA_SUCCESS);
  add_host(graph, empty, append_step, &second);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS);

  ASSERT_EQ(cuGraphLaunch(exec, stream), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphLaunch(exec, stream), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(stream), CUDA_SUCCESS);

  EXPECT_EQ(trace.order, (std::vector<int>{1, 2, 1, 2}));
  EXPECT_EQ(cuGraphExecDestroy(exec), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphDestroy(graph), CUDA_SUCCESS);
  cuStreamDestroy(stream);
}

TEST_F(GraphsTest, LaunchIsAsynchronousAndOrderedWithTheStreamsOtherWork) {
  CUstream stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  int sleep_for = 100;
  std::atomic<bool> graph_ran{false};
  FlagObservation after_graph{&graph_ran};
  CUgraph graph = nullptr;
  ASSERT_EQ(cuGraphCreate(&graph, 0), CUDA_SUCCESS);
  CUgraphNode sleeper = add_host(graph, nullptr, sleep_ms, &sleep_for);
  add_host(graph, sleeper, raise_flag, &graph_ran);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(cuGraphInstantiate(&exec, graph, 0), CUDA_SUCCESS);

  ASSERT_EQ(cuGraphLaunch(exec, stream), CUDA_SUCCESS);
  const CUresult while_running = cuStreamQuery(stream);
  ASSERT_EQ(cuLaunchHostFunc(stream, observe_flag, &after_graph), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(stream), CUDA_SUCCESS);

  EXPECT_EQ(while_running, CUDA_ERROR_NOT_READY);
  EXPECT_EQ(after_graph.seen.load(), 1);
  cuGraphExecDestroy(exec);
  cuGraphDestroy(graph);
  cuStreamDestroy(stream);
}

TEST_F(GraphsTest, EventRecordNodeCompletesWhenTheNodesBeforeItRan) {
  CUstream stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  CUevent event = nullptr;
  ASSERT_EQ(cuEventCreate(&event, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  int first_sleep = 100;
  int second_sleep = 300;
  CUgraph graph = nullptr;
  ASSERT_EQ(cuGraphCreate(&graph, 0), CUDA_SUCCESS);
  CUgraphNode before = add_host(graph, nullptr, sleep_ms, &first_sleep);
  CUgraphNode record = nullptr;
  ASSERT_EQ(cuGraphAddEventRecordNode(&record, graph, &before, 1, event), CUDA_SUCCESS);
  add_host(graph, record, sleep_ms, &second_sleep);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS);

  ASSERT_EQ(cuGraphLaunch(exec, stream), CUDA_SUCCESS);
  const CUresult at_launch = cuEventQuery(event);
  ASSERT_EQ(cuEventSynchronize(event), CUDA_SUCCESS);
  const CUresult stream_after_event = cuStreamQuery(stream);

  EXPECT_EQ(at_launch, CUDA_ERROR_NOT_READY);
  EXPECT_EQ(stream_after_event, CUDA_ERROR_NOT_READY);  // the node after the record still sleeps
  ASSERT_EQ(cuStreamSynchronize(stream), CUDA_SUCCESS);
  cuGraphExecDestroy(exec);
  cuGraphDestroy(graph);
  cuEventDestroy(event);
  cuStreamDestroy(stream);
}

TEST_F(GraphsTest, EventWaitNodeDelaysTheGraphUntilTheEventsWork) {
  CUstream producer = nullptr;
  CUstream consumer = nullptr;
  ASSERT_EQ(cuStreamCreate(&producer, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamCreate(&consumer, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  CUevent produced = nullptr;
  ASSERT_EQ(cuEventCreate(&produced, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  int sleep_for = 100;
  std::atomic<bool> producer_done{false};
  FlagObservation graph_saw{&producer_done};
  CUgraph graph = nullptr;
  ASSERT_EQ(cuGraphCreate(&graph, 0), CUDA_SUCCESS);
  CUgraphNode wait = nullptr;
  ASSERT_EQ(cuGraphAddEventWaitNode(&wait, graph, nullptr, 0, produced), CUDA_SUCCESS);
  add_host(graph, wait, observe_flag, &graph_saw);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuLaunchHostFunc(producer, sleep_ms, &sleep_for), CUDA_SUCCESS);
  ASSERT_EQ(cuLaunchHostFunc(producer, raise_flag, &producer_done), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(produced, producer), CUDA_SUCCESS);

  ASSERT_EQ(cuGraphLaunch(exec, consumer), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(consumer), CUDA_SUCCESS);

  EXPECT_EQ(graph_saw.seen.load(), 1);
  cuGraphExecDestroy(exec);
  cuGraphDestroy(graph);
  cuEventDestroy(produced);
  cuStreamDestroy(producer);
  cuStreamDestroy(consumer);
}

TEST_F(GraphsTest, AnExecutableGraphOutlivesItsGraphAndTheNodesAddedLater) {
  CUstream stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  Trace trace;
  TraceStep first{&trace, 1};
  TraceStep later{&trace, 2};
  CUgraph graph = nullptr;
  ASSERT_EQ(cuGraphCreate(&graph, 0), CUDA_SUCCESS);
  CUgraphNode one = add_host(graph, nullptr, append_step, &first);
  CUgraphExec exec = nullptr;
  CUgraphNode error_node = one;
  char log[8] = "x";
  ASSERT_EQ(cuGraphInstantiate_v2(&exec, graph, &error_node, log, sizeof log), CUDA_SUCCESS);
  add_host(graph, one, append_step, &later);
  ASSERT_EQ(cuGraphDestroy(graph), CUDA_SUCCESS);

  ASSERT_EQ(cuGraphLaunch(exec, stream), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(stream), CUDA_SUCCESS);

  EXPECT_EQ(trace.order, (std::vector<int>{1}));
  EXPECT_EQ(error_node, nullptr);
  EXPECT_EQ(log[0], '\0');
  EXPECT_EQ(cuGraphExecDestroy(exec), CUDA_SUCCESS);
  cuStreamDestroy(stream);
}

TEST_F(GraphsTest, BadHandlesAndArgumentsAreErrors) {
  CUgraph graph = nullptr;
  ASSERT_EQ(cuGraphCreate(&graph, 0), CUDA_SUCCESS);
  CUgraph other = nullptr;
  ASSERT_EQ(cuGraphCreate(&other, 0), CUDA_SUCCESS);
  CUgraphNode foreign = nullptr;
  ASSERT_EQ(cuGraphAddEmptyNode(&foreign, other, nullptr, 0), CUDA_SUCCESS);
  CUgraphNode node = nullptr;
  CUDA_HOST_NODE_PARAMS no_function{};
  CUgraphExec exec = nullptr;
  auto* bogus_exec = reinterpret_cast<CUgraphExec>(0x4321);
  auto* bogus_event = reinterpret_cast<CUevent>(0x4242);

  EXPECT_EQ(cuGraphCreate(&other, 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuGraphAddEmptyNode(&node, graph, &foreign, 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuGraphAddHostNode(&node, graph, nullptr, 0, &no_function), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuGraphAddEventRecordNode(&node, graph, nullptr, 0, bogus_event), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuGraphInstantiateWithFlags(&exec, graph, 0x100), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuGraphLaunch(bogus_exec, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuGraphExecDestroy(bogus_exec), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuGraphDestroy(graph), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphDestroy(graph), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuGraphDestroy(other), CUDA_SUCCESS);
}

TEST_F(GraphsTest, CapturedGraphInstantiatesAndLaunchesAsAnEmptyGraph) {
  CUstream stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), CUDA_SUCCESS);
  CUgraph graph = nullptr;
  ASSERT_EQ(cuStreamEndCapture(stream, &graph), CUDA_SUCCESS);
  CUgraphExec exec = nullptr;
  CUDA_GRAPH_INSTANTIATE_PARAMS params{};
  params.result_out = CUDA_GRAPH_INSTANTIATE_ERROR;

  ASSERT_EQ(cuGraphInstantiateWithParams(&exec, graph, &params), CUDA_SUCCESS);
  EXPECT_EQ(params.result_out, CUDA_GRAPH_INSTANTIATE_SUCCESS);
  EXPECT_EQ(cuGraphLaunch(exec, stream), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamSynchronize(stream), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphExecDestroy(exec), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphDestroy(graph), CUDA_SUCCESS);
  cuStreamDestroy(stream);
}

}  // namespace
}  // namespace fake_test
