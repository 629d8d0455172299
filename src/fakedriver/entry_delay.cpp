#include "entry_delay.hpp"

#include <charconv>
#include <chrono>
#include <cstdlib>
#include <map>
#include <optional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace fake {
namespace {

struct DelayRegistry {
  std::mutex mutex;
  std::map<std::string, std::unique_ptr<DelaySetting>, std::less<>> by_name;

  DelaySetting& setting_locked(std::string_view name) {
    auto found = by_name.find(name);
    if (found == by_name.end()) found = by_name.emplace(std::string(name), std::make_unique<DelaySetting>()).first;
    return *found->second;
  }
};

std::optional<unsigned> parse_microseconds(std::string_view text) {
  unsigned value = 0;
  auto [rest, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || rest != text.data() + text.size()) return std::nullopt;
  return value;
}

// One "name:before[:after]" item of STREAMPOOL_FAKE_DELAY; malformed items are ignored.
void apply_item(DelayRegistry& registry, std::string_view item) {
  const std::size_t first_colon = item.find(':');
  if (first_colon == std::string_view::npos || first_colon == 0) return;
  const std::string_view name = item.substr(0, first_colon);
  std::string_view rest = item.substr(first_colon + 1);
  std::string_view after_text;
  if (const std::size_t second_colon = rest.find(':'); second_colon != std::string_view::npos) {
    after_text = rest.substr(second_colon + 1);
    rest = rest.substr(0, second_colon);
  }
  const auto before = parse_microseconds(rest);
  const auto after = after_text.empty() ? std::optional<unsigned>(0) : parse_microseconds(after_text);
  if (!before || !after) return;
  DelaySetting& setting = registry.setting_locked(name);
  setting.before_us.store(*before, std::memory_order_relaxed);
  setting.after_us.store(*after, std::memory_order_relaxed);
}

DelayRegistry& registry() {
  static auto* instance = [] {
    auto* created = new DelayRegistry();  // never destroyed: delayed calls may come at exit
    if (const char* text = std::getenv("STREAMPOOL_FAKE_DELAY"); text != nullptr) {
      std::string_view items(text);
      while (!items.empty()) {
        const std::size_t comma = items.find(',');
        apply_item(*created, items.substr(0, comma));
        items = comma == std::string_view::npos ? std::string_view{} : items.substr(comma + 1);
      }
    }
    return created;
  }();
  return *instance;
}

}  // namespace

DelaySetting& delay_setting(const char* entry_point_name) {
  auto& delays = registry();
  std::lock_guard lock(delays.mutex);
  return delays.setting_locked(entry_point_name);
}

void sleep_microseconds(unsigned microseconds) {
  std::this_thread::sleep_for(std::chrono::microseconds(microseconds));
}

}  // namespace fake

extern "C" __attribute__((visibility("default"))) void streampool_fake_set_delay(const char* name,
                                                                                 unsigned before_usec) {
  if (name == nullptr) return;
  fake::delay_setting(name).before_us.store(before_usec, std::memory_order_relaxed);
}

extern "C" __attribute__((visibility("default"))) void streampool_fake_set_delay_after(const char* name,
                                                                                       unsigned after_usec) {
  if (name == nullptr) return;
  fake::delay_setting(name).after_us.store(after_usec, std::memory_order_relaxed);
}

extern "C" __attribute__((visibility("default"))) void streampool_fake_clear_delays() {
  auto& delays = fake::registry();
  std::lock_guard lock(delays.mutex);
  for (auto& [name, setting] : delays.by_name) {
    setting->before_us.store(0, std::memory_order_relaxed);
    setting->after_us.store(0, std::memory_order_relaxed);
  }
}
