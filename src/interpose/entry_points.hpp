// The generated tables (tools/gen_trampolines.py -> driver_entry_points.c): every driver entry
// point streampool exports, and for the hooked ones streampool's own definition.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

extern "C" {
__attribute__((visibility("hidden"))) extern const unsigned spi_symbol_count;
__attribute__((visibility("hidden"))) extern const char* const spi_symbol_names[];
__attribute__((visibility("hidden"))) extern void (*const spi_hooked_functions[])(void);
// One per name: where the trampoline jumps; starts at the name's resolver.
__attribute__((visibility("hidden"))) extern void* spi_forward_slots[];
}

namespace streampool::interpose {

inline constexpr int kNoSymbol = -1;

// All exported driver entry point names, sorted by strcmp.
std::span<const char* const> driver_symbol_names() noexcept;

// Index of `name` in driver_symbol_names(), or kNoSymbol.
int symbol_index(std::string_view name) noexcept;

// streampool's own definition of the name at `index` when that name is hooked, else nullptr.
void* hooked_definition(int index) noexcept;

}  // namespace streampool::interpose
