// cuGetProcAddress and cuGetProcAddress_v2: the way into the driver for cudart 12/13 (static and
// dynamic), cuda.bindings and JAX, which never call exported cu* names directly.
//
// Routing (docs/ARCHITECTURE.md, "Interposition"): ask the REAL driver with the caller's exact symbol,
// cudaVersion and flags; keep its return code and symbolStatus; map the pointer it returned back to
// the exported, versioned name it is (cuMemAllocAsync at flags 2 is cuMemAllocAsync_ptsz,
// cuCtxSynchronize at 13000 may be cuCtxSynchronize_v2); if streampool hooks exactly that name,
// hand out streampool's definition of it, else the real pointer unchanged. Version and flags are
// never interpreted here: the real driver's choice of variant is the one we substitute for.
// The "" probe passes through (its pointer is null). STREAMPOOL_DISABLE=1 passes everything through.
//
// A hooked name the real driver does not export at all (CUDA_ERROR_NOT_FOUND: an older driver
// without cuMemGetMemPool, a driver without the pool family) is still streampool's to serve: the
// variant the caller's cudaVersion and flags mean is chosen from cudaTypedefs.h's versions
// (generated: hooked_versions.inc), and the answer is CUDA_SUCCESS with CU_GET_PROC_ADDRESS_SUCCESS.
#include <cuda.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "entry_points.hpp"
#include "export.hpp"
#include "log.hpp"
#include "real_library.hpp"
#include "reentry_guard.hpp"
#include "settings.hpp"

// cuda.h maps cuGetProcAddress to cuGetProcAddress_v2; the exported unversioned name keeps the
// CUDA 11.3 signature (no symbolStatus), which is what programs binding it by name expect.
#undef cuGetProcAddress

STREAMPOOL_EXPORT CUresult CUDAAPI cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion,
                                                    cuuint64_t flags);

