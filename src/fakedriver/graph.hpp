// Fake graphs: the minimum for programs that record events or run host code through a graph.
// A graph is a list of nodes (empty, host function, event record, event wait, and copies and memsets
// of linear memory as work that runs on the host) in the order they
// were added; since a node's dependencies must exist when it is added, that order is a valid
// topological order, and an instantiated graph runs its nodes in it, one after another, on the
// launch stream's worker (a chain: the fake does not run independent branches concurrently).
// Instantiation copies the nodes, so the graph can change or go away while its executable lives.
// Graphs made by stream capture hold the kernels launched on the capturing stream (other work on a
// capturing stream is not recorded). Kernel nodes run nothing: launching the graph adds their
// launches to the launch record, so tests see a graph replayed. Graph memory is allocated when its
// alloc node is added (its address is fixed for the graph's life, as CUDA's is); what the graph
// memory attributes report is accounted at launch (graph_memory.hpp). A child graph node owns a
// copy of its child graph (a graph of its own, destroyed with its parent); instantiation puts the
// child's nodes in its place.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace fake {

class Event;

enum class GraphNodeKind { empty, host, event_record, event_wait, kernel, mem_alloc, mem_free, work, child };

struct GraphNode {
  GraphNodeKind kind = GraphNodeKind::empty;
  CUhostFn host_function = nullptr;
  void* host_data = nullptr;
  std::shared_ptr<Event> event;  // record and wait nodes; kept alive by the node
  CUevent event_handle = nullptr;  // the handle `event` was named by (what the node's getter answers)
  CUfunction function = nullptr;  // kernel nodes
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  unsigned shared_bytes = 0;
  std::function<void()> work;    // work nodes (copies, memsets)
  CUDA_MEM_ALLOC_NODE_PARAMS alloc{};  // alloc nodes: as added, with the address (no access descriptors kept)
  CUdeviceptr freed = 0;               // free nodes: the address they free
  CUgraph child = nullptr;             // child graph nodes: the copy the node owns
  CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;  // what cuGraphNodeGetType answers
};

// A user object (cuUserObjectCreate): its destructor runs, on the thread that drops the last
// reference, when the references of the program and of graphs are all gone.
struct UserObject {
  void* data = nullptr;
  CUhostFn destroy = nullptr;
  unsigned references = 0;  // guarded by the user-object registry's lock
};

struct Graph {
  std::uint64_t capture_id = 0;  // nonzero for a graph made by stream capture
  std::vector<std::unique_ptr<GraphNode>> nodes;
  std::vector<std::pair<CUuserObject, unsigned>> user_objects;  // references the graph owns
};

struct GraphExec {
  std::vector<GraphNode> nodes;
};

// Registries of live graphs and executable graphs (bad handles are errors, never crashes). Each
// call holds one process-wide lock for its whole duration; graph calls are rare.
CUgraph register_graph(std::unique_ptr<Graph> graph);
bool destroy_graph(CUgraph handle);
// Adds a node after `dependencies` (all nodes of `handle`); its handle, or nullptr for an unknown
// graph or dependency.
CUgraphNode add_graph_node(CUgraph handle, const CUgraphNode* dependencies, std::size_t count, GraphNode node);
// An event-record or event-wait node of `event` (api_graph.cpp; also the generic cuGraphAddNode's).
CUresult add_event_node(CUgraphNode* out, CUgraph graph, const CUgraphNode* dependencies, std::size_t count,
                        CUevent event, GraphNodeKind kind);
// A copy of a live graph, registered as a graph of its own (a child graph node's); nullptr if
// `handle` is not one.
CUgraph clone_graph(CUgraph handle);
// Instantiates a live graph, child graphs' nodes in their nodes' place; nullptr if `handle` is not one.
CUgraphExec instantiate_graph(CUgraph handle);
bool destroy_graph_exec(CUgraphExec handle);
// The handles of a live graph's nodes, in the order they were added; false for an unknown graph.
bool graph_node_handles(CUgraph handle, std::vector<CUgraphNode>* nodes);
// The type of a node of a live graph; false for an unknown node.
bool graph_node_type(CUgraphNode node, CUgraphNodeType* type);
// Runs `change` on a node of a live graph under the registry's lock; false for an unknown node or
// when `change` refuses (answers false).
bool change_graph_node(CUgraphNode node, const std::function<bool(GraphNode&)>& change);
// Runs `change` on a live graph's user-object references under the registry's lock; false for an
// unknown graph or when `change` refuses.
bool change_graph_user_objects(CUgraph handle,
                               const std::function<bool(std::vector<std::pair<CUuserObject, unsigned>>&)>& change);
// Drops `count` references of a live user object (running its destructor at the last); false for
// an unknown object or more references than it has (api_graph_edit.cpp).
bool release_user_object(CUuserObject object, unsigned count);
// A copy of an executable graph's nodes; false for an unknown handle.
bool graph_exec_nodes(CUgraphExec handle, std::vector<GraphNode>* nodes);

}  // namespace fake
