// cuGetProcAddress / cuGetProcAddress_v2, resolved the way NVIDIA's driver does:
//  1. the versions of a name come from cudaTypedefs.h (generated table): pick the newest whose
//     introduction version is <= the caller's cudaVersion; none -> VERSION_NOT_SUFFICIENT;
//  2. with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, prefer that symbol's _ptsz/_ptds export;
//  3. names the table lacks are looked up as they are;
//  4. a symbol the fake does not export -> CUDA_ERROR_NOT_FOUND, SYMBOL_NOT_FOUND. The probe name ""
//     is not found either (a stub library would answer CUDA_ERROR_STUB_LIBRARY instead).
// Symbols are looked up in this library only (a dlopen handle of itself), never in the global
// scope, where an interposer of the same names may sit first.
#include <dlfcn.h>

#include <string>
#include <string_view>

#include "api_guard.hpp"

namespace fake {
namespace {

struct ProcVersion {
  const char* name;
  int version;
  const char* symbol;
};

constexpr ProcVersion kProcVersions[] = {
#include "proc_versions.inc"
};

void* own_library() {
  static void* const handle = [] {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&own_library), &info) == 0 || info.dli_fname == nullptr) return RTLD_DEFAULT;
    void* self = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    return self != nullptr ? self : RTLD_DEFAULT;
  }();
  return handle;
}

void* own_symbol(const std::string& symbol) {
  void* address = dlsym(own_library(), symbol.c_str());
  if (address == nullptr) return nullptr;
  // Only accept what this library itself defines (not a dependency's symbol of that name).
  Dl_info where{};
  Dl_info self{};
  if (dladdr(address, &where) == 0 || dladdr(reinterpret_cast<void*>(&own_library), &self) == 0) return nullptr;
  return where.dli_fbase == self.dli_fbase ? address : nullptr;
}

CUresult get_proc_address(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags,
                          CUdriverProcAddressQueryResult* status) {
  auto report = [&](CUdriverProcAddressQueryResult result) {
    if (status != nullptr) *status = result;
  };
  if (symbol == nullptr || pfn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  constexpr cuuint64_t kKnownFlags = CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  if ((flags & ~kKnownFlags) != 0) return CUDA_ERROR_INVALID_VALUE;
  *pfn = nullptr;
  const std::string_view name(symbol);
  if (name.empty() || name.substr(0, 2) != "cu") {
    report(CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    return CUDA_ERROR_NOT_FOUND;
  }

  bool name_has_versions = false;
  const ProcVersion* chosen = nullptr;
  for (const auto& entry : kProcVersions) {
    if (name != entry.name) continue;
    name_has_versions = true;
    if (entry.version <= cuda_version && (chosen == nullptr || entry.version > chosen->version)) chosen = &entry;
  }
  if (name_has_versions && chosen == nullptr) {
    report(CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    return CUDA_ERROR_NOT_FOUND;
  }
  const std::string base = chosen != nullptr ? chosen->symbol : std::string(name);

  void* address = nullptr;
  if ((flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0) {
    address = own_symbol(base + "_ptsz");
    if (address == nullptr) address = own_symbol(base + "_ptds");
  }
  if (address == nullptr) address = own_symbol(base);
  if (address == nullptr) {
    report(CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    return CUDA_ERROR_NOT_FOUND;
  }
  *pfn = address;
  report(CU_GET_PROC_ADDRESS_SUCCESS);
  return CUDA_SUCCESS;
}

// The trace (trace.hpp) names the symbol asked for, its version and flags.
CUresult traced_get_proc_address(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags,
                                 CUdriverProcAddressQueryResult* status) {
  if (trace_enabled()) {
    trace_detail("%s, %d, %llu", symbol != nullptr ? symbol : "(null)", cuda_version,
                 static_cast<unsigned long long>(flags));
  }
  return get_proc_address(symbol, pfn, cuda_version, flags, status);
}

}  // namespace
}  // namespace fake

FAKE_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                                         CUdriverProcAddressQueryResult* symbolStatus) {
  FAKE_ENTRY(fake::traced_get_proc_address(symbol, pfn, cudaVersion, flags, symbolStatus));
}

// The CUDA 11.3 form, without the status (cuda.h maps the name to _v2, so declare it here).
#undef cuGetProcAddress
FAKE_EXPORT CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags);
FAKE_EXPORT CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags) {
  FAKE_ENTRY(fake::traced_get_proc_address(symbol, pfn, cudaVersion, flags, nullptr));
}
