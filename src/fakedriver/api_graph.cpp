// Entry points: graphs built by hand (graph.hpp): create and destroy, empty, host, event-record
// and event-wait nodes, instantiation, upload and launch (kernel and memory nodes: api_graph_nodes.cpp).
// A launch records its kernel nodes' launches (launch_record.hpp) when it is called. A launch queues the nodes back to back on the
// stream (nothing else can come between them), each an operation of its own, so an event recorded
// by a node completes when the nodes before it ran, as on a GPU. On a capturing stream a launch
// runs nothing (CUDA would add a child graph node to the capture).
#include <chrono>

#include "api_guard.hpp"
#include "driver.hpp"
#include "event.hpp"
#include "graph.hpp"
#include "graph_memory.hpp"
#include "launch_record.hpp"
#include "stream_ops.hpp"

namespace fake {
namespace {

constexpr unsigned long long kInstantiateFlagMask =
    CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD |
    CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY;

CUresult graph_create(CUgraph* out, unsigned flags) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (out == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  *out = register_graph(std::make_unique<Graph>());
  return CUDA_SUCCESS;
}

CUresult graph_destroy(CUgraph graph) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  return destroy_graph(graph) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult add_node(CUgraphNode* out, CUgraph graph, const CUgraphNode* dependencies, size_t count, GraphNode node) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUgraphNode added = add_graph_node(graph, dependencies, count, std::move(node));
  if (added == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *out = added;
  return CUDA_SUCCESS;
}

CUresult add_host_node(CUgraphNode* out, CUgraph graph, const CUgraphNode* dependencies, size_t count,
                       const CUDA_HOST_NODE_PARAMS* params) {
  if (params == nullptr || params->fn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  GraphNode node;
  node.kind = GraphNodeKind::host;
  node.type = CU_GRAPH_NODE_TYPE_HOST;
  node.host_function = params->fn;
  node.host_data = params->userData;
  return add_node(out, graph, dependencies, count, std::move(node));
}

CUresult instantiate(CUgraphExec* out, CUgraph graph, unsigned long long flags) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (out == nullptr || (flags & ~kInstantiateFlagMask) != 0) return CUDA_ERROR_INVALID_VALUE;
  CUgraphExec exec = instantiate_graph(graph);
  if (exec == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *out = exec;
  return CUDA_SUCCESS;
}

CUresult instantiate_with_params(CUgraphExec* out, CUgraph graph, CUDA_GRAPH_INSTANTIATE_PARAMS* params) {
  if (params == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUresult status = instantiate(out, graph, params->flags);
  params->hErrNode_out = nullptr;
  params->result_out = status == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS : CUDA_GRAPH_INSTANTIATE_ERROR;
  return status;
}

CUresult exec_destroy(CUgraphExec exec) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  return destroy_graph_exec(exec) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult launch(CUgraphExec exec, CUstream handle, DefaultStream default_stream) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  std::vector<GraphNode> nodes;
  if (!graph_exec_nodes(exec, &nodes)) return CUDA_ERROR_INVALID_VALUE;
  std::shared_ptr<Stream> stream;
  if (CUresult status = resolve_stream(handle, default_stream, stream); status != CUDA_SUCCESS) return status;
  if (capturing(stream)) return CUDA_SUCCESS;
  if (CUresult status = graph_memory_launch(nodes, stream->context(), true); status != CUDA_SUCCESS) return status;

  std::vector<Stream::Operation> operations;
  struct Recorded {
    std::shared_ptr<Event> event;
    std::shared_ptr<EventMark> mark;
    std::size_t operation = 0;
  };
  std::vector<Recorded> records;
  for (const GraphNode& node : nodes) {
    switch (node.kind) {
      case GraphNodeKind::empty:
      case GraphNodeKind::mem_alloc:  // allocated when the node was added, accounted above
      case GraphNodeKind::mem_free:   // graph memory stays with the graph
      case GraphNodeKind::child:      // its nodes are in its place (instantiate_graph)
        break;
      case GraphNodeKind::kernel:
        if (CUresult status = record_launch(node.function, node.grid, node.block, node.shared_bytes, handle);
            status != CUDA_SUCCESS) {
          return status;
        }
        break;
      case GraphNodeKind::host:
        operations.push_back({[fn = node.host_function, data = node.host_data] { fn(data); }, {}});
        break;
      case GraphNodeKind::work:
        operations.push_back({node.work, {}});
        break;
      case GraphNodeKind::event_record: {
        auto mark = std::make_shared<EventMark>();
        mark->stream = stream;
        records.push_back(Recorded{node.event, mark, operations.size()});
        operations.push_back({[mark_to_stamp = std::weak_ptr<EventMark>(mark)] {
                                if (auto stamped = mark_to_stamp.lock()) {
                                  stamped->reached_at = std::chrono::steady_clock::now();
                                }
                              },
                              {}});
        break;
      }
      case GraphNodeKind::event_wait: {
        // Waits for what the event captured when the graph was launched.
        auto mark = node.event->mark();
        if (mark && mark->stream != stream) operations.push_back({nullptr, {TicketWait{mark->stream, mark->ticket}}});
        break;
      }
    }
  }
  if (operations.empty()) return CUDA_SUCCESS;
  const std::uint64_t first = stream->context()->submit_all(stream, std::move(operations));
  for (Recorded& record : records) {
    record.mark->ticket = first + record.operation;
    record.event->set_mark(std::move(record.mark));
  }
  return CUDA_SUCCESS;
}

// Uploading prepares nothing in the fake but the graph memory reservation (a launch does all the
// work), and checks its handles.
CUresult upload(CUgraphExec exec, CUstream handle, DefaultStream default_stream) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  std::vector<GraphNode> nodes;
  if (!graph_exec_nodes(exec, &nodes)) return CUDA_ERROR_INVALID_VALUE;
  std::shared_ptr<Stream> stream;
  if (CUresult status = resolve_stream(handle, default_stream, stream); status != CUDA_SUCCESS) return status;
  return graph_memory_launch(nodes, stream->context(), false);
}

}  // namespace

CUresult add_event_node(CUgraphNode* out, CUgraph graph, const CUgraphNode* dependencies, size_t count, CUevent event,
                        GraphNodeKind kind) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  GraphNode node;
  node.kind = kind;
  node.type = kind == GraphNodeKind::event_record ? CU_GRAPH_NODE_TYPE_EVENT_RECORD : CU_GRAPH_NODE_TYPE_WAIT_EVENT;
  node.event = find_event(event);
  if (!node.event) return CUDA_ERROR_INVALID_HANDLE;
  node.event_handle = event;
  return add_node(out, graph, dependencies, count, std::move(node));
}

}  // namespace fake

