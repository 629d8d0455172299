// Events that may be recorded where streampool's record hooks do not see it. The tracking of such
// an event would keep describing an older record while the driver answers queries, synchronizes
// and waits about the newer one, so the event is marked untracked: it proves nothing until it is
// destroyed. Marked before the real call: from then on a query of it proves nothing, whichever
// way the call and the query interleave.
//   graph event-record nodes     cuGraphAddEventRecordNode, cuGraphEventRecordNodeSetEvent,
//                                cuGraphExecEventRecordNodeSetEvent, and the generic
//                                cuGraphAddNode(_v2), cuGraphNodeSetParams, cuGraphExecNodeSetParams
//                                with an event-record node (a launch of the graph records it)
//   launch attributes            cuLaunchKernelEx(_ptsz) with CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT or
//                                CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT
//   records of a whole context   cuCtxRecordEvent, cuGreenCtxRecordEvent
//   other processes              cuIpcGetEventHandle (the importer may record it), cuIpcOpenEventHandle
// Records on a capturing stream are handled by the record hooks themselves (tracking_hooks.cpp).
#include "call_counters.hpp"
#include "process_state.hpp"
#include "tracking.hpp"

namespace streampool::interpose {

namespace {

void untrack_recorded_by(CUevent event) noexcept { untrack_event(event); }

void untrack_recorded_by(const CUgraphNodeParams* params) noexcept {
  if (params != nullptr && params->type == CU_GRAPH_NODE_TYPE_EVENT_RECORD) untrack_event(params->eventRecord.event);
}

void untrack_recorded_by(const CUlaunchConfig* config) noexcept {
  if (config == nullptr || config->attrs == nullptr) return;
  for (unsigned index = 0; index < config->numAttrs; ++index) {
    const CUlaunchAttribute& attribute = config->attrs[index];
    if (attribute.id == CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT) untrack_event(attribute.value.launchCompletionEvent.event);
    if (attribute.id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT) untrack_event(attribute.value.programmaticEvent.event);
  }
}

// Counts the call, marks what `what` may record as untracked (not when bypassed: streampool's own
// calls never hand its markers to a graph), then makes the real call.
template <class Recorded, class RealCall>
CUresult untracking(Hook hook, const Recorded& what, RealCall real_call) noexcept {
  count_call(hook);
  HookScope scope;
  if (!bypass(scope)) untrack_recorded_by(what);
  return real_call();
}

}  // namespace

}  // namespace streampool::interpose

using streampool::interpose::Hook;
namespace sp = streampool::interpose;
using streampool::driver::real;

STREAMPOOL_HOOK CUresult cuGraphAddEventRecordNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                                   const CUgraphNode* dependencies, size_t numDependencies,
                                                   CUevent event) {
  return sp::untracking(Hook::cuGraphAddEventRecordNode, event, [=] {
    return sp::forward(real().cuGraphAddEventRecordNode, phGraphNode, hGraph, dependencies, numDependencies, event);
  });
}

STREAMPOOL_HOOK CUresult cuGraphEventRecordNodeSetEvent(CUgraphNode hNode, CUevent event) {
  return sp::untracking(Hook::cuGraphEventRecordNodeSetEvent, event,
                        [=] { return sp::forward(real().cuGraphEventRecordNodeSetEvent, hNode, event); });
}

STREAMPOOL_HOOK CUresult cuGraphExecEventRecordNodeSetEvent(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                            CUevent event) {
  return sp::untracking(Hook::cuGraphExecEventRecordNodeSetEvent, event, [=] {
    return sp::forward(real().cuGraphExecEventRecordNodeSetEvent, hGraphExec, hNode, event);
  });
}

STREAMPOOL_HOOK CUresult cuGraphAddNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                        size_t numDependencies, CUgraphNodeParams* nodeParams) {
  const CUgraphNodeParams* params = nodeParams;
  return sp::untracking(Hook::cuGraphAddNode, params, [=] {
    return sp::forward(real().cuGraphAddNode, phGraphNode, hGraph, dependencies, numDependencies, nodeParams);
  });
}

STREAMPOOL_HOOK CUresult cuGraphAddNode_v2(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                           const CUgraphEdgeData* dependencyData, size_t numDependencies,
                                           CUgraphNodeParams* nodeParams) {
  const CUgraphNodeParams* params = nodeParams;
  return sp::untracking(Hook::cuGraphAddNode_v2, params, [=] {
    return sp::forward(real().cuGraphAddNode_v2, phGraphNode, hGraph, dependencies, dependencyData, numDependencies,
                       nodeParams);
  });
}

STREAMPOOL_HOOK CUresult cuGraphNodeSetParams(CUgraphNode hNode, CUgraphNodeParams* nodeParams) {
  const CUgraphNodeParams* params = nodeParams;
  return sp::untracking(Hook::cuGraphNodeSetParams, params,
                        [=] { return sp::forward(real().cuGraphNodeSetParams, hNode, nodeParams); });
}

STREAMPOOL_HOOK CUresult cuGraphExecNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                  CUgraphNodeParams* nodeParams) {
  const CUgraphNodeParams* params = nodeParams;
  return sp::untracking(Hook::cuGraphExecNodeSetParams, params,
                        [=] { return sp::forward(real().cuGraphExecNodeSetParams, hGraphExec, hNode, nodeParams); });
}

STREAMPOOL_HOOK CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** kernelParams,
                                          void** extra) {
  return sp::untracking(Hook::cuLaunchKernelEx, config,
                        [=] { return sp::forward(real().cuLaunchKernelEx, config, f, kernelParams, extra); });
}

STREAMPOOL_HOOK CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f, void** kernelParams,
                                               void** extra) {
  return sp::untracking(Hook::cuLaunchKernelEx_ptsz, config,
                        [=] { return sp::forward(real().cuLaunchKernelEx_ptsz, config, f, kernelParams, extra); });
}

STREAMPOOL_HOOK CUresult cuCtxRecordEvent(CUcontext hCtx, CUevent hEvent) {
  return sp::untracking(Hook::cuCtxRecordEvent, hEvent,
                        [=] { return sp::forward(real().cuCtxRecordEvent, hCtx, hEvent); });
}

STREAMPOOL_HOOK CUresult cuGreenCtxRecordEvent(CUgreenCtx hCtx, CUevent hEvent) {
  return sp::untracking(Hook::cuGreenCtxRecordEvent, hEvent,
                        [=] { return sp::forward(real().cuGreenCtxRecordEvent, hCtx, hEvent); });
}

STREAMPOOL_HOOK CUresult cuIpcGetEventHandle(CUipcEventHandle* pHandle, CUevent event) {
  return sp::untracking(Hook::cuIpcGetEventHandle, event,
                        [=] { return sp::forward(real().cuIpcGetEventHandle, pHandle, event); });
}

STREAMPOOL_HOOK CUresult cuIpcOpenEventHandle(CUevent* phEvent, CUipcEventHandle handle) {
  sp::count_call(Hook::cuIpcOpenEventHandle);
  sp::HookScope scope;
  CUresult result = sp::forward(real().cuIpcOpenEventHandle, phEvent, handle);
  if (result == CUDA_SUCCESS && phEvent != nullptr && !sp::bypass(scope)) sp::untrack_event(*phEvent);
  return result;
}
