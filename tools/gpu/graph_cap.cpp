// Graph memory and mipmapped arrays under the process cap, on NVIDIA's driver (graph_cap_check.sh).
//
//   graph_cap CAP_BYTES
//
// Run under streampool with STREAMPOOL_LIMIT=CAP_BYTES, and alone for comparison. Steps, one line
// each ("step name: figures, verdict"):
//   graph-charge    a graph with a 256 MiB allocation node and its free, launched: the driver's
//                   CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT against streampool's `graph` figure
//   graph-refused   a graph allocating more than the cap: its launch answers out of memory under the
//                   cap (and runs where nothing caps it)
//   graph-trim      cuDeviceGraphMemTrim: both figures back to 0
//   mipmap-charge   a 4096x4096 float4 mipmapped array of 13 levels: the driver's size (asked, with
//                   cuMipmappedArrayGetMemoryRequirements, of a deferred-mapping twin: the driver
//                   answers for no other) against the fall of cuMemGetInfo's free memory (alone:
//                   the driver's own; under the cap: the cap's) and the growth of streampool's
//                   `arrays` figure, given back at destroy
//   mipmap-refused  a mipmapped array larger than the cap: out of memory under the cap
// Figures come from streampool_limit_info, looked up with dlsym: without streampool the program
// prints the driver's figures and "no streampool". Exit status 1 if a verdict fails.
#include <cuda.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "cu_check.hpp"

namespace {

// Mirrors include/streampool/streampool.h's streampool_device_limit (the fields read here).
struct DeviceLimit {
  uint32_t struct_size;
  int32_t device;
  uint64_t limit, charged, pools_in_use, pools_cached, forwarded, peak, estimated_uncounted;
  uint64_t served_malloc, arrays, graph;
};
using LimitInfo = int (*)(int, DeviceLimit*);

LimitInfo limit_info = nullptr;
int failures = 0;

bool charged(DeviceLimit* out) {
  if (limit_info == nullptr) return false;
  out->struct_size = sizeof(DeviceLimit);
  return limit_info(0, out) == 0;
}

void verdict(const char* step, bool ok, const char* why) {
  std::printf("%s: %s%s%s\n", step, ok ? "PASS" : "FAIL", ok ? "" : " ", ok ? "" : why);
  if (!ok) ++failures;
}

uint64_t reserved_graph_memory(CUdevice device) {
  cuuint64_t value = 0;
  CHECK(cuDeviceGetGraphMemAttribute(device, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &value));
  return value;
}

// A graph of one allocation node of `bytes` and its free node; instantiated.
CUgraphExec allocating_graph(CUdevice device, size_t bytes) {
  CUgraph graph;
  CHECK(cuGraphCreate(&graph, 0));
  CUDA_MEM_ALLOC_NODE_PARAMS params{};
  params.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  params.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  params.poolProps.location.id = device;
  params.bytesize = bytes;
  CUgraphNode alloc;
  CHECK(cuGraphAddMemAllocNode(&alloc, graph, nullptr, 0, &params));
  CUgraphNode release;
  CHECK(cuGraphAddMemFreeNode(&release, graph, &alloc, 1, params.dptr));
  CUgraphExec exec;
  CHECK(cuGraphInstantiate(&exec, graph, 0));
  CHECK(cuGraphDestroy(graph));
  return exec;
}

CUresult make_mipmap(size_t side, unsigned levels, CUmipmappedArray* out, unsigned flags = 0) {
  CUDA_ARRAY3D_DESCRIPTOR desc{};
  desc.Width = side;
  desc.Height = side;
  desc.Format = CU_AD_FORMAT_FLOAT;
  desc.NumChannels = 4;
  desc.Flags = flags;
  return cuMipmappedArrayCreate(out, &desc, levels);
}

uint64_t free_memory() {
  size_t free = 0, total = 0;
  CHECK(cuMemGetInfo(&free, &total));
  return free;
}

}  // namespace

