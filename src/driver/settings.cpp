#include "settings.hpp"

#include <cstdlib>

namespace streampool::driver::detail {

constexpr int kUnread = -1;
std::atomic<int> passthrough_state{kUnread};

bool read_passthrough_setting() noexcept {
  const char* value = std::getenv("STREAMPOOL_DISABLE");
  const int state = (value != nullptr && value[0] != '\0' && !(value[0] == '0' && value[1] == '\0')) ? 1 : 0;
  passthrough_state.store(state, std::memory_order_relaxed);
  return state == 1;
}

}  // namespace streampool::driver::detail
