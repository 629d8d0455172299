#include "call_site.hpp"

#include <execinfo.h>

namespace streampool::insight {

[[gnu::noinline]] void capture_call_stack(CallStack* stack) noexcept {
  void* addresses[kMaxFrames + 1];
  const int captured = ::backtrace(addresses, static_cast<int>(kMaxFrames + 1));
  // Frame 0 lies in this function (where backtrace returns to); the caller's frame is next.
  unsigned depth = 0;
  for (int i = 1; i < captured && depth < kMaxFrames; ++i) {
    stack->frames[depth++] = reinterpret_cast<std::uintptr_t>(addresses[i]);
  }
  stack->depth = depth;
}

std::uint64_t hash_frames(const std::uintptr_t* frames, unsigned depth) noexcept {
  std::uint64_t hash = 14695981039346656037ULL;
  for (unsigned i = 0; i < depth; ++i) {
    std::uintptr_t frame = frames[i];
    for (unsigned byte = 0; byte < sizeof frame; ++byte) {
      hash ^= (frame >> (8 * byte)) & 0xffU;
      hash *= 1099511628211ULL;
    }
  }
  hash ^= depth;
  return hash == 0 ? 1 : hash;
}

}  // namespace streampool::insight
