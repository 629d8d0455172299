// Delays inside entry points, for tests that need a race window to be wide and reliable: an entry
// point can be made to sleep before it acts (a call that has started but not yet changed anything)
// and after it acted (a call that has changed the driver's state but not yet returned).
//
// Set by name (the exact, versioned export name) from the environment, read on first use:
//   STREAMPOOL_FAKE_DELAY="cuEventRecord:2000,cuStreamWaitEvent:0:500"   (name:before_us[:after_us])
// or at run time through the exported streampool_fake_set_delay(name, before_us) and
// streampool_fake_set_delay_after(name, after_us); streampool_fake_clear_delays() removes all.
// An entry point without a delay pays two relaxed atomic loads.
#pragma once

#include <atomic>

namespace fake {

// The delays of one entry point name; lives as long as the process.
struct DelaySetting {
  std::atomic<unsigned> before_us{0};
  std::atomic<unsigned> after_us{0};
};

// The setting of `entry_point_name`, created (with the environment's delays) on first request.
DelaySetting& delay_setting(const char* entry_point_name);

void sleep_microseconds(unsigned microseconds);

// Sleeps the "before" delay when constructed and the "after" delay when destroyed: a local
// declared before an entry point's body is evaluated in its return statement brackets it.
class DelayScope {
 public:
  explicit DelayScope(const DelaySetting& setting) noexcept : setting_(setting) {
    if (unsigned before = setting_.before_us.load(std::memory_order_relaxed); before != 0) sleep_microseconds(before);
  }
  ~DelayScope() {
    if (unsigned after = setting_.after_us.load(std::memory_order_relaxed); after != 0) sleep_microseconds(after);
  }
  DelayScope(const DelayScope&) = delete;
  DelayScope& operator=(const DelayScope&) = delete;

 private:
  const DelaySetting& setting_;
};

}  // namespace fake

// Brackets the enclosing exported function's body with its delays, under its own (versioned) name.
#define FAKE_DELAY_SCOPE()                                                                  \
  static const ::fake::DelaySetting& fake_delay_setting_ = ::fake::delay_setting(__func__); \
  const ::fake::DelayScope fake_delay_scope_ { fake_delay_setting_ }
