#include "granule_table.hpp"

#include <iterator>

#include "driver_table.hpp"

namespace streampool::driver {

void GranuleTable::add(std::uintptr_t address, std::size_t bytes, CUmemGenericAllocationHandle handle) {
  std::lock_guard<std::mutex> lock(mutex_);
  entries_[address] = Entry{bytes, handle};
}

bool GranuleTable::take(std::uintptr_t address, CUmemGenericAllocationHandle* handle) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto entry = entries_.find(address);
  if (entry == entries_.end()) return false;
  *handle = entry->second.handle;
  entries_.erase(entry);
  return true;
}

CUresult GranuleTable::export_range(std::uintptr_t begin, std::uintptr_t end, const ShapeVisitor& shape,
                                    const MappingVisitor& each) const {
  const DriverTable& table = real();
  if (table.cuMemExportToShareableHandle == nullptr) return missing_entry_result();
  std::lock_guard<std::mutex> lock(mutex_);
  auto first = entries_.upper_bound(begin);
  if (first == entries_.begin()) return CUDA_ERROR_INVALID_VALUE;
  first = std::prev(first);
  if (first->first + first->second.bytes <= begin) return CUDA_ERROR_INVALID_VALUE;
  RangeShape range;
  range.first_base = first->first;
  std::uintptr_t covered = first->first;
  auto past = first;
  for (; past != entries_.end() && covered < end; ++past) {
    if (past->first != covered) return CUDA_ERROR_INVALID_VALUE;  // a gap: part of the range is not mapped
    covered += past->second.bytes;
    range.bytes += past->second.bytes;
    ++range.mappings;
  }
  if (covered < end) return CUDA_ERROR_INVALID_VALUE;
  if (!shape(range)) return CUDA_ERROR_INVALID_VALUE;
  for (auto entry = first; entry != past; ++entry) {
    int fd = -1;
    CUresult result = table.cuMemExportToShareableHandle(&fd, entry->second.handle,
                                                         static_cast<CUmemAllocationHandleType>(handle_type_), 0);
    if (result != CUDA_SUCCESS) return result;
    if (!each(entry->second.bytes, fd)) return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

}  // namespace streampool::driver
