// Where to look for NVIDIA's real libcuda.so.1, as a list of absolute candidate paths in the order
// they are tried. Pure functions of their inputs (plus reading ld.so.cache), so tests can pin the
// order without a driver installed. real_library.cpp opens and vets the candidates.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace streampool::driver::search {

inline constexpr std::string_view kDriverSoname = "libcuda.so.1";

struct SearchInputs {
  const char* explicit_path = nullptr;    // STREAMPOOL_LIBCUDA
  const char* ld_library_path = nullptr;  // LD_LIBRARY_PATH
  const char* ld_cache_file = "/etc/ld.so.cache";
};

// STREAMPOOL_LIBCUDA, when set, is the only candidate: a wrong explicit choice must fail loudly,
// not fall back silently to some other driver. Otherwise: each LD_LIBRARY_PATH directory, the
// ld.so.cache entries for libcuda.so.1, then the usual driver directories. Duplicates removed.
std::vector<std::string> candidate_paths(const SearchInputs& inputs);

// The paths ld.so.cache (glibc's "glibc-ld.so.cache1.1" format, alone or after the old format)
// maps `soname` to, in file order. Empty when the file is missing or malformed.
std::vector<std::string> ld_cache_entries(const char* cache_file, std::string_view soname);

// True when a directory component of `path` is named "stubs" (the CUDA toolkit's link-time stubs).
bool has_stubs_component(std::string_view path);

}  // namespace streampool::driver::search
