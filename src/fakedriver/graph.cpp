#include "graph.hpp"

#include <algorithm>
#include <mutex>
#include <unordered_set>

namespace fake {
namespace {

struct GraphRegistry {
  std::mutex mutex;
  std::unordered_set<Graph*> graphs;
  std::unordered_set<GraphExec*> execs;
};

GraphRegistry& registry() {
  static auto* instance = new GraphRegistry();  // never destroyed
  return *instance;
}

Graph* live_graph_locked(GraphRegistry& graphs, CUgraph handle) {
  auto* graph = reinterpret_cast<Graph*>(handle);
  return graphs.graphs.contains(graph) ? graph : nullptr;
}

bool owns_node(const Graph& graph, CUgraphNode node) {
  return std::any_of(graph.nodes.begin(), graph.nodes.end(),
                     [node](const auto& owned) { return reinterpret_cast<CUgraphNode>(owned.get()) == node; });
}

// A copy of `graph` registered as a graph of its own; its child graphs are copied too, so that each
// graph owns its children alone.
Graph* clone_locked(GraphRegistry& graphs, const Graph& graph) {
  auto copy = std::make_unique<Graph>();
  for (const auto& node : graph.nodes) {
    auto copied = std::make_unique<GraphNode>(*node);
    if (copied->kind == GraphNodeKind::child) {
      Graph* child = live_graph_locked(graphs, copied->child);
      copied->child = child == nullptr ? nullptr : reinterpret_cast<CUgraph>(clone_locked(graphs, *child));
    }
    copy->nodes.push_back(std::move(copied));
  }
  Graph* raw = copy.release();
  graphs.graphs.insert(raw);
  return raw;
}

// The nodes an instantiation of `graph` runs: a child graph's in its node's place.
void flatten_locked(GraphRegistry& graphs, const Graph& graph, std::vector<GraphNode>& out) {
  for (const auto& node : graph.nodes) {
    if (node->kind != GraphNodeKind::child) {
      out.push_back(*node);
    } else if (Graph* child = live_graph_locked(graphs, node->child)) {
      flatten_locked(graphs, *child, out);
    }
  }
}

}  // namespace

CUgraph register_graph(std::unique_ptr<Graph> graph) {
  auto& graphs = registry();
  std::lock_guard lock(graphs.mutex);
  Graph* raw = graph.release();
  graphs.graphs.insert(raw);
  return reinterpret_cast<CUgraph>(raw);
}

bool destroy_graph(CUgraph handle) {
  auto& graphs = registry();
  std::vector<std::pair<CUuserObject, unsigned>> owned;
  std::vector<CUgraph> children;
  {
    std::lock_guard lock(graphs.mutex);
    Graph* graph = live_graph_locked(graphs, handle);
    if (graph == nullptr) return false;
    owned = std::move(graph->user_objects);
    for (const auto& node : graph->nodes) {
      if (node->kind == GraphNodeKind::child && node->child != nullptr) children.push_back(node->child);
    }
    graphs.graphs.erase(graph);
    delete graph;
  }
  // Outside the lock: a destructor may run.
  for (const auto& [object, count] : owned) release_user_object(object, count);
  for (CUgraph child : children) destroy_graph(child);
  return true;
}

CUgraph clone_graph(CUgraph handle) {
  auto& graphs = registry();
  std::lock_guard lock(graphs.mutex);
  Graph* graph = live_graph_locked(graphs, handle);
  return graph == nullptr ? nullptr : reinterpret_cast<CUgraph>(clone_locked(graphs, *graph));
}

bool change_graph_node(CUgraphNode node, const std::function<bool(GraphNode&)>& change) {
  auto& graphs = registry();
  std::lock_guard lock(graphs.mutex);
  for (Graph* graph : graphs.graphs) {
    if (owns_node(*graph, node)) return change(*reinterpret_cast<GraphNode*>(node));
  }
  return false;
}

bool change_graph_user_objects(CUgraph handle,
                               const std::function<bool(std::vector<std::pair<CUuserObject, unsigned>>&)>& change) {
  auto& graphs = registry();
  std::lock_guard lock(graphs.mutex);
  Graph* graph = live_graph_locked(graphs, handle);
  return graph != nullptr && change(graph->user_objects);
}

CUgraphNode add_graph_node(CUgraph handle, const CUgraphNode* dependencies, std::size_t count, GraphNode node) {
  auto& graphs = registry();
  std::lock_guard lock(graphs.mutex);
  Graph* graph = live_graph_locked(graphs, handle);
  if (graph == nullptr || (count != 0 && dependencies == nullptr)) return nullptr;
  for (std::size_t i = 0; i < count; ++i) {
    if (!owns_node(*graph, dependencies[i])) return nullptr;
  }
  graph->nodes.push_back(std::make_unique<GraphNode>(std::move(node)));
  return reinterpret_cast<CUgraphNode>(graph->nodes.back().get());
}

CUgraphExec instantiate_graph(CUgraph handle) {
  auto& graphs = registry();
  std::lock_guard lock(graphs.mutex);
  Graph* graph = live_graph_locked(graphs, handle);
  if (graph == nullptr) return nullptr;
  auto exec = std::make_unique<GraphExec>();
  flatten_locked(graphs, *graph, exec->nodes);
  GraphExec* raw = exec.release();
  graphs.execs.insert(raw);
  return reinterpret_cast<CUgraphExec>(raw);
}

bool destroy_graph_exec(CUgraphExec handle) {
  auto& graphs = registry();
  std::lock_guard lock(graphs.mutex);
  auto* exec = reinterpret_cast<GraphExec*>(handle);
  if (graphs.execs.erase(exec) == 0) return false;
  delete exec;
  return true;
}

bool graph_node_handles(CUgraph handle, std::vector<CUgraphNode>* nodes) {
  auto& graphs = registry();
  std::lock_guard lock(graphs.mutex);
  Graph* graph = live_graph_locked(graphs, handle);
  if (graph == nullptr) return false;
  nodes->clear();
  for (const auto& node : graph->nodes) nodes->push_back(reinterpret_cast<CUgraphNode>(node.get()));
  return true;
}

bool graph_node_type(CUgraphNode node, CUgraphNodeType* type) {
  auto& graphs = registry();
  std::lock_guard lock(graphs.mutex);
  for (Graph* graph : graphs.graphs) {
    if (owns_node(*graph, node)) {
      *type = reinterpret_cast<const GraphNode*>(node)->type;
      return true;
    }
  }
  return false;
}

bool graph_exec_nodes(CUgraphExec handle, std::vector<GraphNode>* nodes) {
  auto& graphs = registry();
  std::lock_guard lock(graphs.mutex);
  auto* exec = reinterpret_cast<GraphExec*>(handle);
  if (!graphs.execs.contains(exec)) return false;
  *nodes = exec->nodes;
  return true;
}

}  // namespace fake
