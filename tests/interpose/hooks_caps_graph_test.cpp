// The process cap (STREAMPOOL_LIMIT) over mipmapped arrays and graph memory, as the hooks enforce it
// over the fake driver: two devices capped at 256 MiB and 128 MiB (as hooks_caps_test).
// Mipmapped arrays are charged as arrays at the driver's size (else their levels' element bytes),
// refused past the cap after the pools are trimmed, and given back at destroy and context end.
// Graph memory is charged at what the driver reports reserved, re-read after a launch or upload of
// a graph known to allocate, a trim, an executable graph's destruction, an attribute change and a
// context's end; a launch whose estimated growth passes the cap is refused after the pools and the
// graph memory were trimmed, and nothing runs. A launch without a cap, or of a graph without
// allocation nodes, makes no driver call it did not make before.
//
// The fake's graph memory accounting (src/fakedriver/graph_memory.hpp) is process-wide and outlives
// each test: every test starts from a trim and measures against the attributes.
#include <dlfcn.h>

#include <cstdio>
#include <string>

#include "fault_switch.hpp"
#include "hooks_limit_info.hpp"
#include "hooks_test_api.hpp"
#include "streampool/streampool.h"

namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kCap0 = 256 * kMiB;

// The fake's memory-allocation nodes take their device memory when added and keep it until their
// context ends (api_graph_nodes.cpp): the devices are larger than hooks_caps_test's, the caps the same.
const bool environment_set = [] {
  setenv("STREAMPOOL_FAKE_DEVICES", "2", 0);
  setenv("STREAMPOOL_FAKE_MEMORY", "8G", 0);
  setenv("STREAMPOOL_LIMIT", "0:256M,1:128MiB", 0);
  return true;
}();

using hooks_test::fake_calls;
using hooks_test::limit_info;
std::uint64_t charged(int device) { return limit_info(device).charged; }

CUDA_ARRAY3D_DESCRIPTOR float_array(size_t width, size_t height, size_t depth, unsigned channels = 1,
                                    unsigned flags = 0) {
  CUDA_ARRAY3D_DESCRIPTOR descriptor{};
  descriptor.Width = width;
  descriptor.Height = height;
  descriptor.Depth = depth;
  descriptor.Format = CU_AD_FORMAT_FLOAT;
  descriptor.NumChannels = channels;
  descriptor.Flags = flags;
  return descriptor;
}

std::uint64_t graph_attribute(int device, CUgraphMem_attribute attribute) {
  cuuint64_t value = 0;
  EXPECT_EQ(SP(cuDeviceGetGraphMemAttribute)(device, attribute, &value), CUDA_SUCCESS);
  return value;
}
std::uint64_t reserved_graph_memory(int device) { return graph_attribute(device, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT); }

// The fake's own entry points, past streampool's hooks: a graph streampool never saw.
template <class Fn>
Fn fake_entry(const char* name) {
  return reinterpret_cast<Fn>(dlsym(hooks_test::fake_driver(), name));
}

class CapsGraph : public hooks_test::DriverTest {
 protected:
  void SetUp() override {
    DriverTest::SetUp();
    ASSERT_EQ(SP(cuDeviceGraphMemTrim)(0), CUDA_SUCCESS);
    ASSERT_EQ(graph_attribute(0, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT), 0u);
    ASSERT_EQ(limit_info(0).graph, 0u);
  }
  void TearDown() override {
    for (CUgraphExec exec : execs) SP(cuGraphExecDestroy)(exec);
    for (CUgraph graph : graphs) SP(cuGraphDestroy)(graph);
    SP(cuStreamSynchronize)(stream);
    SP(cuDeviceGraphMemTrim)(0);
    DriverTest::TearDown();
  }

