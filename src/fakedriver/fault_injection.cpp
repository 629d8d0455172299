#include "fault_injection.hpp"

#include <charconv>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fake {

namespace detail {
std::atomic<int> pending_failures{-1};
}  // namespace detail

namespace {

struct ErrorName {
  int code;
  const char* name;
};

constexpr ErrorName kErrorNames[] = {
#include "error_names.inc"
};

struct Rule {
  std::string entry_point;
  unsigned long long first = 1;  // the first failing call, counted from 1
  unsigned long long count = 1;  // how many calls fail from there; 0: all of them
  CUresult error = CUDA_ERROR_UNKNOWN;
  unsigned long long calls_seen = 0;
  void (*action)(void*) = nullptr;  // set: the call runs this first, then as usual (never fails)
  void* argument = nullptr;
};

struct Failures {
  std::mutex mutex;
  bool environment_read = false;
  std::vector<Rule> rules;
  std::map<std::string, unsigned long long, std::less<>> injected;
};

Failures& failures() {
  static auto* instance = new Failures();  // never destroyed: calls may come at exit
  return *instance;
}

bool parse_number(std::string_view text, unsigned long long* value) {
  const auto [rest, error] = std::from_chars(text.data(), text.data() + text.size(), *value);
  return error == std::errc() && rest == text.data() + text.size();
}

bool parse_error(std::string_view text, CUresult* error) {
  unsigned long long number = 0;
  if (parse_number(text, &number)) {
    *error = static_cast<CUresult>(number);
    return true;
  }
  for (const ErrorName& entry : kErrorNames) {
    if (text == entry.name) {
      *error = static_cast<CUresult>(entry.code);
      return true;
    }
  }
  return false;
}

// "name:nth:error[:count]"; false (and the rule ignored) when it is not that.
bool parse_rule(std::string_view text, Rule* rule) {
  std::vector<std::string_view> fields;
  while (true) {
    const std::size_t colon = text.find(':');
    fields.push_back(text.substr(0, colon));
    if (colon == std::string_view::npos) break;
    text.remove_prefix(colon + 1);
  }
  if (fields.size() != 3 && fields.size() != 4) return false;
  rule->entry_point = std::string(fields[0]);
  if (rule->entry_point.empty() || !parse_number(fields[1], &rule->first) || rule->first == 0) return false;
  if (!parse_error(fields[2], &rule->error)) return false;
  return fields.size() == 3 || parse_number(fields[3], &rule->count);
}

void read_environment_locked(Failures& state) {
  if (state.environment_read) return;
  state.environment_read = true;
  const char* setting = std::getenv("STREAMPOOL_FAKE_FAIL");
  if (setting == nullptr) return;
  std::string_view text(setting);
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    Rule rule;
    if (parse_rule(text.substr(0, comma), &rule)) state.rules.push_back(std::move(rule));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
}

void publish_pending_locked(const Failures& state) {
  detail::pending_failures.store(static_cast<int>(state.rules.size()), std::memory_order_relaxed);
}

void add_rule(Rule rule) {
  Failures& state = failures();
  std::lock_guard lock(state.mutex);
  read_environment_locked(state);  // the environment's rules are not lost to a later test's
  state.rules.push_back(std::move(rule));
  publish_pending_locked(state);
}

}  // namespace

namespace detail {

CUresult injected_failure_slow(const char* entry_point) noexcept {
  try {
    Failures& state = failures();
    std::vector<std::pair<void (*)(void*), void*>> actions;  // run after the lock: they may call the fake
    CUresult result = CUDA_SUCCESS;
    {
      std::lock_guard lock(state.mutex);
      read_environment_locked(state);
      for (auto rule = state.rules.begin(); rule != state.rules.end();) {
        if (rule->entry_point != entry_point) {
          ++rule;
          continue;
        }
        const unsigned long long call = ++rule->calls_seen;
        if (call >= rule->first && rule->action != nullptr) {
          actions.emplace_back(rule->action, rule->argument);
        } else if (call >= rule->first && result == CUDA_SUCCESS) {
          result = rule->error;
        }
        const bool exhausted = rule->count != 0 && call >= rule->first + rule->count - 1;
        rule = exhausted ? state.rules.erase(rule) : rule + 1;
      }
      if (result != CUDA_SUCCESS) ++state.injected[entry_point];
      publish_pending_locked(state);
    }
    for (const auto& [action, argument] : actions) action(argument);
    return result;
  } catch (...) {
    return CUDA_SUCCESS;  // out of memory in the test hook: run the call as if nothing was set
  }
}

}  // namespace detail

}  // namespace fake

extern "C" __attribute__((visibility("default"))) void streampool_fake_fail_calls(const char* name,
                                                                                   unsigned long long nth,
                                                                                   unsigned long long count,
                                                                                   int error) {
  if (name == nullptr || nth == 0) return;
  try {
    fake::Rule rule;
    rule.entry_point = name;
    rule.first = nth;
    rule.count = count;
    rule.error = static_cast<CUresult>(error);
    fake::add_rule(std::move(rule));
  } catch (...) {
  }
}

extern "C" __attribute__((visibility("default"))) void streampool_fake_fail_call(const char* name,
                                                                                  unsigned long long nth,
                                                                                  int error) {
  streampool_fake_fail_calls(name, nth, 1, error);
}

extern "C" __attribute__((visibility("default"))) void streampool_fake_on_call(const char* name, unsigned long long nth,
                                                                              void (*action)(void*), void* argument) {
  if (name == nullptr || nth == 0 || action == nullptr) return;
  try {
    fake::Rule rule;
    rule.entry_point = name;
    rule.first = nth;
    rule.count = 1;
    rule.error = CUDA_SUCCESS;
    rule.action = action;
    rule.argument = argument;
    fake::add_rule(std::move(rule));
  } catch (...) {
  }
}

extern "C" __attribute__((visibility("default"))) void streampool_fake_clear_failures() {
  fake::Failures& state = fake::failures();
  std::lock_guard lock(state.mutex);
  fake::read_environment_locked(state);  // so that the environment's rules stay cleared
  state.rules.clear();
  state.injected.clear();
  fake::publish_pending_locked(state);
}

extern "C" __attribute__((visibility("default"))) unsigned long long streampool_fake_failures_injected(
    const char* name) {
  fake::Failures& state = fake::failures();
  std::lock_guard lock(state.mutex);
  if (name != nullptr) {
    auto found = state.injected.find(std::string_view(name));
    return found == state.injected.end() ? 0 : found->second;
  }
  unsigned long long total = 0;
  for (const auto& [entry_point, count] : state.injected) total += count;
  return total;
}
