// Handle values for streams and events. NVIDIA's driver hands a destroyed stream's or event's
// handle out again to a later create (its objects come from free lists), and code above the
// driver that keys state by handle must cope: so does the fake, deterministically. A handle is the
// address of a small slot that is never freed; a destroyed handle's slot goes on a LIFO free list,
// so the next create of that kind gets exactly the handle destroyed last.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

namespace fake {

class HandleSlots {
 public:
  // A handle: the one given back last, or a new one (16-byte aligned, never 0, 1 or 2).
  void* take();
  void give_back(void* handle);

  // Fork support (driver.cpp's pthread_atfork handlers): held across the fork, fresh in the child.
  void hold_for_fork() { mutex_.lock(); }
  void release_after_fork() { mutex_.unlock(); }
  void reset_in_fork_child() { std::construct_at(&mutex_); }

 private:
  std::mutex mutex_;
  std::vector<void*> free_;
};

}  // namespace fake