  // A graph of one memory-allocation node of `bytes` on device 0, and a free node of it if asked.
  CUgraph allocating_graph(size_t bytes, bool freed, CUdeviceptr* address = nullptr) {
    CUgraph graph = nullptr;
    EXPECT_EQ(SP(cuGraphCreate)(&graph, 0), CUDA_SUCCESS);
    graphs.push_back(graph);
    CUDA_MEM_ALLOC_NODE_PARAMS params{};
    params.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    params.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    params.poolProps.location.id = 0;
    params.bytesize = bytes;
    CUgraphNode alloc = nullptr;
    EXPECT_EQ(SP(cuGraphAddMemAllocNode)(&alloc, graph, nullptr, 0, &params), CUDA_SUCCESS);
    if (freed) {
      CUgraphNode free_node = nullptr;
      EXPECT_EQ(SP(cuGraphAddMemFreeNode)(&free_node, graph, &alloc, 1, params.dptr), CUDA_SUCCESS);
    }
    if (address != nullptr) *address = params.dptr;
    return graph;
  }
  CUgraphExec instantiate(CUgraph graph) {
    CUgraphExec exec = nullptr;
    EXPECT_EQ(SP(cuGraphInstantiateWithFlags)(&exec, graph, 0), CUDA_SUCCESS);
    execs.push_back(exec);
    return exec;
  }
  void destroy_exec(CUgraphExec exec) {
    ASSERT_EQ(SP(cuGraphExecDestroy)(exec), CUDA_SUCCESS);
    std::erase(execs, exec);
  }
  // A pool on device 0 that keeps what is freed to it, holding `bytes` cached.
  CUmemoryPool caching_pool(size_t bytes) {
    CUmemPoolProps props{};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 0;
    CUmemoryPool pool = nullptr;
    EXPECT_EQ(SP(cuMemPoolCreate)(&pool, &props), CUDA_SUCCESS);
    std::uint64_t keep = UINT64_MAX;
    EXPECT_EQ(SP(cuMemPoolSetAttribute)(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep), CUDA_SUCCESS);
    CUdeviceptr block = 0;
    EXPECT_EQ(SP(cuMemAllocFromPoolAsync)(&block, bytes, pool, stream), CUDA_SUCCESS);
    EXPECT_EQ(SP(cuMemFreeAsync)(block, stream), CUDA_SUCCESS);
    EXPECT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
    return pool;
  }

  std::vector<CUgraph> graphs;
  std::vector<CUgraphExec> execs;
};

// ---- mipmapped arrays: charged as arrays ----

// The driver's size: answered, as by NVIDIA's driver, only for a deferred-mapping mipmapped array,
// so asked of a deferred twin (which the cap does not charge).
std::uint64_t mipmap_size(CUDA_ARRAY3D_DESCRIPTOR descriptor, unsigned levels, CUmipmappedArray mipmap, int device) {
  CUDA_ARRAY_MEMORY_REQUIREMENTS requirements{};
  EXPECT_EQ(SP(cuMipmappedArrayGetMemoryRequirements)(&requirements, mipmap, device), CUDA_ERROR_INVALID_VALUE);
  descriptor.Flags |= CUDA_ARRAY3D_DEFERRED_MAPPING;
  CUmipmappedArray twin = nullptr;
  EXPECT_EQ(SP(cuMipmappedArrayCreate)(&twin, &descriptor, levels), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuMipmappedArrayGetMemoryRequirements)(&requirements, twin, device), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuMipmappedArrayDestroy)(twin), CUDA_SUCCESS);
  return requirements.size;
}

