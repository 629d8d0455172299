#include "config.hpp"

#include <charconv>
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

Config read_config_from_environment() {
  Config config;
  if (const char* devices = std::getenv("STREAMPOOL_FAKE_DEVICES"); devices != nullptr) {
    std::string_view text(devices);
    int count = 0;
    auto [rest, error] = std::from_chars(text.data(), text.data() + text.size(), count);
    if (error == std::errc() && rest == text.data() + text.size() && count >= 0 && count <= kMaxDevices) {
      config.device_count = count;
    }
  }
  if (const char* memory = std::getenv("STREAMPOOL_FAKE_MEMORY"); memory != nullptr) {
    if (auto bytes = parse_byte_size(memory); bytes && *bytes > 0) config.memory_per_device = *bytes;
  }
  return config;
}

}  // namespace fake
