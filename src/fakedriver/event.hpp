// Fake events. Recording an event submits an operation that stamps the time it ran; the event then
// refers to that (stream, ticket). Re-recording replaces the reference, which re-arms the event.
// A never-recorded event counts as complete, and waiting for it is a no-op, as in CUDA. An event
// belongs to the context current at its creation and can only be recorded on that context's streams.
#pragma once

#include <cuda.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>

#include "stream.hpp"

namespace fake {

struct EventMark {
  std::shared_ptr<Stream> stream;
  std::uint64_t ticket = 0;
  std::chrono::steady_clock::time_point reached_at;  // written by the stream's worker
};

class Context;

class Event {
 public:
  Event(Context* owner, unsigned flags) : owner_(owner), flags_(flags) {}
  Context* context() const { return owner_; }
  unsigned flags() const { return flags_; }
  std::shared_ptr<EventMark> mark() {
    std::lock_guard lock(mutex_);
    return mark_;
  }
  void set_mark(std::shared_ptr<EventMark> mark) {
    std::lock_guard lock(mutex_);
    mark_ = std::move(mark);
  }

 private:
  Context* const owner_;
  const unsigned flags_;
  std::mutex mutex_;
  std::shared_ptr<EventMark> mark_;
};

CUevent register_event(std::shared_ptr<Event> event);
std::shared_ptr<Event> find_event(CUevent handle);
bool unregister_event(CUevent handle);
// A destroyed context's events go with it, their handles given back for reuse (only where contexts
// are recycled, STREAMPOOL_FAKE_REUSE_CONTEXTS=1: config.hpp).
void unregister_events_of(const Context* context);

// Fork support (driver.cpp's pthread_atfork handlers): the event registry's locks are held across
// the fork, and fresh in the child.
void hold_events_for_fork();
void release_events_after_fork();
void reset_events_in_fork_child();

}  // namespace fake
