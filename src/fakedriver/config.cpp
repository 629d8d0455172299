#include "config.hpp"

#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>

namespace fake {

std::optional<std::uint64_t> parse_byte_size(std::string_view text) {
  std::uint64_t number = 0;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  auto [rest, error] = std::from_chars(first, last, number);
  if (error != std::errc() || rest == first) return std::nullopt;
  std::string_view suffix(rest, static_cast<std::size_t>(last - rest));
  if (suffix.size() > 1 && (suffix.back() == 'B' || suffix.back() == 'b')) suffix.remove_suffix(1);
  unsigned shift = 0;
  if (suffix.empty()) {
    shift = 0;
  } else if (suffix.size() == 1) {
    switch (suffix.front()) {
      case 'k': case 'K': shift = 10; break;
      case 'm': case 'M': shift = 20; break;
      case 'g': case 'G': shift = 30; break;
      case 't': case 'T': shift = 40; break;
      default: return std::nullopt;
    }
  } else {
    return std::nullopt;
  }
  if (shift != 0 && number > (~std::uint64_t{0} >> shift)) return std::nullopt;
  return number << shift;
}

namespace {

// One line on stderr for a setting that makes no sense, as streampool says of its own settings;
// the value is cut at 64 characters and nothing is allocated for it.
void warn_bad_setting(const char* name, const char* value, const char* expected, const char* instead) {
  char line[256];
  const int length = std::snprintf(line, sizeof line, "streampool: warn: bad %s value '%.64s' (expected %s): %s\n",
                                   name, value, expected, instead);
  if (length <= 0) return;
  const std::size_t size = static_cast<std::size_t>(length) < sizeof line ? static_cast<std::size_t>(length) : sizeof line - 1;
  const ssize_t ignored = ::write(STDERR_FILENO, line, size);
  (void)ignored;
}

}  // namespace

Config read_config_from_environment() {
  Config config;
  if (const char* devices = std::getenv("STREAMPOOL_FAKE_DEVICES"); devices != nullptr && devices[0] != '\0') {
    std::string_view text(devices);
    int count = 0;
    auto [rest, error] = std::from_chars(text.data(), text.data() + text.size(), count);
    if (error == std::errc() && rest == text.data() + text.size() && count >= 0 && count <= kMaxDevices) {
      config.device_count = count;
    } else {
      static_assert(kMaxDevices == 64, "the warning names the largest count");
      warn_bad_setting("STREAMPOOL_FAKE_DEVICES", devices, "a number of devices from 0 to 64", "1 device");
    }
  }
  if (const char* memory = std::getenv("STREAMPOOL_FAKE_MEMORY"); memory != nullptr && memory[0] != '\0') {
    if (auto bytes = parse_byte_size(memory); bytes && *bytes > 0) {
      config.memory_per_device = *bytes;
    } else {
      warn_bad_setting("STREAMPOOL_FAKE_MEMORY", memory, "bytes per device, more than 0, with an optional K, M, G or T suffix",
                       "16G per device");
    }
  }
  if (const char* reuse = std::getenv("STREAMPOOL_FAKE_REUSE_CONTEXTS"); reuse != nullptr && reuse[0] != '\0') {
    const std::string_view text(reuse);
    if (text == "1" || text == "0") {
      config.reuse_context_handles = text == "1";
    } else {
      warn_bad_setting("STREAMPOOL_FAKE_REUSE_CONTEXTS", reuse, "0 or 1", "handles not reused");
    }
  }
  return config;
}

}  // namespace fake
