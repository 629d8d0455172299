// Class 7: records of an event that streampool does not see (here: an event-record node of a
// graph, launched with cuGraphLaunch, which streampool forwards untouched).
//
// Each test: stream A frees a block behind work that still uses it and the program records the
// event E on A (streampool sees this record: E now stands for A's free). Then a graph whose
// event-record node records E is launched on an idle stream C and runs at once: the driver's E now
// means C's record, which completes, while streampool still takes E for A's. Then the program
// queries E, synchronizes E or makes B wait for E, and B allocates the same size. Violation: B gets
// A's block and B's work runs while A's work on it still runs: the driver's answer about the
// graph's record was taken as proof about A's.
#include "safety_support.hpp"

namespace safety {
namespace {

enum class Instantiate { with_flags, with_params, first_abi };
enum class Consumer { query, synchronize, wait };

class UnseenRecord : public SafetyTest {
 protected:
  void SetUp() override {
    SafetyTest::SetUp();
    ASSERT_EQ(SP(cuStreamCreate)(&idle, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuEventCreate)(&event, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  }
  void TearDown() override {
    SP(cuCtxSynchronize)();
    if (exec != nullptr) SP(cuGraphExecDestroy)(exec);
    if (graph != nullptr) SP(cuGraphDestroy)(graph);
    if (event != nullptr) SP(cuEventDestroy_v2)(event);
    if (idle != nullptr) SP(cuStreamDestroy_v2)(idle);
    SafetyTest::TearDown();
  }

  // A graph of an empty node followed by a node that records `event`.
  void build_graph(Instantiate instantiate) {
    ASSERT_EQ(SP(cuGraphCreate)(&graph, 0), CUDA_SUCCESS);
    CUgraphNode start = nullptr;
    ASSERT_EQ(SP(cuGraphAddEmptyNode)(&start, graph, nullptr, 0), CUDA_SUCCESS);
    CUgraphNode record = nullptr;
    ASSERT_EQ(SP(cuGraphAddEventRecordNode)(&record, graph, &start, 1, event), CUDA_SUCCESS);
    switch (instantiate) {
      case Instantiate::with_flags:
        ASSERT_EQ(SP(cuGraphInstantiateWithFlags)(&exec, graph, 0), CUDA_SUCCESS);
        break;
      case Instantiate::with_params: {
        CUDA_GRAPH_INSTANTIATE_PARAMS params{};
        ASSERT_EQ(SP(cuGraphInstantiateWithParams)(&exec, graph, &params), CUDA_SUCCESS);
        break;
      }
      case Instantiate::first_abi: {
        using FirstInstantiate = CUresult (*)(CUgraphExec*, CUgraph, CUgraphNode*, char*, size_t);
        auto first = reinterpret_cast<FirstInstantiate>(streampool_symbol("cuGraphInstantiate_v2"));
        ASSERT_NE(first, nullptr);
        ASSERT_EQ(first(&exec, graph, nullptr, nullptr, 0), CUDA_SUCCESS);
        break;
      }
    }
  }

  void consume(Consumer consumer) {
    switch (consumer) {
      case Consumer::query:
        ASSERT_EQ(SP(cuEventQuery)(event), CUDA_SUCCESS);  // about the graph's record
        break;
      case Consumer::synchronize:
        ASSERT_EQ(SP(cuEventSynchronize)(event), CUDA_SUCCESS);
        break;
      case Consumer::wait:
        ASSERT_EQ(SP(cuStreamWaitEvent)(b, event, 0), CUDA_SUCCESS);
        break;
    }
  }

  void run(Instantiate instantiate, Consumer consumer, decltype(&::cuGraphLaunch) launch) {
    ASSERT_NO_FATAL_FAILURE(build_graph(instantiate));
    ASSERT_NO_FATAL_FAILURE(give_up_block(old_owner, pool, a));
    ASSERT_EQ(SP(cuEventRecord)(event, a), CUDA_SUCCESS);

    ASSERT_EQ(launch(exec, idle), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuStreamSynchronize)(idle), CUDA_SUCCESS);  // the graph's record has completed
    ASSERT_NO_FATAL_FAILURE(consume(consumer));
    ASSERT_NO_FATAL_FAILURE(take_block(new_owner, old_owner, pool, b));

    expect_safe(a, b);
  }

  CUstream idle = nullptr;
  CUevent event = nullptr;
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
};

decltype(&::cuGraphLaunch) launch_legacy_abi() { return SP(cuGraphLaunch); }
decltype(&::cuGraphLaunch) launch_per_thread_abi() { return SP_AS(cuGraphLaunch_ptsz, cuGraphLaunch); }

TEST_F(UnseenRecord, QueryAfterAGraphRecordedTheEventDoesNotCompleteTheFree) {
  run(Instantiate::with_flags, Consumer::query, launch_legacy_abi());
}

TEST_F(UnseenRecord, SynchronizeAfterAGraphRecordedTheEventDoesNotCompleteTheFree) {
  run(Instantiate::with_params, Consumer::synchronize, launch_legacy_abi());
}

TEST_F(UnseenRecord, WaitAfterAGraphRecordedTheEventDoesNotOrderTheWaiterAfterTheFree) {
  run(Instantiate::with_flags, Consumer::wait, launch_legacy_abi());
}

TEST_F(UnseenRecord, QueryAfterAGraphLaunchedThroughThePtszAbiRecordedTheEventDoesNotCompleteTheFree) {
  run(Instantiate::first_abi, Consumer::query, launch_per_thread_abi());
}

TEST_F(UnseenRecord, WaitAfterAGraphLaunchedThroughThePtszAbiRecordedTheEventDoesNotOrderTheWaiter) {
  run(Instantiate::first_abi, Consumer::wait, launch_per_thread_abi());
}

}  // namespace
}  // namespace safety
