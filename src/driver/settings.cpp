#include "settings.hpp"

#include <cstdlib>
#include <cstring>

#include <initializer_list>

#include "log.hpp"

namespace streampool::driver::detail {

constexpr int kUnread = -1;
std::atomic<int> passthrough_state{kUnread};

namespace {
// Set: any value but "" and "0".
bool flag_set(const char* name) noexcept {
  const char* value = std::getenv(name);
  return value != nullptr && value[0] != '\0' && !(value[0] == '0' && value[1] == '\0');
}

// An on/off setting: 0 for unset, empty, 0/false/no/off; 1 for 1/true/yes/on; -1 for anything else.
int switch_value(const char* value) noexcept {
  if (value == nullptr || value[0] == '\0') return 0;
  for (const char* no : {"0", "false", "no", "off"}) {
    if (std::strcmp(value, no) == 0) return 0;
  }
  for (const char* yes : {"1", "true", "yes", "on"}) {
    if (std::strcmp(value, yes) == 0) return 1;
  }
  return -1;
}
}  // namespace

// STREAMPOOL_DISABLE: 1/true/yes/on disable, 0/false/no/off (and unset) do not; anything else
// disables too (as any value but "0" always did) and is warned about.
bool disable_requested() noexcept {
  const char* value = std::getenv("STREAMPOOL_DISABLE");
  const int on = switch_value(value);
  if (on >= 0) return on == 1;
  log::notice(log::Level::warn, "unknown STREAMPOOL_DISABLE value '%.64s' (expected 1 or 0): streampool is disabled",
              value);
  return true;
}

bool read_passthrough_setting() noexcept {
  const int state = disable_requested() ? 1 : 0;
  passthrough_state.store(state, std::memory_order_relaxed);
  return state == 1;
}

}  // namespace streampool::driver::detail

namespace streampool::driver {

bool strict_reuse_requested() noexcept { return detail::flag_set("STREAMPOOL_STRICT_REUSE"); }

namespace {
bool read_auto_release() noexcept {
  const char* value = std::getenv("STREAMPOOL_RELEASE");
  if (value == nullptr || value[0] == '\0' || std::strcmp(value, "threshold") == 0) return false;
  if (std::strcmp(value, "auto") == 0) return true;
  log::notice(log::Level::warn, "unknown STREAMPOOL_RELEASE value '%.64s' (expected auto or threshold): using threshold",
              value);
  return false;
}
}  // namespace

bool auto_release_requested() noexcept {
  static const bool requested = read_auto_release();  // read once: one warning however many ask
  return requested;
}

namespace {
// Off unless asked for in so many words: a value that is not clearly on or off must not change
// where the program's synchronous allocations come from.
bool read_serve_malloc() noexcept {
  const char* value = std::getenv("STREAMPOOL_SERVE_MALLOC");
  const int on = detail::switch_value(value);
  if (on >= 0) return on == 1;
  log::notice(log::Level::warn, "unknown STREAMPOOL_SERVE_MALLOC value '%.64s' (expected 1 or 0): cuMemAlloc is not served",
              value);
  return false;
}
}  // namespace

bool serve_malloc_requested() noexcept {
  static const bool requested = read_serve_malloc();  // read once: one warning however many ask
  return requested;
}

}  // namespace streampool::driver
