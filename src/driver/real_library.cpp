#include "real_library.hpp"

#include <dlfcn.h>
#include <pthread.h>
#include <sys/stat.h>

#include <atomic>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <string_view>
#include <unordered_map>

#include "library_search.hpp"
#include "log.hpp"

namespace streampool::driver {

namespace {

constexpr int kCudaErrorStubLibrary = 34;  // CUDA_ERROR_STUB_LIBRARY
constexpr int kProbeCudaVersion = 12000;   // any version: a stub refuses every query
using GetProcAddressV2 = int (*)(const char*, void**, int, std::uint64_t, int*);

// Never destroyed: hooked calls may arrive from other libraries' destructors at exit.
struct LoaderState {
  std::mutex load_mutex;
  std::atomic<bool> loaded{false};
  bool found = false;
  RealLibrary library{nullptr, {}};

  std::mutex symbol_mutex;
  std::unordered_map<std::string, void*> symbols;
};

LoaderState* loader_state_pointer = nullptr;  // set once, by loader_state()

// A fork while another thread holds one of our locks would leave it locked forever in the child:
// take both around fork so the child inherits them released and the state consistent.
void lock_before_fork() {
  loader_state_pointer->load_mutex.lock();
  loader_state_pointer->symbol_mutex.lock();
}
void unlock_after_fork() {
  loader_state_pointer->symbol_mutex.unlock();
  loader_state_pointer->load_mutex.unlock();
}

LoaderState& loader_state() {
  static LoaderState* const state = [] {
    loader_state_pointer = new LoaderState;
    pthread_atfork(lock_before_fork, unlock_after_fork, unlock_after_fork);
    return loader_state_pointer;
  }();
  return *state;
}

struct FileId {
  dev_t device;
  ino_t inode;
};

bool file_id(const char* path, FileId& id) {
  struct stat info {};
  if (path == nullptr || path[0] == '\0' || ::stat(path, &info) != 0) return false;
  id = FileId{info.st_dev, info.st_ino};
  return true;
}

// The file holding this code: libstreampool.so when preloaded, the test program when linked.
bool own_file_id(FileId& id) {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&real_library), &info) != 0 && file_id(info.dli_fname, id)) return true;
  return file_id("/proc/self/exe", id);
}

std::string resolved(const std::string& path) {
  char buffer[PATH_MAX];
  if (::realpath(path.c_str(), buffer) == nullptr) return {};
  return buffer;
}

// Opens `candidate` if it is a real driver; nullptr (with the reason logged) otherwise.
void* open_if_real_driver(const std::string& candidate, const FileId* own_id, std::string& opened_path) {
  const std::string path = resolved(candidate);
  if (path.empty()) {
    STREAMPOOL_LOG_DEBUG("driver candidate %s: not found", candidate.c_str());
    return nullptr;
  }
  if (search::has_stubs_component(candidate) || search::has_stubs_component(path)) {
    STREAMPOOL_LOG_INFO("driver candidate %s: rejected, a stubs/ library", path.c_str());
    return nullptr;
  }
  FileId candidate_id{};
  if (own_id != nullptr && file_id(path.c_str(), candidate_id) && candidate_id.device == own_id->device &&
      candidate_id.inode == own_id->inode) {
    STREAMPOOL_LOG_INFO("driver candidate %s: rejected, it is streampool itself", path.c_str());
    return nullptr;
  }
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* reason = dlerror();
    STREAMPOOL_LOG_INFO("driver candidate %s: dlopen failed: %s", path.c_str(), reason ? reason : "?");
    return nullptr;
  }
  const char* rejection = nullptr;
  if (dlsym(handle, "streampool_version") != nullptr) {
    rejection = "it is a copy of streampool";
  } else if (dlsym(handle, "cuInit") == nullptr) {
    rejection = "it has no cuInit";
  } else if (auto* probe = reinterpret_cast<GetProcAddressV2>(dlsym(handle, "cuGetProcAddress_v2"))) {
    void* function = nullptr;
    int status = 0;
    if (probe("", &function, kProbeCudaVersion, 0, &status) == kCudaErrorStubLibrary) {
      rejection = "it is a stub library (CUDA_ERROR_STUB_LIBRARY)";
    }
  }
  if (rejection != nullptr) {
    STREAMPOOL_LOG_INFO("driver candidate %s: rejected, %s", path.c_str(), rejection);
    dlclose(handle);
    return nullptr;
  }
  opened_path = path;
  return handle;
}

void load(LoaderState& state) {
  search::SearchInputs inputs;
  inputs.explicit_path = std::getenv("STREAMPOOL_LIBCUDA");
  inputs.ld_library_path = std::getenv("LD_LIBRARY_PATH");
  FileId own_id{};
  const bool know_own_id = own_file_id(own_id);
  for (const std::string& candidate : search::candidate_paths(inputs)) {
    std::string path;
    if (void* handle = open_if_real_driver(candidate, know_own_id ? &own_id : nullptr, path)) {
      state.library = RealLibrary{handle, std::move(path)};
      state.found = true;
      STREAMPOOL_LOG_INFO("real driver: %s", state.library.path.c_str());
      return;
    }
  }
  // Said by default (one line): otherwise every CUDA call just answers CUDA_ERROR_NO_DEVICE.
  if (inputs.explicit_path != nullptr && inputs.explicit_path[0] != '\0') {
    log::notice(log::Level::error,
                "STREAMPOOL_LIBCUDA=%s is not a usable driver: every CUDA call answers CUDA_ERROR_NO_DEVICE "
                "(STREAMPOOL_LOG=info says why)",
                inputs.explicit_path);
  } else {
    log::notice(log::Level::error,
                "NVIDIA's driver (libcuda.so.1) was not found: every CUDA call answers CUDA_ERROR_NO_DEVICE. "
                "Name it with STREAMPOOL_LIBCUDA=<path>, or run over streampool's CPU-only driver "
                "(streampool run --fake)");
  }
}

// Set while this thread searches: a candidate that calls back into streampool while being opened
// or probed (its constructor, its cuGetProcAddress_v2) must see "no driver", not wait on itself.
thread_local bool searching_on_this_thread = false;

}  // namespace

const RealLibrary* real_library() noexcept {
  try {
    LoaderState& state = loader_state();
    if (!state.loaded.load(std::memory_order_acquire)) {
      if (searching_on_this_thread) return nullptr;
      const std::lock_guard<std::mutex> lock(state.load_mutex);
      if (!state.loaded.load(std::memory_order_relaxed)) {
        searching_on_this_thread = true;
        load(state);
        searching_on_this_thread = false;
        state.loaded.store(true, std::memory_order_release);
      }
    }
    return state.found ? &state.library : nullptr;
  } catch (...) {
    searching_on_this_thread = false;
    return nullptr;  // out of memory while searching: behave as if no driver were installed
  }
}

void* real_symbol(const char* exported_name) noexcept {
  const RealLibrary* library = real_library();
  if (library == nullptr || exported_name == nullptr) return nullptr;
  try {
    LoaderState& state = loader_state();
    const std::lock_guard<std::mutex> lock(state.symbol_mutex);
    auto [slot, inserted] = state.symbols.try_emplace(exported_name, nullptr);
    if (inserted) slot->second = dlsym(library->handle, exported_name);
    return slot->second;
  } catch (...) {
    return dlsym(library->handle, exported_name);
  }
}

}  // namespace streampool::driver
