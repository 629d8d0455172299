// Graph memory under the process cap (STREAMPOOL_LIMIT): the instantiations learn which executable
// graphs allocate, their launches and uploads are refused past the cap, and these, the executable
// graph's destruction, cuDeviceGraphMemTrim and cuDeviceSetGraphMemAttribute re-read what the
// driver reserved. Thin: the logic is in control/graph_memory_charges.cpp. cudart's
// cudaGraphInstantiate, cudaGraphLaunch ... (src/runtime) call these definitions directly.
//
// None of these calls records an event the record hooks would miss: an event-record node is
// marked untracked when it is added or set (untracked_record_hooks.cpp), so a launch needs no
// tracking of its own, and a launch on a capturing stream is forwarded as it comes.
#include "call_counters.hpp"
#include "control/graph_memory_charges.hpp"
#include "process_state.hpp"

using streampool::interpose::Hook;
namespace sp = streampool::interpose;
namespace caps = streampool::interpose::control_hooks;
using streampool::driver::real;

STREAMPOOL_HOOK CUresult cuGraphInstantiate(CUgraphExec* phGraphExec, CUgraph hGraph, CUgraphNode* phErrorNode,
                                            char* logBuffer, size_t bufferSize) {
  sp::count_call(Hook::cuGraphInstantiate);
  sp::HookScope scope;
  const CUresult result = sp::forward(real().cuGraphInstantiate, phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize);
  return sp::bypass(scope) ? result : caps::graph_instantiated(result, phGraphExec, hGraph);
}

STREAMPOOL_HOOK CUresult cuGraphInstantiate_v2(CUgraphExec* phGraphExec, CUgraph hGraph, CUgraphNode* phErrorNode,
                                               char* logBuffer, size_t bufferSize) {
  sp::count_call(Hook::cuGraphInstantiate_v2);
  sp::HookScope scope;
  const CUresult result =
      sp::forward(real().cuGraphInstantiate_v2, phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize);
  return sp::bypass(scope) ? result : caps::graph_instantiated(result, phGraphExec, hGraph);
}

STREAMPOOL_HOOK CUresult cuGraphInstantiateWithFlags(CUgraphExec* phGraphExec, CUgraph hGraph,
                                                     unsigned long long flags) {
  sp::count_call(Hook::cuGraphInstantiateWithFlags);
  sp::HookScope scope;
  const CUresult result = sp::forward(real().cuGraphInstantiateWithFlags, phGraphExec, hGraph, flags);
  return sp::bypass(scope) ? result : caps::graph_instantiated(result, phGraphExec, hGraph);
}

STREAMPOOL_HOOK CUresult cuGraphInstantiateWithParams(CUgraphExec* phGraphExec, CUgraph hGraph,
                                                      CUDA_GRAPH_INSTANTIATE_PARAMS* instantiateParams) {
  sp::count_call(Hook::cuGraphInstantiateWithParams);
  sp::HookScope scope;
  const CUresult result = sp::forward(real().cuGraphInstantiateWithParams, phGraphExec, hGraph, instantiateParams);
  return sp::bypass(scope) ? result : caps::graph_instantiated(result, phGraphExec, hGraph);
}

STREAMPOOL_HOOK CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec* phGraphExec, CUgraph hGraph,
                                                           CUDA_GRAPH_INSTANTIATE_PARAMS* instantiateParams) {
  sp::count_call(Hook::cuGraphInstantiateWithParams_ptsz);
  sp::HookScope scope;
  const CUresult result =
      sp::forward(real().cuGraphInstantiateWithParams_ptsz, phGraphExec, hGraph, instantiateParams);
  return sp::bypass(scope) ? result : caps::graph_instantiated(result, phGraphExec, hGraph);
}

STREAMPOOL_HOOK CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream) {
  sp::count_call(Hook::cuGraphLaunch);
  sp::HookScope scope;
  if (sp::bypass(scope)) return sp::forward(real().cuGraphLaunch, hGraphExec, hStream);
  return caps::graph_launch(real().cuGraphLaunch, hGraphExec, hStream, false);
}

STREAMPOOL_HOOK CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream) {
  sp::count_call(Hook::cuGraphLaunch_ptsz);
  sp::HookScope scope;
  if (sp::bypass(scope)) return sp::forward(real().cuGraphLaunch_ptsz, hGraphExec, hStream);
  return caps::graph_launch(real().cuGraphLaunch_ptsz, hGraphExec, hStream, true);
}

STREAMPOOL_HOOK CUresult cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream) {
  sp::count_call(Hook::cuGraphUpload);
  sp::HookScope scope;
  if (sp::bypass(scope)) return sp::forward(real().cuGraphUpload, hGraphExec, hStream);
  return caps::graph_launch(real().cuGraphUpload, hGraphExec, hStream, false);
}

STREAMPOOL_HOOK CUresult cuGraphUpload_ptsz(CUgraphExec hGraphExec, CUstream hStream) {
  sp::count_call(Hook::cuGraphUpload_ptsz);
  sp::HookScope scope;
  if (sp::bypass(scope)) return sp::forward(real().cuGraphUpload_ptsz, hGraphExec, hStream);
  return caps::graph_launch(real().cuGraphUpload_ptsz, hGraphExec, hStream, true);
}

STREAMPOOL_HOOK CUresult cuGraphExecDestroy(CUgraphExec hGraphExec) {
  sp::count_call(Hook::cuGraphExecDestroy);
  sp::HookScope scope;
  if (sp::bypass(scope)) return sp::forward(real().cuGraphExecDestroy, hGraphExec);
  return caps::graph_exec_destroy(hGraphExec);
}

STREAMPOOL_HOOK CUresult cuDeviceGraphMemTrim(CUdevice device) {
  sp::count_call(Hook::cuDeviceGraphMemTrim);
  sp::HookScope scope;
  if (sp::bypass(scope)) return sp::forward(real().cuDeviceGraphMemTrim, device);
  return caps::graph_mem_trim(device);
}

STREAMPOOL_HOOK CUresult cuDeviceSetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void* value) {
  sp::count_call(Hook::cuDeviceSetGraphMemAttribute);
  sp::HookScope scope;
  if (sp::bypass(scope)) return sp::forward(real().cuDeviceSetGraphMemAttribute, device, attr, value);
  return caps::graph_mem_set_attribute(device, attr, value);
}
