// Entry points: the events of a graph's event-record and event-wait nodes, read and changed, and
// user objects with the references graphs own (graph.hpp). A destructor runs on the thread that
// drops the last reference (NVIDIA's driver runs it later, on a thread of its own); an
// instantiated graph holds no references of its own here.
#include <mutex>
#include <unordered_set>

#include "api_guard.hpp"
#include "driver.hpp"
#include "event.hpp"
#include "graph.hpp"

namespace fake {
namespace {

struct UserObjects {
  std::mutex mutex;
  std::unordered_set<UserObject*> live;
};

UserObjects& user_objects() {
  static auto* instance = new UserObjects();  // never destroyed
  return *instance;
}

bool is_event_node(const GraphNode& node, GraphNodeKind kind) { return node.kind == kind; }

CUresult node_event(CUgraphNode node, CUevent* out, GraphNodeKind kind) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const bool found = change_graph_node(node, [&](GraphNode& owned) {
    if (!is_event_node(owned, kind)) return false;
    *out = owned.event_handle;
    return true;
  });
  return found ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult set_node_event(CUgraphNode node, CUevent event, GraphNodeKind kind) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  std::shared_ptr<Event> found_event = find_event(event);
  if (!found_event) return CUDA_ERROR_INVALID_HANDLE;
  const bool found = change_graph_node(node, [&](GraphNode& owned) {
    if (!is_event_node(owned, kind)) return false;
    owned.event = found_event;
    owned.event_handle = event;
    return true;
  });
  return found ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult create_user_object(CUuserObject* out, void* data, CUhostFn destroy, unsigned references, unsigned flags) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  // The driver takes only CU_USER_OBJECT_NO_DESTRUCTOR_SYNC for now.
  if (out == nullptr || destroy == nullptr || references == 0 || flags != CU_USER_OBJECT_NO_DESTRUCTOR_SYNC) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  auto* object = new UserObject{data, destroy, references};
  auto& registry = user_objects();
  std::lock_guard lock(registry.mutex);
  registry.live.insert(object);
  *out = reinterpret_cast<CUuserObject>(object);
  return CUDA_SUCCESS;
}

CUresult retain_user_object(CUuserObject handle, unsigned count) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (count == 0) return CUDA_ERROR_INVALID_VALUE;
  auto& registry = user_objects();
  std::lock_guard lock(registry.mutex);
  auto* object = reinterpret_cast<UserObject*>(handle);
  if (!registry.live.contains(object)) return CUDA_ERROR_INVALID_VALUE;
  object->references += count;
  return CUDA_SUCCESS;
}

CUresult user_object_release(CUuserObject object, unsigned count) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  return release_user_object(object, count) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

bool live_user_object(CUuserObject handle) {
  auto& registry = user_objects();
  std::lock_guard lock(registry.mutex);
  return registry.live.contains(reinterpret_cast<UserObject*>(handle));
}

// MOVE takes the caller's references over; otherwise the graph's are new ones.
CUresult graph_retain(CUgraph graph, CUuserObject object, unsigned count, unsigned flags) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (count == 0 || (flags & ~static_cast<unsigned>(CU_GRAPH_USER_OBJECT_MOVE)) != 0 || !live_user_object(object)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if ((flags & CU_GRAPH_USER_OBJECT_MOVE) == 0) {
    if (CUresult status = retain_user_object(object, count); status != CUDA_SUCCESS) return status;
  }
  const bool retained = change_graph_user_objects(graph, [&](auto& owned) {
    for (auto& [held, references] : owned) {
      if (held == object) {
        references += count;
        return true;
      }
    }
    owned.emplace_back(object, count);
    return true;
  });
  if (!retained) {
    if ((flags & CU_GRAPH_USER_OBJECT_MOVE) == 0) release_user_object(object, count);
    return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult graph_release(CUgraph graph, CUuserObject object, unsigned count) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (count == 0) return CUDA_ERROR_INVALID_VALUE;
  const bool released = change_graph_user_objects(graph, [&](auto& owned) {
    for (auto held = owned.begin(); held != owned.end(); ++held) {
      if (held->first != object || held->second < count) continue;
      held->second -= count;
      if (held->second == 0) owned.erase(held);
      return true;
    }
    return false;
  });
  if (!released) return CUDA_ERROR_INVALID_VALUE;
  release_user_object(object, count);
  return CUDA_SUCCESS;
}

}  // namespace

bool release_user_object(CUuserObject handle, unsigned count) {
  auto* object = reinterpret_cast<UserObject*>(handle);
  {
    auto& registry = user_objects();
    std::lock_guard lock(registry.mutex);
    if (!registry.live.contains(object) || count == 0 || object->references < count) return false;
    object->references -= count;
    if (object->references != 0) return true;
    registry.live.erase(object);
  }
  object->destroy(object->data);
  delete object;
  return true;
}

}  // namespace fake

using namespace fake;

FAKE_EXPORT CUresult cuGraphEventRecordNodeGetEvent(CUgraphNode hNode, CUevent* event_out) {
  FAKE_ENTRY(node_event(hNode, event_out, GraphNodeKind::event_record));
}
FAKE_EXPORT CUresult cuGraphEventRecordNodeSetEvent(CUgraphNode hNode, CUevent event) {
  FAKE_ENTRY(set_node_event(hNode, event, GraphNodeKind::event_record));
}
FAKE_EXPORT CUresult cuGraphEventWaitNodeGetEvent(CUgraphNode hNode, CUevent* event_out) {
  FAKE_ENTRY(node_event(hNode, event_out, GraphNodeKind::event_wait));
}
FAKE_EXPORT CUresult cuGraphEventWaitNodeSetEvent(CUgraphNode hNode, CUevent event) {
  FAKE_ENTRY(set_node_event(hNode, event, GraphNodeKind::event_wait));
}
FAKE_EXPORT CUresult cuUserObjectCreate(CUuserObject* object_out, void* ptr, CUhostFn destroy,
                                        unsigned int initialRefcount, unsigned int flags) {
  FAKE_ENTRY(create_user_object(object_out, ptr, destroy, initialRefcount, flags));
}
FAKE_EXPORT CUresult cuUserObjectRetain(CUuserObject object, unsigned int count) {
  FAKE_ENTRY(retain_user_object(object, count));
}
FAKE_EXPORT CUresult cuUserObjectRelease(CUuserObject object, unsigned int count) {
  FAKE_ENTRY(user_object_release(object, count));
}
FAKE_EXPORT CUresult cuGraphRetainUserObject(CUgraph graph, CUuserObject object, unsigned int count,
                                             unsigned int flags) {
  FAKE_ENTRY(graph_retain(graph, object, count, flags));
}
FAKE_EXPORT CUresult cuGraphReleaseUserObject(CUgraph graph, CUuserObject object, unsigned int count) {
  FAKE_ENTRY(graph_release(graph, object, count));
}
