// NVIDIA's real libcuda, opened by absolute path beside streampool (whose own SONAME is
// libcuda.so.1: glibc matches already-loaded objects by SONAME only for names without a slash, so
// an absolute path reaches the real file).
//
// Nothing happens at load time: the first call searches (see library_search.hpp), vets and opens
// the library once, thread-safely. Candidates are rejected when they are streampool itself (same
// device and inode as the file our code lives in, or a copy: it exports streampool_version), sit
// under a "stubs/" directory, lack cuInit, or answer cuGetProcAddress_v2("") with
// CUDA_ERROR_STUB_LIBRARY (34). The handle is never closed: the driver outlives us at exit.
// State stays valid in the child after fork (pthread_atfork keeps the locks consistent).
#pragma once

#include <string>

namespace streampool::driver {

struct RealLibrary {
  void* handle;      // from dlopen(path, RTLD_NOW | RTLD_LOCAL)
  std::string path;  // absolute, symlinks resolved
};

// The real driver, or nullptr when none was found (callers then answer CUDA_ERROR_NO_DEVICE).
const RealLibrary* real_library() noexcept;

// dlsym(real_library()->handle, exported_name), cached per name; nullptr when there is no real
// library or it lacks the symbol. Safe from any thread.
void* real_symbol(const char* exported_name) noexcept;

}  // namespace streampool::driver
