#include "format.hpp"

namespace streampool::trace {

std::string_view op_name(std::uint16_t op) noexcept {
  static constexpr std::string_view kNames[] = {
      "unknown",           "alloc",          "alloc_from_pool",   "free",
      "free_completed",    "pool_create",    "pool_destroy",      "pool_trim",
      "pool_set_attribute", "event_record",  "stream_wait_event", "stream_synchronize",
      "stream_query",      "event_synchronize", "event_query",    "context_synchronize",
      "stream_create",     "stream_destroy"};
  static_assert(sizeof kNames / sizeof kNames[0] == kLastOp + 1);
  return op <= kLastOp ? kNames[op] : kNames[0];
}

}  // namespace streampool::trace