using namespace fake;

// cuda.h maps cuGraphInstantiate to cuGraphInstantiateWithFlags; the library also exports the
// original two (error node and log buffer), which the fake answers as WithFlags(0).
#undef cuGraphInstantiate
#undef cuGraphLaunch
#undef cuGraphUpload
#undef cuGraphInstantiateWithParams
FAKE_EXPORT CUresult cuGraphInstantiate(CUgraphExec* phGraphExec, CUgraph hGraph, CUgraphNode* phErrorNode,
                                        char* logBuffer, size_t bufferSize);
FAKE_EXPORT CUresult cuGraphInstantiate_v2(CUgraphExec* phGraphExec, CUgraph hGraph, CUgraphNode* phErrorNode,
                                           char* logBuffer, size_t bufferSize);
FAKE_EXPORT CUresult cuGraphInstantiateWithParams(CUgraphExec* phGraphExec, CUgraph hGraph,
                                                  CUDA_GRAPH_INSTANTIATE_PARAMS* instantiateParams);
FAKE_EXPORT CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec* phGraphExec, CUgraph hGraph,
                                                       CUDA_GRAPH_INSTANTIATE_PARAMS* instantiateParams);
FAKE_EXPORT CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream);
FAKE_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream);
FAKE_EXPORT CUresult cuGraphUpload_ptsz(CUgraphExec hGraphExec, CUstream hStream);

