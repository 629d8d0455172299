// Counts how deep the current thread is inside streampool's entry points. The real driver may
// call back into exported cu* names (which resolve to us); such nested calls must go straight to
// the real driver instead of being interposed a second time.
//
// The depth is touched twice on every hook call: initial-exec TLS (the library is preloaded, so its
// TLS lives in the static block) makes each touch one %fs-relative access, not a __tls_get_addr call.
#pragma once

namespace streampool::interpose {

class ReentryGuard {
 public:
  ReentryGuard() noexcept : nested_(depth_ > 0) { ++depth_; }
  ~ReentryGuard() { --depth_; }
  ReentryGuard(const ReentryGuard&) = delete;
  ReentryGuard& operator=(const ReentryGuard&) = delete;

  // True when this guard was created inside another streampool entry point on the same thread.
  [[nodiscard]] bool nested() const noexcept { return nested_; }
  // True inside any streampool entry point on this thread (a guard is alive).
  [[nodiscard]] static bool inside() noexcept { return depth_ > 0; }

 private:
  static inline constinit thread_local int depth_ __attribute__((tls_model("initial-exec"))) = 0;
  bool nested_;
};

}  // namespace streampool::interpose