TEST_F(CapsGraph, AMipmappedArrayIsChargedTheDriversSizeAsAnArrayAndGivenBackAtDestroy) {
  const std::uint64_t before = charged(0);
  const CUDA_ARRAY3D_DESCRIPTOR square = float_array(1000, 600, 0, 2);
  CUmipmappedArray mipmap = nullptr;
  ASSERT_EQ(SP(cuMipmappedArrayCreate)(&mipmap, &square, 4), CUDA_SUCCESS);
  const std::uint64_t bytes = mipmap_size(square, 4, mipmap, 0);
  EXPECT_GT(bytes, 1000u * 600 * 8);  // the levels below the first count too
  EXPECT_EQ(charged(0), before + bytes);
  EXPECT_EQ(limit_info(0).arrays, bytes);
  EXPECT_NE(hooks_test::stats_report().find("\"arrays\":" + std::to_string(bytes)), std::string::npos);
  // An array's destroy does not give back a mipmapped array's charge.
  EXPECT_EQ(SP(cuArrayDestroy)(reinterpret_cast<CUarray>(mipmap)), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(charged(0), before + bytes);
  ASSERT_EQ(SP(cuMipmappedArrayDestroy)(mipmap), CUDA_SUCCESS);
  EXPECT_EQ(charged(0), before);
  EXPECT_EQ(limit_info(0).arrays, 0u);
  EXPECT_EQ(SP(cuMipmappedArrayDestroy)(mipmap), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(charged(0), before);
}

TEST_F(CapsGraph, ADeferredMappingMipmappedArrayHoldsNoMemoryAndIsNotCharged) {
  const std::uint64_t before = charged(0);
  const CUDA_ARRAY3D_DESCRIPTOR deferred = float_array(2048, 2048, 0, 4, CUDA_ARRAY3D_DEFERRED_MAPPING);
  CUmipmappedArray mipmap = nullptr;
  ASSERT_EQ(SP(cuMipmappedArrayCreate)(&mipmap, &deferred, 12), CUDA_SUCCESS);
  CUDA_ARRAY_MEMORY_REQUIREMENTS requirements{};
  ASSERT_EQ(SP(cuMipmappedArrayGetMemoryRequirements)(&requirements, mipmap, 0), CUDA_SUCCESS);
  EXPECT_GT(requirements.size, 2048u * 2048 * 16);
  EXPECT_EQ(charged(0), before);
  EXPECT_EQ(limit_info(0).arrays, 0u);
  ASSERT_EQ(SP(cuMipmappedArrayDestroy)(mipmap), CUDA_SUCCESS);
  EXPECT_EQ(charged(0), before);
}

TEST_F(CapsGraph, WithoutTheDriversSizeAMipmappedArrayIsChargedItsLevelsElementBytes) {
  hooks_test::fail_call("cuMipmappedArrayGetMemoryRequirements", 1, CUDA_ERROR_NOT_SUPPORTED);
  const std::uint64_t before = charged(0);
  const CUDA_ARRAY3D_DESCRIPTOR layered = float_array(1001, 7, 3, 2, CUDA_ARRAY3D_LAYERED);
  CUmipmappedArray mipmap = nullptr;
  ASSERT_EQ(SP(cuMipmappedArrayCreate)(&mipmap, &layered, 3), CUDA_SUCCESS);
  // Levels of 1001 x 7, 500 x 3 and 250 x 1 elements of 8 bytes, each of 3 layers.
  EXPECT_EQ(charged(0), before + (1001u * 7 + 500u * 3 + 250u * 1) * 3 * 8);
  ASSERT_EQ(SP(cuMipmappedArrayDestroy)(mipmap), CUDA_SUCCESS);
  EXPECT_EQ(charged(0), before);
}

TEST_F(CapsGraph, AMipmappedArrayPastTheCapIsRefusedAfterThePoolsAreTrimmedAndIsNotLeaked) {
  CUmemoryPool keeper = caching_pool(200 * kMiB);
  const CUDA_ARRAY3D_DESCRIPTOR fits_trimmed = float_array(4096, 4096, 3);  // 192 MiB at its one level
  CUmipmappedArray mipmap = nullptr;
  ASSERT_EQ(SP(cuMipmappedArrayCreate)(&mipmap, &fits_trimmed, 1), CUDA_SUCCESS);
  EXPECT_LT(pool_attribute(keeper, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 200 * kMiB);
  EXPECT_LE(charged(0), kCap0);
  const std::uint64_t held = charged(0);
  const unsigned long long destroys = fake_calls("cuMipmappedArrayDestroy");
  const CUDA_ARRAY3D_DESCRIPTOR past = float_array(4096, 4096, 0);  // levels of 64 and 16 MiB: past the cap
  CUmipmappedArray refused = reinterpret_cast<CUmipmappedArray>(1);
  EXPECT_EQ(SP(cuMipmappedArrayCreate)(&refused, &past, 2), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(refused, nullptr);
  EXPECT_EQ(fake_calls("cuMipmappedArrayDestroy"), destroys + 2);  // the twin asked for the size, then the array made and destroyed again
  EXPECT_EQ(charged(0), held);
  ASSERT_EQ(SP(cuMipmappedArrayDestroy)(mipmap), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemPoolDestroy)(keeper), CUDA_SUCCESS);
}

// ---- graph memory: charged at what the driver reports reserved ----

TEST_F(CapsGraph, AGraphsReservationIsChargedAfterItsLaunchAndGivenBackAtTrim) {
  const std::uint64_t before = charged(0);
  const CUgraphExec exec = instantiate(allocating_graph(64 * kMiB, true));
  ASSERT_EQ(SP(cuGraphLaunch)(exec, stream), CUDA_SUCCESS);
  EXPECT_EQ(reserved_graph_memory(0), 64 * kMiB);
  EXPECT_EQ(limit_info(0).graph, 64 * kMiB);
  EXPECT_EQ(charged(0), before + 64 * kMiB);
  const streampool_device_limit now = limit_info(0);
  EXPECT_EQ(now.charged, now.pools_in_use + now.pools_cached + now.forwarded + now.arrays + now.graph);
  // Appended, not `"literal" + std::to_string(...)`: GCC 13's -Warray-bounds misreads that one.
  std::string graph_entry = "\"graph\":";
  graph_entry += std::to_string(64 * kMiB);
  EXPECT_NE(hooks_test::stats_report().find(graph_entry), std::string::npos);
  ASSERT_EQ(SP(cuGraphLaunch)(exec, stream), CUDA_SUCCESS);  // the reservation is reused
  EXPECT_EQ(limit_info(0).graph, 64 * kMiB);
  ASSERT_EQ(SP(cuDeviceGraphMemTrim)(0), CUDA_SUCCESS);
  EXPECT_EQ(limit_info(0).graph, 0u);
  EXPECT_EQ(charged(0), before);
}

TEST_F(CapsGraph, ALiveGraphAllocationKeepsItsChargeThroughATrimUntilFreed) {
  CUdeviceptr address = 0;
  const CUgraphExec exec = instantiate(allocating_graph(32 * kMiB, false, &address));
  ASSERT_EQ(SP(cuGraphUpload)(exec, stream), CUDA_SUCCESS);  // an upload reserves too
  EXPECT_EQ(limit_info(0).graph, 32 * kMiB);
  ASSERT_EQ(SP(cuGraphLaunch)(exec, stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuDeviceGraphMemTrim)(0), CUDA_SUCCESS);
  EXPECT_EQ(limit_info(0).graph, 32 * kMiB);  // in use: the trim keeps it
  ASSERT_EQ(SP(cuMemFreeAsync)(address, stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuDeviceGraphMemTrim)(0), CUDA_SUCCESS);
  EXPECT_EQ(limit_info(0).graph, 0u);
}

TEST_F(CapsGraph, ALaunchPastTheCapIsRefusedAfterThePoolsAndTheGraphMemoryAreTrimmedAndNothingRuns) {
  CUmemoryPool keeper = caching_pool(200 * kMiB);
  CUdeviceptr held_block = 0;
  ASSERT_EQ(SP(cuMemAlloc_v2)(&held_block, 40 * kMiB), CUDA_SUCCESS);
  // 200 cached + 40 held + 100 growth is past 256: the pools give back first, and the launch goes.
  const CUgraphExec fits = instantiate(allocating_graph(100 * kMiB, true));
  ASSERT_EQ(SP(cuGraphLaunch)(fits, stream), CUDA_SUCCESS);
  EXPECT_LT(pool_attribute(keeper, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 200 * kMiB);
  EXPECT_EQ(limit_info(0).graph, 100 * kMiB);
  EXPECT_LE(charged(0), kCap0);

  // 40 held + 250 growth is past 256 whatever goes back: refused, after the pools and the graph
  // memory were trimmed, and the driver never launches it.
  const CUgraphExec past = instantiate(allocating_graph(250 * kMiB, true));
  const unsigned long long launches = fake_calls("cuGraphLaunch");
  const unsigned long long uploads = fake_calls("cuGraphUpload");
  const unsigned long long trims = fake_calls("cuDeviceGraphMemTrim");
  EXPECT_EQ(SP(cuGraphLaunch)(past, stream), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(fake_calls("cuGraphLaunch"), launches);
  EXPECT_EQ(fake_calls("cuDeviceGraphMemTrim"), trims + 1);
  EXPECT_EQ(limit_info(0).graph, 0u);  // the trim gave back the first graph's reservation, and the count says so
  EXPECT_EQ(reserved_graph_memory(0), 0u);
  EXPECT_EQ(SP(cuGraphUpload)(past, stream), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(fake_calls("cuGraphUpload"), uploads);
  EXPECT_LE(charged(0), kCap0);

  // A graph whose growth the reservation already covers is not refused for its size.
  ASSERT_EQ(SP(cuGraphLaunch)(fits, stream), CUDA_SUCCESS);
  const CUgraphExec again = instantiate(allocating_graph(100 * kMiB, true));
  EXPECT_EQ(SP(cuGraphLaunch)(again, stream), CUDA_SUCCESS);
  EXPECT_EQ(limit_info(0).graph, 100 * kMiB);
  ASSERT_EQ(SP(cuMemFree_v2)(held_block), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemPoolDestroy)(keeper), CUDA_SUCCESS);
}

TEST_F(CapsGraph, AllocationsOfAChildGraphAreFoundAtInstantiation) {
  CUdeviceptr held_block = 0;
  ASSERT_EQ(SP(cuMemAlloc_v2)(&held_block, 100 * kMiB), CUDA_SUCCESS);
  const CUgraph child = allocating_graph(200 * kMiB, true);
  CUgraph parent = nullptr;
  ASSERT_EQ(SP(cuGraphCreate)(&parent, 0), CUDA_SUCCESS);
  graphs.push_back(parent);
  CUgraphNode child_node = nullptr;
  ASSERT_EQ(SP(cuGraphAddChildGraphNode)(&child_node, parent, nullptr, 0, child), CUDA_SUCCESS);
  const CUgraphExec exec = instantiate(parent);
  const unsigned long long launches = fake_calls("cuGraphLaunch");
  EXPECT_EQ(SP(cuGraphLaunch)(exec, stream), CUDA_ERROR_OUT_OF_MEMORY);  // 100 held + 200 is past 256
  EXPECT_EQ(fake_calls("cuGraphLaunch"), launches);
  ASSERT_EQ(SP(cuMemFree_v2)(held_block), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuGraphLaunch)(exec, stream), CUDA_SUCCESS);
  EXPECT_EQ(limit_info(0).graph, 200 * kMiB);
}

TEST_F(CapsGraph, ALaunchOnACapturingStreamIsForwardedUnestimated) {
  const CUgraphExec past = instantiate(allocating_graph(300 * kMiB, true));
  CUstream capturing = nullptr;
  ASSERT_EQ(SP(cuStreamCreate)(&capturing, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuStreamBeginCapture_v2)(capturing, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
  const unsigned long long queries = fake_calls("cuDeviceGetGraphMemAttribute");
  EXPECT_EQ(SP(cuGraphLaunch)(past, capturing), CUDA_SUCCESS);  // a node of the capture: nothing runs
  EXPECT_EQ(fake_calls("cuDeviceGetGraphMemAttribute"), queries);
  CUgraph captured = nullptr;
  ASSERT_EQ(SP(cuStreamEndCapture)(capturing, &captured), CUDA_SUCCESS);
  if (captured != nullptr) graphs.push_back(captured);
  ASSERT_EQ(SP(cuStreamDestroy_v2)(capturing), CUDA_SUCCESS);
}

// Graphs streampool never saw (made and launched on the driver directly) are counted at the next
// re-read, whichever call makes it.
class UnseenGraph : public CapsGraph {
 protected:
  void launch_unseen(size_t bytes) {
    auto instantiate_directly = fake_entry<decltype(&::cuGraphInstantiateWithFlags)>("cuGraphInstantiateWithFlags");
    auto launch_directly = fake_entry<decltype(&::cuGraphLaunch)>("cuGraphLaunch");
    ASSERT_NE(instantiate_directly, nullptr);
    ASSERT_NE(launch_directly, nullptr);
    CUgraphExec exec = nullptr;
    ASSERT_EQ(instantiate_directly(&exec, allocating_graph(bytes, true), 0), CUDA_SUCCESS);
    execs.push_back(exec);
    ASSERT_EQ(launch_directly(exec, stream), CUDA_SUCCESS);
    ASSERT_EQ(reserved_graph_memory(0), bytes);
  }
};

TEST_F(UnseenGraph, DestroyingAKnownExecutableGraphRereadsTheReservation) {
  const CUgraphExec known = instantiate(allocating_graph(8 * kMiB, true));
  launch_unseen(48 * kMiB);
  EXPECT_EQ(limit_info(0).graph, 0u);  // unseen so far
  destroy_exec(known);
  EXPECT_EQ(limit_info(0).graph, 48 * kMiB);
}

TEST_F(UnseenGraph, AGraphMemoryAttributeChangeRereadsTheReservation) {
  launch_unseen(24 * kMiB);
  cuuint64_t zero = 0;
  ASSERT_EQ(SP(cuDeviceSetGraphMemAttribute)(0, CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH, &zero), CUDA_SUCCESS);
  EXPECT_EQ(limit_info(0).graph, 24 * kMiB);
}

TEST_F(UnseenGraph, AReservationPastTheCapIsCountedAndRefusesLaterCharges) {
  launch_unseen(300 * kMiB);
  const CUgraphExec known = instantiate(allocating_graph(kMiB, true));
  ASSERT_EQ(SP(cuGraphLaunch)(known, stream), CUDA_SUCCESS);  // covered by the reservation: no growth
  EXPECT_EQ(limit_info(0).graph, 300 * kMiB);
  CUdeviceptr refused = 0;
  EXPECT_EQ(SP(cuMemAlloc_v2)(&refused, kMiB), CUDA_ERROR_OUT_OF_MEMORY);
  ASSERT_EQ(SP(cuDeviceGraphMemTrim)(0), CUDA_SUCCESS);
  EXPECT_EQ(limit_info(0).graph, 0u);
}

// ---- what a launch costs: nothing new without a cap or without allocation nodes ----

TEST_F(CapsGraph, ALaunchOfAGraphWithoutAllocationNodesMakesNoNewDriverCall) {
  CUgraph graph = nullptr;
  ASSERT_EQ(SP(cuGraphCreate)(&graph, 0), CUDA_SUCCESS);
  graphs.push_back(graph);
  CUgraphNode empty = nullptr;
  ASSERT_EQ(SP(cuGraphAddEmptyNode)(&empty, graph, nullptr, 0), CUDA_SUCCESS);
  const CUgraphExec plain = instantiate(graph);
  (void)instantiate(allocating_graph(kMiB, true));  // another graph is known to allocate
  const unsigned long long queries = fake_calls("cuDeviceGetGraphMemAttribute");
  const unsigned long long capture_queries = fake_calls("cuStreamIsCapturing");
  const unsigned long long launches = fake_calls("cuGraphLaunch");
  for (int round = 0; round < 3; ++round) ASSERT_EQ(SP(cuGraphLaunch)(plain, stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuGraphUpload)(plain, stream), CUDA_SUCCESS);
  destroy_exec(plain);
  EXPECT_EQ(fake_calls("cuDeviceGetGraphMemAttribute"), queries);
  EXPECT_EQ(fake_calls("cuStreamIsCapturing"), capture_queries);
  EXPECT_EQ(fake_calls("cuGraphLaunch"), launches + 3);
}

TEST(CapsGraphChild, DISABLED_WithoutACapAGraphLaunchMakesNoNewDriverCall) {
  ASSERT_EQ(SP(cuInit)(0), CUDA_SUCCESS);
  CUcontext primary = nullptr;
  ASSERT_EQ(SP(cuDevicePrimaryCtxRetain)(&primary, 0), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuCtxSetCurrent)(primary), CUDA_SUCCESS);
  CUgraph graph = nullptr;
  ASSERT_EQ(SP(cuGraphCreate)(&graph, 0), CUDA_SUCCESS);
  CUDA_MEM_ALLOC_NODE_PARAMS params{};
  params.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  params.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  params.bytesize = 64 * kMiB;
  CUgraphNode alloc = nullptr, free_node = nullptr;
  ASSERT_EQ(SP(cuGraphAddMemAllocNode)(&alloc, graph, nullptr, 0, &params), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuGraphAddMemFreeNode)(&free_node, graph, &alloc, 1, params.dptr), CUDA_SUCCESS);
  const char* walked[] = {"cuGraphGetNodes", "cuGraphNodeGetType", "cuGraphMemAllocNodeGetParams",
                          "cuDeviceGetGraphMemAttribute", "cuStreamIsCapturing"};
  unsigned long long before[5] = {};
  for (int i = 0; i < 5; ++i) before[i] = fake_calls(walked[i]);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(SP(cuGraphInstantiateWithFlags)(&exec, graph, 0), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuGraphLaunch)(exec, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuGraphExecDestroy)(exec), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuDeviceGraphMemTrim)(0), CUDA_SUCCESS);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(fake_calls(walked[i]), before[i]) << walked[i];
  EXPECT_EQ(limit_info(0).graph, 0u);
}

TEST(CapsGraphChild, DISABLED_AContextResetGivesBackItsMipmappedArraysAndGraphMemory) {
  ASSERT_EQ(SP(cuInit)(0), CUDA_SUCCESS);
  CUcontext primary = nullptr;
  ASSERT_EQ(SP(cuDevicePrimaryCtxRetain)(&primary, 0), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuCtxSetCurrent)(primary), CUDA_SUCCESS);
  const CUDA_ARRAY3D_DESCRIPTOR big = float_array(4096, 4096, 0);  // 64 MiB at its first level
  CUmipmappedArray mipmap = nullptr;
  ASSERT_EQ(SP(cuMipmappedArrayCreate)(&mipmap, &big, 3), CUDA_SUCCESS);
  CUgraph graph = nullptr;
  ASSERT_EQ(SP(cuGraphCreate)(&graph, 0), CUDA_SUCCESS);
  CUDA_MEM_ALLOC_NODE_PARAMS params{};
  params.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  params.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  params.bytesize = 100 * kMiB;
  CUgraphNode alloc = nullptr;
  ASSERT_EQ(SP(cuGraphAddMemAllocNode)(&alloc, graph, nullptr, 0, &params), CUDA_SUCCESS);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(SP(cuGraphInstantiateWithFlags)(&exec, graph, 0), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuGraphLaunch)(exec, nullptr), CUDA_SUCCESS);  // its allocation stays live
  ASSERT_GE(limit_info(0).arrays, 64 * kMiB);
  ASSERT_EQ(limit_info(0).graph, 100 * kMiB);
  ASSERT_EQ(SP(cuDevicePrimaryCtxReset_v2)(0), CUDA_SUCCESS);
  EXPECT_EQ(limit_info(0).arrays, 0u);
  EXPECT_EQ(limit_info(0).graph, 0u);
  EXPECT_EQ(charged(0), 0u);
}

