// streampool's diagnostics: one line per event on stderr, prefixed "streampool:", and nothing at all
// unless STREAMPOOL_LOG asks for it (error|warn|info|debug, or 0-4 where 0 is off).
//
// The library lives inside other people's processes, so logging must cost one relaxed atomic load
// when disabled and must not allocate or take stdio locks when enabled: a line is formatted into a
// stack buffer and written with a single write(2), so lines from several threads never interleave.
#pragma once

#include <atomic>

namespace streampool::log {

enum class Level : int { off = 0, error = 1, warn = 2, info = 3, debug = 4 };

namespace detail {
// -1 until STREAMPOOL_LOG has been read; afterwards the numeric Level.
inline constexpr int kUnread = -1;
extern std::atomic<int> threshold;
int read_threshold() noexcept;
}  // namespace detail

// True when a message at `level` would be written. Cheap: one relaxed load once initialised.
inline bool enabled(Level level) noexcept {
  int threshold = detail::threshold.load(std::memory_order_relaxed);
  if (threshold == detail::kUnread) [[unlikely]] {
    threshold = detail::read_threshold();
  }
  return static_cast<int>(level) <= threshold;
}

// printf-style; writes "streampool: <level>: <message>\n" if `level` is enabled. Lines longer than
// about 1 KiB are truncated. Never throws.
void write(Level level, const char* format, ...) noexcept __attribute__((format(printf, 2, 3)));

// For what a user must see even without STREAMPOOL_LOG (no driver to forward to, a setting that
// makes no sense): writes "streampool: <level>: <message>\n" unless STREAMPOOL_LOG is explicitly
// off ("off" or "0"). Never throws.
void notice(Level level, const char* format, ...) noexcept __attribute__((format(printf, 2, 3)));

// Re-reads STREAMPOOL_LOG (tests only: the library reads it once, on first use).
void reload_for_tests() noexcept;

}  // namespace streampool::log

// The macros skip argument evaluation when the level is disabled.
#define STREAMPOOL_LOG_AT(level, ...)                     \
  do {                                                    \
    if (::streampool::log::enabled(level)) {              \
      ::streampool::log::write(level, __VA_ARGS__);       \
    }                                                     \
  } while (false)
#define STREAMPOOL_LOG_ERROR(...) STREAMPOOL_LOG_AT(::streampool::log::Level::error, __VA_ARGS__)
#define STREAMPOOL_LOG_WARN(...) STREAMPOOL_LOG_AT(::streampool::log::Level::warn, __VA_ARGS__)
#define STREAMPOOL_LOG_INFO(...) STREAMPOOL_LOG_AT(::streampool::log::Level::info, __VA_ARGS__)
#define STREAMPOOL_LOG_DEBUG(...) STREAMPOOL_LOG_AT(::streampool::log::Level::debug, __VA_ARGS__)