namespace {

CUresult instantiate_legacy(CUgraphExec* out, CUgraph graph, CUgraphNode* error_node, char* log, size_t log_size) {
  if (error_node != nullptr) *error_node = nullptr;
  if (log != nullptr && log_size > 0) log[0] = '\0';
  return instantiate(out, graph, 0);
}

}  // namespace

FAKE_EXPORT CUresult cuGraphCreate(CUgraph* phGraph, unsigned int flags) { FAKE_ENTRY(graph_create(phGraph, flags)); }
FAKE_EXPORT CUresult cuGraphDestroy(CUgraph hGraph) { FAKE_ENTRY(graph_destroy(hGraph)); }
FAKE_EXPORT CUresult cuGraphAddEmptyNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                         size_t numDependencies) {
  FAKE_ENTRY(add_node(phGraphNode, hGraph, dependencies, numDependencies, GraphNode{}));
}
FAKE_EXPORT CUresult cuGraphAddHostNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                        size_t numDependencies, const CUDA_HOST_NODE_PARAMS* nodeParams) {
  FAKE_ENTRY(add_host_node(phGraphNode, hGraph, dependencies, numDependencies, nodeParams));
}
FAKE_EXPORT CUresult cuGraphAddEventRecordNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                               const CUgraphNode* dependencies, size_t numDependencies,
                                               CUevent event) {
  FAKE_ENTRY(add_event_node(phGraphNode, hGraph, dependencies, numDependencies, event, GraphNodeKind::event_record));
}
FAKE_EXPORT CUresult cuGraphAddEventWaitNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                             size_t numDependencies, CUevent event) {
  FAKE_ENTRY(add_event_node(phGraphNode, hGraph, dependencies, numDependencies, event, GraphNodeKind::event_wait));
}
FAKE_EXPORT CUresult cuGraphInstantiate(CUgraphExec* phGraphExec, CUgraph hGraph, CUgraphNode* phErrorNode,
                                        char* logBuffer, size_t bufferSize) {
  FAKE_ENTRY(instantiate_legacy(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize));
}
FAKE_EXPORT CUresult cuGraphInstantiate_v2(CUgraphExec* phGraphExec, CUgraph hGraph, CUgraphNode* phErrorNode,
                                           char* logBuffer, size_t bufferSize) {
  FAKE_ENTRY(instantiate_legacy(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize));
}
FAKE_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec* phGraphExec, CUgraph hGraph, unsigned long long flags) {
  FAKE_ENTRY(instantiate(phGraphExec, hGraph, flags));
}
FAKE_EXPORT CUresult cuGraphInstantiateWithParams(CUgraphExec* phGraphExec, CUgraph hGraph,
                                                  CUDA_GRAPH_INSTANTIATE_PARAMS* instantiateParams) {
  FAKE_ENTRY(instantiate_with_params(phGraphExec, hGraph, instantiateParams));
}
FAKE_EXPORT CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec* phGraphExec, CUgraph hGraph,
                                                       CUDA_GRAPH_INSTANTIATE_PARAMS* instantiateParams) {
  FAKE_ENTRY(instantiate_with_params(phGraphExec, hGraph, instantiateParams));
}
FAKE_EXPORT CUresult cuGraphExecDestroy(CUgraphExec hGraphExec) { FAKE_ENTRY(exec_destroy(hGraphExec)); }
FAKE_EXPORT CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream) {
  FAKE_ENTRY(launch(hGraphExec, hStream, DefaultStream::legacy));
}
FAKE_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream) {
  FAKE_ENTRY(launch(hGraphExec, hStream, DefaultStream::per_thread));
}
FAKE_EXPORT CUresult cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream) {
  FAKE_ENTRY(upload(hGraphExec, hStream, DefaultStream::legacy));
}
FAKE_EXPORT CUresult cuGraphUpload_ptsz(CUgraphExec hGraphExec, CUstream hStream) {
  FAKE_ENTRY(upload(hGraphExec, hStream, DefaultStream::per_thread));
}