TEST(CapsGraphSettings, WithoutACapAGraphLaunchMakesNoNewDriverCall) {
  EXPECT_EQ(hooks_test::run_child_test("CapsGraphChild.DISABLED_WithoutACapAGraphLaunchMakesNoNewDriverCall",
                                       {"STREAMPOOL_LIMIT=", "STREAMPOOL_FAKE_DEVICES=1"}),
            0);
}

TEST(CapsGraphSettings, AContextResetGivesBackTheMipmappedArraysAndGraphMemoryOfItsContext) {
  EXPECT_EQ(hooks_test::run_child_test("CapsGraphChild.DISABLED_AContextResetGivesBackItsMipmappedArraysAndGraphMemory",
                                       {"STREAMPOOL_LIMIT=300M", "STREAMPOOL_FAKE_DEVICES=1"}),
            0);
}

TEST_F(CapsGraph, AnOlderSmallerLimitInfoIsFilledOnlyUpToItsSize) {
  const CUgraphExec exec = instantiate(allocating_graph(16 * kMiB, true));
  ASSERT_EQ(SP(cuGraphLaunch)(exec, stream), CUDA_SUCCESS);
  using Info = int (*)(int, streampool_device_limit*);
  auto info = reinterpret_cast<Info>(hooks_test::streampool_symbol("streampool_limit_info"));
  ASSERT_NE(info, nullptr);
  streampool_device_limit old{};
  old.struct_size = offsetof(streampool_device_limit, graph);  // the struct before graph was appended
  old.graph = 12345;
  ASSERT_EQ(info(0, &old), 0);
  EXPECT_EQ(old.graph, 12345u);
  EXPECT_EQ(old.charged, charged(0));
  EXPECT_EQ(limit_info(0).graph, 16 * kMiB);
}

}  // namespace