int main(int argc, char** argv) {
  const uint64_t cap = argc > 1 ? std::strtoull(argv[1], nullptr, 0) : (2ull << 30);
  limit_info = reinterpret_cast<LimitInfo>(dlsym(RTLD_DEFAULT, "streampool_limit_info"));
  const bool capped = limit_info != nullptr;
  std::printf("streampool: %s, cap %llu\n", capped ? "loaded" : "no streampool",
              static_cast<unsigned long long>(cap));
  const CUdevice device = start_on_device_0();
  CUstream stream;
  CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  DeviceLimit before{};
  if (capped && (!charged(&before) || before.limit != cap)) {
    std::printf("streampool_limit_info: limit %llu, not the cap asked\n",
                static_cast<unsigned long long>(before.limit));
    return 2;
  }

  // graph-charge
  CUgraphExec small = allocating_graph(device, 256u << 20);
  CHECK(cuGraphLaunch(small, stream));
  CHECK(cuStreamSynchronize(stream));
  const uint64_t reserved = reserved_graph_memory(device);
  DeviceLimit now{};
  const bool have = charged(&now);
  std::printf("graph-charge: driver reserved %llu, streampool graph %llu\n",
              static_cast<unsigned long long>(reserved),
              static_cast<unsigned long long>(have ? now.graph : 0));
  verdict("graph-charge", !capped || (reserved >= (256u << 20) && now.graph == reserved),
          "(streampool's graph figure is not the driver's reserved memory)");

  // graph-refused
  CUgraphExec large = allocating_graph(device, static_cast<size_t>(cap + (1ull << 30)));
  const CUresult launched = cuGraphLaunch(large, stream);
  const CUresult synced = cuStreamSynchronize(stream);
  std::printf("graph-refused: launch of %llu bytes = %d, sync = %d\n",
              static_cast<unsigned long long>(cap + (1ull << 30)), static_cast<int>(launched),
              static_cast<int>(synced));
  verdict("graph-refused",
          capped ? launched == CUDA_ERROR_OUT_OF_MEMORY && synced == CUDA_SUCCESS
                 : launched == CUDA_SUCCESS && synced == CUDA_SUCCESS,
          capped ? "(a launch past the cap was not refused)" : "(the driver alone refused it)");

  // graph-trim
  CHECK(cuGraphExecDestroy(large));
  CHECK(cuGraphExecDestroy(small));
  CHECK(cuDeviceGraphMemTrim(device));
  const uint64_t trimmed = reserved_graph_memory(device);
  charged(&now);
  std::printf("graph-trim: driver reserved %llu, streampool graph %llu\n",
              static_cast<unsigned long long>(trimmed), static_cast<unsigned long long>(now.graph));
  verdict("graph-trim", trimmed == 0 && (!capped || now.graph == 0), "(memory left charged)");

  // mipmap-charge
  CUmipmappedArray twin;
  CHECK(make_mipmap(4096, 13, &twin, CUDA_ARRAY3D_DEFERRED_MAPPING));
  CUDA_ARRAY_MEMORY_REQUIREMENTS needs{};
  CHECK(cuMipmappedArrayGetMemoryRequirements(&needs, twin, device));
  CHECK(cuMipmappedArrayDestroy(twin));
  charged(&before);
  const uint64_t free_before = free_memory();
  CUmipmappedArray mipmap;
  CHECK(make_mipmap(4096, 13, &mipmap));
  const uint64_t free_after = free_memory();
  charged(&now);
  const uint64_t grown = now.arrays - before.arrays;
  const uint64_t fell = free_before - free_after;
  CHECK(cuMipmappedArrayDestroy(mipmap));
  DeviceLimit after{};
  charged(&after);
  std::printf("mipmap-charge: driver size %llu, free memory fell %llu, streampool arrays +%llu, after destroy %+lld\n",
              static_cast<unsigned long long>(needs.size), static_cast<unsigned long long>(fell),
              static_cast<unsigned long long>(grown), static_cast<long long>(after.arrays - before.arrays));
  // Alone, the driver's free memory falls by the size rounded to its 2 MiB pages (within 4 MiB).
  const bool near = fell + (4u << 20) >= needs.size && fell <= needs.size + (4u << 20);
  verdict("mipmap-charge",
          capped ? grown == needs.size && fell == needs.size && after.arrays == before.arrays : near,
          capped ? "(the arrays figure is not the driver's size)" : "(the driver's size is not what it took)");

  // mipmap-refused: 16384^2 float4 is 4 GiB at level 0 alone; side grown until past the cap.
  size_t side = 16384;
  while (static_cast<uint64_t>(side) * side * 16 < cap + (1ull << 30)) side *= 2;
  CUmipmappedArray big = nullptr;
  const CUresult made = make_mipmap(side > 32768 ? 32768 : side, 4, &big);
  std::printf("mipmap-refused: %zux%zu float4 = %d\n", side, side, static_cast<int>(made));
  if (made == CUDA_SUCCESS) CHECK(cuMipmappedArrayDestroy(big));
  verdict("mipmap-refused", capped ? made == CUDA_ERROR_OUT_OF_MEMORY : made == CUDA_SUCCESS,
          capped ? "(a mipmapped array past the cap was made)" : "(the driver alone refused it)");

  CHECK(cuStreamDestroy(stream));
  CHECK(cuDevicePrimaryCtxRelease(device));
  return failures == 0 ? 0 : 1;
}
