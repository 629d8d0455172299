#include "settings.hpp"

#include <cstdlib>

namespace streampool::driver::detail {

constexpr int kUnread = -1;
std::atomic<int> passthrough_state{kUnread};

namespace {
// Set: any value but "" and "0".
bool flag_set(const char* name) noexcept {
  const char* value = std::getenv(name);
  return value != nullptr && value[0] != '\0' && !(value[0] == '0' && value[1] == '\0');
}
}  // namespace

bool read_passthrough_setting() noexcept {
  const int state = flag_set("STREAMPOOL_DISABLE") ? 1 : 0;
  passthrough_state.store(state, std::memory_order_relaxed);
  return state == 1;
}

}  // namespace streampool::driver::detail

namespace streampool::driver {

bool strict_reuse_requested() noexcept { return detail::flag_set("STREAMPOOL_STRICT_REUSE"); }

}  // namespace streampool::driver
