#include "tracking.hpp"

namespace streampool::interpose {

void untrack_event(CUevent event) noexcept {
  if (event == nullptr) return;
  try {
    engine().event_untracked(event_key(event));
  } catch (...) {
  }
}

CUcontext current_context() noexcept {
  CUcontext context = nullptr;
  if (forward(driver::real().cuCtxGetCurrent, &context) != CUDA_SUCCESS) return nullptr;
  return context;
}

core::SyncTicket ticket_for_context(CUcontext context, bool releases) {
  if (context == nullptr) return core::SyncTicket{};  // the driver refuses the call: it proves nothing
  return engine().ticket_for_group(reinterpret_cast<std::uintptr_t>(context), releases);
}

}  // namespace streampool::interpose
