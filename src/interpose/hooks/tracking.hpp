// What the ordering and lifetime hooks share: the engine's keys for events, host
// synchronisation under a ticket, the ticket of a context, and the end of a context.
#pragma once

#include <vector>

#include "driver/cuda_compat.hpp"
#include "process_state.hpp"

namespace streampool::interpose {

inline core::EventKey event_key(CUevent event) noexcept { return reinterpret_cast<core::EventKey>(event); }

// The event may be recorded where streampool does not see it: it proves nothing from now on.
// Best effort: when even that fails (out of memory), the event's old tracking stays.
void untrack_event(CUevent event) noexcept;

CUcontext current_context() noexcept;

// The ticket covering what a synchronize of `context` waits for: the streams of that context (the
// Ordering's stream group of a stream is its context), and nothing of any other context.
core::SyncTicket ticket_for_context(CUcontext context, bool releases);

// The host synchronisations and queries: a ticket taken before the real call (it snapshots what
// the call will have waited for), committed only when the call returned CUDA_SUCCESS. When the
// engine cannot take the ticket (it threw), the call still happens, untracked.
template <class TakeTicket, class RealCall>
CUresult call_under_ticket(TakeTicket take_ticket, RealCall real_call) noexcept {
  core::SyncTicket ticket;
  try {
    ticket = take_ticket();
  } catch (...) {
    return real_call();
  }
  CUresult result = real_call();
  if (result != CUDA_SUCCESS) return result;
  try {
    engine().commit(ticket);
  } catch (...) {
    // The completion is not recorded: frees stay pending longer, nothing is reused early.
  }
  return result;
}

}  // namespace streampool::interpose
