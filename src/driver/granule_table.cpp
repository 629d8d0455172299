#include "granule_table.hpp"

#include <unistd.h>

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

CUresult GranuleTable::export_range(std::uintptr_t begin, std::uintptr_t end, std::vector<Exported>* out,
                                    std::uintptr_t* first_base) const {
  out->clear();
  const DriverTable& table = real();
  if (table.cuMemExportToShareableHandle == nullptr) return missing_entry_result();
  auto close_all = [out] {
    for (const Exported& exported : *out) close(exported.fd);
    out->clear();
  };
  std::lock_guard<std::mutex> lock(mutex_);
  auto entry = entries_.upper_bound(begin);
  if (entry == entries_.begin()) return CUDA_ERROR_INVALID_VALUE;
  entry = std::prev(entry);
  if (entry->first + entry->second.bytes <= begin) return CUDA_ERROR_INVALID_VALUE;
  *first_base = entry->first;
  std::uintptr_t covered = entry->first;
  for (; entry != entries_.end() && covered < end; ++entry) {
    if (entry->first != covered) {
      close_all();
      return CUDA_ERROR_INVALID_VALUE;  // a gap: part of the range is not mapped
    }
    int fd = -1;
    CUresult result = table.cuMemExportToShareableHandle(&fd, entry->second.handle,
                                                         static_cast<CUmemAllocationHandleType>(handle_type_), 0);
    if (result != CUDA_SUCCESS) {
      close_all();
      return result;
    }
    try {
      out->push_back(Exported{entry->second.bytes, fd});
    } catch (...) {
      close(fd);
      close_all();
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    covered = entry->first + entry->second.bytes;
  }
  if (covered < end) {
    close_all();
    return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

}  // namespace streampool::driver
