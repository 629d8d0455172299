#include "settings.hpp"

#include <atomic>
#include <cstdlib>

namespace streampool::driver {

namespace {
constexpr int kUnread = -1;
std::atomic<int> passthrough_state{kUnread};
}  // namespace

bool passthrough_requested() noexcept {
  int state = passthrough_state.load(std::memory_order_relaxed);
  if (state == kUnread) [[unlikely]] {
    const char* value = std::getenv("STREAMPOOL_DISABLE");
    state = (value != nullptr && value[0] != '\0' && !(value[0] == '0' && value[1] == '\0')) ? 1 : 0;
    passthrough_state.store(state, std::memory_order_relaxed);
  }
  return state == 1;
}

}  // namespace streampool::driver
