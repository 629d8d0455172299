#include "entry_points.hpp"

#include <algorithm>

namespace streampool::interpose {

std::span<const char* const> driver_symbol_names() noexcept { return {spi_symbol_names, spi_symbol_count}; }

int symbol_index(std::string_view name) noexcept {
  const auto names = driver_symbol_names();
  const auto found = std::lower_bound(names.begin(), names.end(), name,
                                      [](const char* entry, std::string_view wanted) { return entry < wanted; });
  if (found == names.end() || *found != name) return kNoSymbol;
  return static_cast<int>(found - names.begin());
}

void* hooked_definition(int index) noexcept {
  if (index < 0 || static_cast<unsigned>(index) >= spi_symbol_count) return nullptr;
  return reinterpret_cast<void*>(spi_hooked_functions[index]);
}

}  // namespace streampool::interpose