namespace streampool::interpose {
namespace {

using GetProcAddressV1 = CUresult(CUDAAPI*)(const char*, void**, int, cuuint64_t);
using GetProcAddressV2 = CUresult(CUDAAPI*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);

struct NamedAddress {
  void* address;
  int index;  // into driver_symbol_names()
};

// Every exported driver name's address in the real library, sorted by address; built on first use
// and never freed. Aliases (several names at one address) appear as several entries.
const std::vector<NamedAddress>& real_addresses() {
  static const std::vector<NamedAddress>* const table = [] {
    auto* addresses = new std::vector<NamedAddress>;
    const auto names = driver_symbol_names();
    addresses->reserve(names.size());
    for (std::size_t index = 0; index < names.size(); ++index) {
      if (void* address = driver::real_symbol(names[index])) {
        addresses->push_back(NamedAddress{address, static_cast<int>(index)});
      }
    }
    std::sort(addresses->begin(), addresses->end(),
              [](const NamedAddress& left, const NamedAddress& right) { return left.address < right.address; });
    return addresses;
  }();
  return *table;
}

bool is_per_thread_name(std::string_view name) {
  return name.ends_with("_ptsz") || name.ends_with("_ptds");
}

// The exported name the real driver's `address` is. When the real library exports one function
// under several names, prefer the one whose per-thread-ness matches the query's flags, then one
// that extends the queried symbol.
int exported_name_of(void* address, std::string_view symbol, cuuint64_t flags) {
  const auto& addresses = real_addresses();
  const auto [first, last] = std::equal_range(
      addresses.begin(), addresses.end(), NamedAddress{address, kNoSymbol},
      [](const NamedAddress& left, const NamedAddress& right) { return left.address < right.address; });
  const bool wants_per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  int best_index = kNoSymbol;
  int best_score = -1;
  for (auto entry = first; entry != last; ++entry) {
    const std::string_view name = driver_symbol_names()[static_cast<std::size_t>(entry->index)];
    const int score = (is_per_thread_name(name) == wants_per_thread ? 2 : 0) + (name.starts_with(symbol) ? 1 : 0);
    if (score > best_score) {
      best_score = score;
      best_index = entry->index;
    }
  }
  return best_index;
}

void* own_get_proc_address(int cuda_version) {
  return cuda_version >= 12000 ? reinterpret_cast<void*>(&cuGetProcAddress_v2)
                               : reinterpret_cast<void*>(&cuGetProcAddress);
}

// Replaces the real pointer in *pfn by streampool's definition of the same variant, if hooked.
void substitute_hooked(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags) {
  if (symbol == nullptr || symbol[0] == '\0' || pfn == nullptr || *pfn == nullptr) return;
  const int index = exported_name_of(*pfn, symbol, flags);
  if (index == kNoSymbol) {
    // A pointer the real library does not export under any known name: nothing of ours to offer,
    // except our own cuGetProcAddress, which must stay the way in for everything the caller asks later.
    if (std::strcmp(symbol, "cuGetProcAddress") == 0) *pfn = own_get_proc_address(cuda_version);
    STREAMPOOL_LOG_DEBUG("cuGetProcAddress(%s, %d, %llu): real pointer %p has no exported name", symbol,
                         cuda_version, static_cast<unsigned long long>(flags), *pfn);
    return;
  }
  if (void* ours = hooked_definition(index)) {
    STREAMPOOL_LOG_DEBUG("cuGetProcAddress(%s, %d, %llu) -> streampool's %s", symbol, cuda_version,
                         static_cast<unsigned long long>(flags), driver_symbol_names()[static_cast<std::size_t>(index)]);
    *pfn = ours;
  }
}

struct HookedVersion {
  const char* name;
  int version;
  const char* symbol;
};

constexpr HookedVersion kHookedVersions[] = {
#include "hooked_versions.inc"
};

// streampool's definition of the variant (symbol, cuda_version, flags) means, by the versions of
// cudaTypedefs.h; nullptr when that variant is not hooked or is newer than cuda_version allows.
void* hooked_variant(std::string_view symbol, int cuda_version, cuuint64_t flags) {
  const HookedVersion* chosen = nullptr;
  for (const HookedVersion& entry : kHookedVersions) {
    if (symbol != entry.name || entry.version > cuda_version) continue;
    if (chosen == nullptr || entry.version > chosen->version) chosen = &entry;
  }
  if (chosen == nullptr) return nullptr;
  const std::string base = chosen->symbol;
  if ((flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0) {
    for (const char* suffix : {"_ptsz", "_ptds"}) {
      const int index = symbol_index(base + suffix);
      if (index != kNoSymbol) return hooked_definition(index);
    }
  }
  return hooked_definition(symbol_index(base));
}

// The real driver does not know `symbol`: serve it if it is one of ours.
CUresult serve_missing(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags,
                       CUdriverProcAddressQueryResult* status, CUresult real_result) {
  if (symbol == nullptr || pfn == nullptr) return real_result;
  void* ours = hooked_variant(symbol, cuda_version, flags);
  if (ours == nullptr) return real_result;
  STREAMPOOL_LOG_DEBUG("cuGetProcAddress(%s, %d, %llu): the real driver lacks it, streampool serves it", symbol,
                       cuda_version, static_cast<unsigned long long>(flags));
  *pfn = ours;
  if (status != nullptr) *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}

CUresult no_real_entry_point(void** pfn, CUdriverProcAddressQueryResult* status) {
  if (pfn != nullptr) *pfn = nullptr;
  if (status != nullptr) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return driver::real_library() == nullptr ? CUDA_ERROR_NO_DEVICE : CUDA_ERROR_NOT_FOUND;
}

// Asks the real driver, through whichever of its two entry points exists (the caller's own first).
CUresult ask_real_driver(bool caller_uses_v2, const char* symbol, void** pfn, int cuda_version, cuuint64_t flags,
                         CUdriverProcAddressQueryResult* status) {
  auto* real_v2 = reinterpret_cast<GetProcAddressV2>(driver::real_symbol("cuGetProcAddress_v2"));
  auto* real_v1 = reinterpret_cast<GetProcAddressV1>(driver::real_symbol("cuGetProcAddress"));
  if (real_v2 != nullptr && (caller_uses_v2 || real_v1 == nullptr)) {
    return real_v2(symbol, pfn, cuda_version, flags, status);
  }
  if (real_v1 != nullptr) {
    const CUresult result = real_v1(symbol, pfn, cuda_version, flags);
    if (status != nullptr) {
      *status = result == CUDA_SUCCESS ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    }
    return result;
  }
  return no_real_entry_point(pfn, status);
}

CUresult get_proc_address(bool caller_uses_v2, const char* symbol, void** pfn, int cuda_version, cuuint64_t flags,
                          CUdriverProcAddressQueryResult* status) noexcept {
  try {
    const ReentryGuard guard;
    const CUresult result = ask_real_driver(caller_uses_v2, symbol, pfn, cuda_version, flags, status);
    if (guard.nested() || driver::passthrough_requested()) return result;
    if (result == CUDA_ERROR_NOT_FOUND && driver::real_library() != nullptr) {
      return serve_missing(symbol, pfn, cuda_version, flags, status, result);
    }
    substitute_hooked(symbol, pfn, cuda_version, flags);
    return result;
  } catch (...) {
    return CUDA_ERROR_OUT_OF_MEMORY;  // the only thing that can throw here is the address table
  }
}

}  // namespace
}  // namespace streampool::interpose

STREAMPOOL_EXPORT CUresult CUDAAPI cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion,
                                                    cuuint64_t flags) {
  return streampool::interpose::get_proc_address(false, symbol, pfn, cudaVersion, flags, nullptr);
}

STREAMPOOL_EXPORT CUresult CUDAAPI cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion,
                                                       cuuint64_t flags, CUdriverProcAddressQueryResult* symbolStatus) {
  return streampool::interpose::get_proc_address(true, symbol, pfn, cudaVersion, flags, symbolStatus);
}
