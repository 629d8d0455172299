// Shared by the hooks' tests (hooks_*_test.cpp): driver entry points taken from libstreampool.so
// itself (the tests run with LD_PRELOAD=libstreampool.so over the fake driver named by
// STREAMPOOL_LIBCUDA), the fake driver's call counters, and a fixture with a current context.
#pragma once

#include <cuda.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace hooks_test {

inline void* streampool_library() {
  static void* handle = dlopen(STREAMPOOL_TEST_PRELOAD_LIBRARY, RTLD_NOW | RTLD_NOLOAD);
  return handle;
}

// The driver underneath, once streampool has opened it (on its first forwarded call).
inline void* fake_driver() {
  const char* path = std::getenv("STREAMPOOL_LIBCUDA");
  return path == nullptr ? nullptr : dlopen(path, RTLD_NOW | RTLD_NOLOAD);
}

inline void* streampool_symbol(const char* name) {
  void* library = streampool_library();
  return library == nullptr ? nullptr : dlsym(library, name);
}

// The fake driver's count of calls that reached its entry point `name`.
inline unsigned long long fake_calls(const char* name) {
  using Counter = unsigned long long (*)(const char*);
  void* driver = fake_driver();
  auto counter = driver == nullptr ? nullptr : reinterpret_cast<Counter>(dlsym(driver, "streampool_fake_counter"));
  return counter == nullptr ? 0 : counter(name);
}

// streampool's definition of a driver entry point, typed as cuda.h declares it.
#define SP(name) (reinterpret_cast<decltype(&::name)>(::hooks_test::streampool_symbol(#name)))
// The same for a variant cuda.h does not declare here (the _ptsz ones), typed like `like`.
#define SP_AS(name, like) (reinterpret_cast<decltype(&::like)>(::hooks_test::streampool_symbol(#name)))

using StatsJson = int (*)(char*, size_t);
using DebugStreamKey = int (*)(CUstream, int, std::uintptr_t*);

inline std::string stats_report() {
  auto stats = reinterpret_cast<StatsJson>(streampool_symbol("streampool_stats_json"));
  if (stats == nullptr) return {};
  int needed = stats(nullptr, 0);
  if (needed <= 0) return {};
  std::vector<char> buffer(static_cast<size_t>(needed) + 1);
  stats(buffer.data(), buffer.size());
  return std::string(buffer.data());
}

inline std::uintptr_t stream_key(CUstream stream, bool per_thread_variant) {
  auto key_of = reinterpret_cast<DebugStreamKey>(streampool_symbol("streampool_debug_stream_key"));
  std::uintptr_t key = 0;
  if (key_of == nullptr || key_of(stream, per_thread_variant ? 1 : 0, &key) != CUDA_SUCCESS) return 0;
  return key;
}

// Runs this test program again as a child with extra environment, running only `test_name`
// (a DISABLED_ test, which the normal run lists but never runs); returns its exit status.
inline int run_child_test(const std::string& test_name, const std::vector<std::string>& environment) {
  pid_t child = fork();
  if (child == 0) {
    for (const std::string& assignment : environment) putenv(strdup(assignment.c_str()));
    std::string filter = "--gtest_filter=" + test_name;
    execl("/proc/self/exe", "child", filter.c_str(), "--gtest_also_run_disabled_tests", static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

// Everything this (child) process writes to stderr from here on, into `path`.
inline void capture_stderr(const char* path) {
  const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_GE(dup2(fd, 2), 0);
  close(fd);
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// How many times `needle` occurs in `text` (for lines of a log: a needle each line has once).
inline size_t occurrences(const std::string& text, const std::string& needle) {
  size_t count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++count;
  return count;
}

// A current context on device 0 and one created stream.
class DriverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(streampool_library(), nullptr) << "run with LD_PRELOAD=libstreampool.so";
    ASSERT_EQ(SP(cuInit)(0), CUDA_SUCCESS);  // streampool opens the real (here: fake) driver
    ASSERT_NE(fake_driver(), nullptr) << "run with STREAMPOOL_LIBCUDA naming the fake driver";
    ASSERT_EQ(SP(cuDeviceGet)(&device, 0), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuDevicePrimaryCtxRetain)(&context, device), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuCtxSetCurrent)(context), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuStreamCreate)(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  }
  void TearDown() override {
    if (stream != nullptr) SP(cuStreamDestroy_v2)(stream);
  }

  CUmemoryPool create_device_pool(size_t max_size = 0) {
    CUmemPoolProps props{};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = device;
    props.maxSize = max_size;
    CUmemoryPool pool = nullptr;
    EXPECT_EQ(SP(cuMemPoolCreate)(&pool, &props), CUDA_SUCCESS);
    return pool;
  }

  static CUmemPool_attribute attribute_number(int number) { return static_cast<CUmemPool_attribute>(number); }

  std::uint64_t pool_attribute(CUmemoryPool pool, int attribute) {
    std::uint64_t value = 0;
    EXPECT_EQ(SP(cuMemPoolGetAttribute)(pool, static_cast<CUmemPool_attribute>(attribute), &value), CUDA_SUCCESS);
    return value;
  }

  CUdevice device = 0;
  CUcontext context = nullptr;
  CUstream stream = nullptr;
};

}  // namespace hooks_test
