// Fake graph memory: what cuDeviceGetGraphMemAttribute reports, accounted the way NVIDIA documents
// its driver's graph memory pool, per device:
// - a launch makes each of its alloc nodes' allocations live (used grows by their bytes) and ends
//   those its free nodes free; before that, the reservation grows to what the launch may need when
//   no allocation reuses another's memory: used + the launch's alloc bytes (reserved never shrinks
//   at a launch). An upload grows the reservation the same way and makes nothing live;
// - a live allocation ends with a free node of a later launch, with cuMemFreeAsync or cuMemFree of
//   its address, or with the context it was allocated in (its address stays the graph's: the node
//   allocated it when it was added);
// - cuDeviceGraphMemTrim gives back the reservation no live allocation uses (reserved = used), as
//   does the end of a context of the device; destroying an executable graph gives back nothing
//   (the memory stays reserved for graphs until a trim, as NVIDIA's programming guide says);
// - relaunching a graph whose allocation of the previous launch is still live is
//   CUDA_ERROR_INVALID_VALUE, as with NVIDIA's driver;
// - the highs follow the currents and are reset (to the current) by cuDeviceSetGraphMemAttribute
//   with 0; nothing else can be set.
// The reservation is bookkeeping only: the fake's device memory (cuMemGetInfo) is what the alloc
// nodes took when they were added.
#pragma once

#include <cuda.h>

#include <vector>

#include "graph.hpp"

namespace fake {

class Context;

// A launch (make_live) or an upload (not) of an executable graph's nodes, in `context`.
CUresult graph_memory_launch(const std::vector<GraphNode>& nodes, const Context* context, bool make_live);
// A live graph allocation freed outside a graph: true if `address` was one (now ended).
bool graph_memory_free(CUdeviceptr address);
void graph_memory_trim(int device);
// The live allocations of `context` end, and the device's unused reservation goes back.
void graph_memory_context_ended(const Context* context, int device);
CUresult graph_memory_attribute(int device, CUgraphMem_attribute attribute, void* value);
CUresult set_graph_memory_attribute(int device, CUgraphMem_attribute attribute, void* value);

}  // namespace fake
