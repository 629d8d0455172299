// See log.hpp. Reading the environment is racy only against a concurrent setenv, which the
// program would have to do itself; every thread that races here computes the same value.
#include "log.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace streampool::log {

namespace detail {
std::atomic<int> threshold{kUnread};

namespace {
int parse_level(const char* text) noexcept {
  if (text == nullptr || *text == '\0') return static_cast<int>(Level::off);
  if (text[0] >= '0' && text[0] <= '4' && text[1] == '\0') return text[0] - '0';
  struct Named {
    const char* name;
    Level level;
  };
  static constexpr Named kNames[] = {{"off", Level::off},   {"error", Level::error},
                                     {"warn", Level::warn}, {"warning", Level::warn},
                                     {"info", Level::info}, {"debug", Level::debug}};
  for (const Named& named : kNames) {
    if (std::strcmp(text, named.name) == 0) return static_cast<int>(named.level);
  }
  // Asked for something we do not understand: say so, and log errors rather than stay silent.
  char line[256];
  const int length = std::snprintf(line, sizeof line,
                                   "streampool: warn: unknown STREAMPOOL_LOG value '%.64s' (expected off, error, warn, "
                                   "info, debug or 0-4): logging errors only\n",
                                   text);
  if (length > 0) {
    const ssize_t ignored = ::write(STDERR_FILENO, line, static_cast<std::size_t>(length) < sizeof line
                                                             ? static_cast<std::size_t>(length)
                                                             : sizeof line - 1);
    (void)ignored;
  }
  return static_cast<int>(Level::error);
}
}  // namespace

int read_threshold() noexcept {
  const int level = parse_level(std::getenv("STREAMPOOL_LOG"));
  threshold.store(level, std::memory_order_relaxed);
  return level;
}
}  // namespace detail

namespace {
const char* level_name(Level level) noexcept {
  switch (level) {
    case Level::error: return "error";
    case Level::warn: return "warn";
    case Level::info: return "info";
    case Level::debug: return "debug";
    case Level::off: break;
  }
  return "?";
}
}  // namespace

// Formats and writes one line (format checked like printf's by the callers' attributes).
void write_line(Level level, const char* format, std::va_list args) noexcept __attribute__((format(printf, 2, 0)));

void write(Level level, const char* format, ...) noexcept {
  if (!enabled(level)) return;
  std::va_list args;
  va_start(args, format);
  write_line(level, format, args);
  va_end(args);
}

void notice(Level level, const char* format, ...) noexcept {
  const char* setting = std::getenv("STREAMPOOL_LOG");
  if (setting != nullptr && (std::strcmp(setting, "off") == 0 || std::strcmp(setting, "0") == 0)) return;
  std::va_list args;
  va_start(args, format);
  write_line(level, format, args);
  va_end(args);
}

void write_line(Level level, const char* format, std::va_list args) noexcept {
  const int saved_errno = errno;  // logging must not disturb the caller's errno
  char line[1024];
  int used = std::snprintf(line, sizeof line, "streampool: %s: ", level_name(level));
  if (used < 0) used = 0;
  const int body = std::vsnprintf(line + used, sizeof line - static_cast<std::size_t>(used), format, args);
  std::size_t length = static_cast<std::size_t>(used) + (body > 0 ? static_cast<std::size_t>(body) : 0U);
  if (length > sizeof line - 2) length = sizeof line - 2;
  line[length++] = '\n';
  const char* cursor = line;
  while (length > 0) {
    const ssize_t written = ::write(STDERR_FILENO, cursor, length);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) break;
    cursor += written;
    length -= static_cast<std::size_t>(written);
  }
  errno = saved_errno;
}

void reload_for_tests() noexcept { detail::read_threshold(); }

}  // namespace streampool::log
