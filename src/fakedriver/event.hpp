// Fake events. Recording an event submits an operation that stamps the time it ran; the event then
// refers to that (stream, ticket). Re-recording replaces the reference, which re-arms the event.
// A never-recorded event counts as complete, and waiting for it is a no-op, as in CUDA.
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

class Event {
 public:
  explicit Event(unsigned flags) : flags_(flags) {}
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
  const unsigned flags_;
  std::mutex mutex_;
  std::shared_ptr<EventMark> mark_;
};

CUevent register_event(std::shared_ptr<Event> event);
std::shared_ptr<Event> find_event(CUevent handle);
bool unregister_event(CUevent handle);

}  // namespace fake
