#include "driver_table.hpp"

#include "real_library.hpp"

namespace streampool::driver {

namespace {

DriverTable* resolve_table() noexcept {
  auto* table = new DriverTable;  // never destroyed: hooks may run after static destructors
  table->have_driver = real_library() != nullptr;
#define STREAMPOOL_DRIVER_RESOLVE(name) \
  table->name = reinterpret_cast<decltype(table->name)>(real_symbol(#name));
  STREAMPOOL_DRIVER_ENTRIES(STREAMPOOL_DRIVER_RESOLVE)
#undef STREAMPOOL_DRIVER_RESOLVE
  return table;
}

}  // namespace

const DriverTable& real() noexcept {
  static const DriverTable* const table = resolve_table();
  return *table;
}

CUresult missing_entry_result() noexcept {
  return real().have_driver ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_NO_DEVICE;
}

}  // namespace streampool::driver
