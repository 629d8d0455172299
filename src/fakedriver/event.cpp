#include "event.hpp"

#include <shared_mutex>
#include <unordered_map>

namespace fake {
namespace {

struct EventRegistry {
  std::shared_mutex mutex;
  std::unordered_map<CUevent, std::shared_ptr<Event>> live;
};

EventRegistry& events() {
  static auto* registry = new EventRegistry();  // never destroyed
  return *registry;
}

}  // namespace

CUevent register_event(std::shared_ptr<Event> event) {
  auto handle = reinterpret_cast<CUevent>(event.get());
  auto& registry = events();
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

bool unregister_event(CUevent handle) {
  auto& registry = events();
  std::unique_lock lock(registry.mutex);
  return registry.live.erase(handle) != 0;
}

}  // namespace fake
