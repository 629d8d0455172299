#include "handle_slots.hpp"

namespace fake {
namespace {

struct alignas(16) Slot {
  unsigned char bytes[16];
};

}  // namespace

void* HandleSlots::take() {
  {
    std::lock_guard lock(mutex_);
    if (!free_.empty()) {
      void* reused = free_.back();
      free_.pop_back();
      return reused;
    }
  }
  return new Slot{};  // never freed: a stale handle stays a unique, harmless address
}

void HandleSlots::give_back(void* handle) {
  std::lock_guard lock(mutex_);
  free_.push_back(handle);
}

}  // namespace fake
