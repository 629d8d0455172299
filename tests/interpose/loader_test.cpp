// Finding the real driver (streampool_driver linked in; nothing preloaded). The search order and
// the ld.so.cache reader are pure functions; real_library() opens once per process, so each of its
// cases runs in a forked child (EXPECT_EXIT) with its own environment.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "library_search.hpp"
#include "real_library.hpp"

namespace {

namespace search = streampool::driver::search;
using streampool::driver::real_library;
using streampool::driver::real_symbol;

const std::vector<std::string> kUsualPaths = {
#if defined(__aarch64__)
    "/usr/lib/aarch64-linux-gnu/libcuda.so.1",
#else
    "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
#endif
    "/usr/lib64/libcuda.so.1",         "/usr/local/nvidia/lib64/libcuda.so.1",
    "/usr/lib/wsl/lib/libcuda.so.1",   "/usr/lib/libcuda.so.1",
};

std::string temporary_path(const char* name) {
  return ::testing::TempDir() + "/streampool_loader_test_" + std::to_string(getpid()) + "_" + name;
}

// A cache in glibc's new format: 48-byte header, 24-byte entries, strings after them (offsets
// counted from the header), optionally behind some bytes of the old format.
std::string ld_cache_bytes(const std::vector<std::pair<std::string, std::string>>& entries, const std::string& prefix) {
  std::string header(48, '\0');
  std::memcpy(header.data(), "glibc-ld.so.cache1.1", 20);
  const auto count = static_cast<std::uint32_t>(entries.size());
  std::memcpy(header.data() + 20, &count, 4);
  std::string table;
  std::string strings;
  const std::size_t strings_start = 48 + 24 * entries.size();
  for (const auto& [key, value] : entries) {
    std::string entry(24, '\0');
    const std::int32_t flags = 0x0303;  // ELF x86-64 libc6, as ldconfig writes
    const auto key_offset = static_cast<std::uint32_t>(strings_start + strings.size());
    strings += key + '\0';
    const auto value_offset = static_cast<std::uint32_t>(strings_start + strings.size());
    strings += value + '\0';
    std::memcpy(entry.data(), &flags, 4);
    std::memcpy(entry.data() + 4, &key_offset, 4);
    std::memcpy(entry.data() + 8, &value_offset, 4);
    table += entry;
  }
  return prefix + header + table + strings;
}

std::string write_file(const char* name, const std::string& bytes) {
  const std::string path = temporary_path(name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

std::string resolved(const char* path) {
  char buffer[PATH_MAX];
  return realpath(path, buffer) != nullptr ? buffer : "";
}

std::string directory_of(const std::string& path) { return path.substr(0, path.rfind('/')); }

// ---- search order ----

TEST(DriverSearch, ExplicitPathIsTheOnlyCandidate) {
  search::SearchInputs inputs;
  inputs.explicit_path = "/opt/driver/libcuda.so.1";
  inputs.ld_library_path = "/somewhere";
  EXPECT_EQ(search::candidate_paths(inputs), std::vector<std::string>{"/opt/driver/libcuda.so.1"});
}

TEST(DriverSearch, LibraryPathThenCacheThenUsualDirectories) {
  const std::string cache = write_file("order.cache", ld_cache_bytes({{"libcuda.so.1", "/cache/libcuda.so.1"}}, ""));
  search::SearchInputs inputs;
  inputs.ld_library_path = "/first:/second/::relative:/first";
  inputs.ld_cache_file = cache.c_str();
  std::vector<std::string> expected = {"/first/libcuda.so.1", "/second/libcuda.so.1", "/cache/libcuda.so.1"};
  expected.insert(expected.end(), kUsualPaths.begin(), kUsualPaths.end());
  EXPECT_EQ(search::candidate_paths(inputs), expected);
  unlink(cache.c_str());
}

TEST(DriverSearch, WithNothingSetOnlyUsualDirectoriesRemain) {
  search::SearchInputs inputs;
  inputs.ld_cache_file = "/nonexistent/ld.so.cache";
  EXPECT_EQ(search::candidate_paths(inputs), kUsualPaths);
}

TEST(LdCache, EntriesForTheSonameAreReturnedInFileOrder) {
  const std::string cache = write_file(
      "entries.cache", ld_cache_bytes({{"libcudart.so.13", "/a/libcudart.so.13"},
                                       {"libcuda.so.1", "/lib64/libcuda.so.1"},
                                       {"libcuda.so", "/lib64/libcuda.so"},
                                       {"libcuda.so.1", "/lib32/libcuda.so.1"}},
                                      ""));
  EXPECT_EQ(search::ld_cache_entries(cache.c_str(), "libcuda.so.1"),
            (std::vector<std::string>{"/lib64/libcuda.so.1", "/lib32/libcuda.so.1"}));
  unlink(cache.c_str());
}

TEST(LdCache, NewFormatBehindTheOldOneIsRead) {
  const std::string cache = write_file(
      "combined.cache", ld_cache_bytes({{"libcuda.so.1", "/lib64/libcuda.so.1"}}, std::string("ld.so-1.7.0") + '\0' + "xxxxxxxx"));
  EXPECT_EQ(search::ld_cache_entries(cache.c_str(), "libcuda.so.1"), std::vector<std::string>{"/lib64/libcuda.so.1"});
  unlink(cache.c_str());
}

TEST(LdCache, TruncatedOrForeignFilesGiveNothing) {
  std::string truncated = ld_cache_bytes({{"libcuda.so.1", "/lib64/libcuda.so.1"}}, "");
  truncated.resize(60);
  const std::string cut = write_file("truncated.cache", truncated);
  const std::string foreign = write_file("foreign.cache", std::string(4096, 'x'));
  EXPECT_TRUE(search::ld_cache_entries(cut.c_str(), "libcuda.so.1").empty());
  EXPECT_TRUE(search::ld_cache_entries(foreign.c_str(), "libcuda.so.1").empty());
  EXPECT_TRUE(search::ld_cache_entries("/nonexistent/ld.so.cache", "libcuda.so.1").empty());
  unlink(cut.c_str());
  unlink(foreign.c_str());
}

TEST(DriverSearch, StubsDirectoryComponentIsRecognised) {
  EXPECT_TRUE(search::has_stubs_component("/usr/local/cuda/lib64/stubs/libcuda.so"));
  EXPECT_TRUE(search::has_stubs_component("stubs/libcuda.so.1"));
  EXPECT_FALSE(search::has_stubs_component("/usr/lib/x86_64-linux-gnu/libcuda.so.1"));
  EXPECT_FALSE(search::has_stubs_component("/opt/nostubs/libcuda.so.1"));
  EXPECT_FALSE(search::has_stubs_component("/opt/stubs"));
}

// ---- opening (one forked child per case: real_library() decides once per process) ----

// Exit code of a child that sets the environment, then asks for the real library.
[[noreturn]] void exit_with_opened_path_check(const char* explicit_path, const char* ld_library_path,
                                              const std::string& expected_path) {
  if (explicit_path != nullptr) {
    setenv("STREAMPOOL_LIBCUDA", explicit_path, 1);
  } else {
    unsetenv("STREAMPOOL_LIBCUDA");
  }
  if (ld_library_path != nullptr) setenv("LD_LIBRARY_PATH", ld_library_path, 1);
  const auto* library = real_library();
  if (expected_path.empty()) std::_Exit(library == nullptr ? 0 : 1);
  std::_Exit(library != nullptr && library->handle != nullptr && library->path == expected_path ? 0 : 2);
}

TEST(RealLibrary, ExplicitDriverIsOpenedByResolvedPath) {
  EXPECT_EXIT(exit_with_opened_path_check(STREAMPOOL_TEST_MINI_DRIVER, nullptr, resolved(STREAMPOOL_TEST_MINI_DRIVER)),
              ::testing::ExitedWithCode(0), "");
}

TEST(RealLibrary, DriverIsFoundThroughLdLibraryPath) {
  const std::string directory = directory_of(STREAMPOOL_TEST_MINI_DRIVER);
  EXPECT_EXIT(exit_with_opened_path_check(nullptr, directory.c_str(), resolved(STREAMPOOL_TEST_MINI_DRIVER)),
              ::testing::ExitedWithCode(0), "");
}

TEST(RealLibrary, LibraryUnderStubsDirectoryIsRefused) {
  EXPECT_EXIT(exit_with_opened_path_check(STREAMPOOL_TEST_STUBS_DIR_DRIVER, nullptr, ""), ::testing::ExitedWithCode(0),
              "");
}

TEST(RealLibrary, LibraryAnsweringStubLibraryIsRefused) {
  EXPECT_EXIT(exit_with_opened_path_check(STREAMPOOL_TEST_STUB_DRIVER, nullptr, ""), ::testing::ExitedWithCode(0), "");
}

TEST(RealLibrary, StreampoolIsRefusedAsItsOwnDriver) {
  EXPECT_EXIT(exit_with_opened_path_check(STREAMPOOL_TEST_PRELOAD_LIBRARY, nullptr, ""), ::testing::ExitedWithCode(0),
              "");
}

TEST(RealLibrary, MissingFileIsRefused) {
  EXPECT_EXIT(exit_with_opened_path_check("/nonexistent/libcuda.so.1", nullptr, ""), ::testing::ExitedWithCode(0), "");
}

TEST(RealLibrary, RealSymbolIsTheDriversOwnAndMissingNamesAreNull) {
  auto child = [] {
    setenv("STREAMPOOL_LIBCUDA", STREAMPOOL_TEST_MINI_DRIVER, 1);
    const auto* library = real_library();
    if (library == nullptr) std::_Exit(1);
    if (real_symbol("cuInit") != dlsym(library->handle, "cuInit")) std::_Exit(2);
    if (real_symbol("cuInit") != real_symbol("cuInit")) std::_Exit(3);
    if (real_symbol("cuProfilerStart") != nullptr) std::_Exit(4);  // the mini driver lacks it
    std::_Exit(0);
  };
  EXPECT_EXIT(child(), ::testing::ExitedWithCode(0), "");
}

TEST(RealLibrary, OpenedDriverStaysUsableInAForkedChild) {
  auto child = [] {
    setenv("STREAMPOOL_LIBCUDA", STREAMPOOL_TEST_MINI_DRIVER, 1);
    if (real_library() == nullptr) std::_Exit(1);
    const pid_t grandchild = fork();
    if (grandchild == 0) {
      const auto device_get_count = reinterpret_cast<int (*)(int*)>(real_symbol("cuDeviceGetCount"));
      int count = 0;
      std::_Exit(device_get_count != nullptr && device_get_count(&count) == 0 && count == 3 ? 0 : 1);
    }
    int status = 0;
    waitpid(grandchild, &status, 0);
    std::_Exit(WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 2);
  };
  EXPECT_EXIT(child(), ::testing::ExitedWithCode(0), "");
}

}  // namespace
