#include "event.hpp"

#include "handle_slots.hpp"

#include <memory>
#include <shared_mutex>
#include <unordered_map>

namespace fake {
namespace {

struct EventRegistry {
  std::shared_mutex mutex;
  std::unordered_map<CUevent, std::shared_ptr<Event>> live;
  HandleSlots handles;  // reused, most recently destroyed first
};

EventRegistry& events() {
  static auto* registry = new EventRegistry();  // never destroyed
  return *registry;
}

}  // namespace

CUevent register_event(std::shared_ptr<Event> event) {
  auto& registry = events();
  auto handle = static_cast<CUevent>(registry.handles.take());
  std::unique_lock lock(registry.mutex);
  registry.live.emplace(handle, std::move(event));
  return handle;
}

std::shared_ptr<Event> find_event(CUevent handle) {
  auto& registry = events();
  std::shared_lock lock(registry.mutex);
  auto found = registry.live.find(handle);
  return found == registry.live.end() ? nullptr : found->second;
}

void hold_events_for_fork() {
  auto& registry = events();
  registry.mutex.lock();
  registry.handles.hold_for_fork();  // in the order unregister_event takes them
}

void release_events_after_fork() {
  auto& registry = events();
  registry.handles.release_after_fork();
  registry.mutex.unlock();
}

void reset_events_in_fork_child() {
  auto& registry = events();
  std::construct_at(&registry.mutex);
  registry.handles.reset_in_fork_child();
}

bool unregister_event(CUevent handle) {
  auto& registry = events();
  std::unique_lock lock(registry.mutex);
  if (registry.live.erase(handle) == 0) return false;
  registry.handles.give_back(handle);
  return true;
}

void unregister_events_of(const Context* context) {
  auto& registry = events();
  std::unique_lock lock(registry.mutex);
  std::erase_if(registry.live, [&registry, context](const auto& entry) {
    if (entry.second->context() != context) return false;
    registry.handles.give_back(entry.first);
    return true;
  });
}

}  // namespace fake
