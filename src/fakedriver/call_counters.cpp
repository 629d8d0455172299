#include "call_counters.hpp"

#include <map>
#include <mutex>
#include <string>

namespace fake {
namespace {

struct CounterRegistry {
  std::mutex mutex;
  std::map<std::string, CallCounter*, std::less<>> by_name;
};

CounterRegistry& registry() {
  static auto* instance = new CounterRegistry();  // never destroyed: counted calls may come at exit
  return *instance;
}

}  // namespace

CallCounter::CallCounter(const char* entry_point_name) {
  auto& counters = registry();
  std::lock_guard lock(counters.mutex);
  counters.by_name[entry_point_name] = this;
}

}  // namespace fake

extern "C" __attribute__((visibility("default"))) unsigned long long streampool_fake_counter(
    const char* name) {
  if (name == nullptr) return 0;
  auto& counters = fake::registry();
  std::lock_guard lock(counters.mutex);
  auto found = counters.by_name.find(std::string_view(name));
  return found == counters.by_name.end() ? 0 : found->second->calls();
}

extern "C" __attribute__((visibility("default"))) void streampool_fake_reset_counters() {
  auto& counters = fake::registry();
  std::lock_guard lock(counters.mutex);
  for (auto& [name, counter] : counters.by_name) counter->reset();
}
