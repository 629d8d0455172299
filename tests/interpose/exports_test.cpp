// libstreampool.so as a file: it must stand in for libcuda.so.1 for every consumer (DT_NEEDED,
// dlopen by name, BIND_NOW), and load into any process (no C++ runtime of its own to clash with).
#include <gtest/gtest.h>
#include <limits.h>
#include <stdlib.h>

#include <set>
#include <sstream>
#include <string>

#include "test_support.hpp"

namespace {

using streampool::test::command_output;
using streampool::test::defined_dynamic_symbols;

std::string dynamic_section(const std::string& library = STREAMPOOL_TEST_PRELOAD_LIBRARY) {
  return command_output(std::string(STREAMPOOL_TEST_READELF) + " -dW '" + library + "'");
}

// The bracketed values of the dynamic entries of one tag ("NEEDED", "SONAME").
std::set<std::string> dynamic_entries(const std::string& tag,
                                      const std::string& library = STREAMPOOL_TEST_PRELOAD_LIBRARY) {
  std::set<std::string> values;
  std::istringstream lines(dynamic_section(library));
  for (std::string line; std::getline(lines, line);) {
    if (line.find("(" + tag + ")") == std::string::npos) continue;
    const auto open = line.find('[');
    const auto close = line.find(']', open);
    if (open != std::string::npos && close != std::string::npos) values.insert(line.substr(open + 1, close - open - 1));
  }
  return values;
}

TEST(Exports, EveryEntryPointOfTheCudaStubIsExported) {
  const auto stub = defined_dynamic_symbols(STREAMPOOL_TEST_CUDA_STUB);
  const auto ours = defined_dynamic_symbols(STREAMPOOL_TEST_PRELOAD_LIBRARY);
  ASSERT_GT(stub.size(), 600U);
  for (const auto& name : stub) {
    if (name.starts_with("cu")) {
      EXPECT_TRUE(ours.count(name)) << name << " is not exported";
    }
  }
}

TEST(Exports, NothingIsExportedButDriverNamesTheStreampoolApiAndTheCudartFastPath) {
  const auto stub = defined_dynamic_symbols(STREAMPOOL_TEST_CUDA_STUB);
  const auto ours = defined_dynamic_symbols(STREAMPOOL_TEST_PRELOAD_LIBRARY);
  const std::set<std::string> cudart_fast_path = {"cudaMallocAsync",         "cudaMallocAsync_ptsz",
                                                  "cudaMallocFromPoolAsync", "cudaMallocFromPoolAsync_ptsz",
                                                  "cudaFreeAsync",           "cudaFreeAsync_ptsz"};
  ASSERT_FALSE(ours.empty());
  for (const auto& name : ours) {
    EXPECT_TRUE(stub.count(name) || name.starts_with("streampool_") || cudart_fast_path.count(name))
        << "unexpected export " << name;
  }
  for (const auto& name : cudart_fast_path) EXPECT_TRUE(ours.count(name)) << name;
  EXPECT_TRUE(ours.count("streampool_version"));
}

TEST(Exports, SonameIsLibcudaSoOne) {
  EXPECT_EQ(dynamic_entries("SONAME"), std::set<std::string>{"libcuda.so.1"});
}

void expect_only_c_library_dependencies(const std::string& file) {
  const std::set<std::string> allowed = {"libc.so.6",       "libdl.so.2",          "libpthread.so.0",
                                         "libm.so.6",       "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1"};
  const auto needed = dynamic_entries("NEEDED", file);
  ASSERT_TRUE(needed.count("libc.so.6")) << dynamic_section(file);
  for (const auto& library : needed) EXPECT_TRUE(allowed.count(library)) << file << " depends on " << library;
}

TEST(Exports, RuntimeDependenciesAreOnlyTheCLibrary) { expect_only_c_library_dependencies(STREAMPOOL_TEST_PRELOAD_LIBRARY); }

#ifdef STREAMPOOL_TEST_ALLOC_LIBRARY
// libstreampool_alloc.so shares its process with NVIDIA's libcuda and libcudart: a cu* or cuda* export
// would interpose on them wherever it is loaded RTLD_GLOBAL.
TEST(Exports, PluggableLibraryExportsOnlyStreampoolNames) {
  const auto ours = defined_dynamic_symbols(STREAMPOOL_TEST_ALLOC_LIBRARY);
  ASSERT_FALSE(ours.empty());
  for (const auto& name : ours) EXPECT_TRUE(name.starts_with("streampool_")) << "unexpected export " << name;
  for (const char* name : {"streampool_torch_alloc", "streampool_torch_free", "streampool_cupy_malloc",
                           "streampool_cupy_free", "streampool_empty_cache", "streampool_torch_record_stream",
                           "streampool_torch_empty_cache", "streampool_active",
                           "streampool_stats_json", "streampool_trace_start"}) {
    EXPECT_TRUE(ours.count(name)) << name;
  }
}

TEST(Exports, PluggableLibraryDependsOnlyOnTheCLibrary) {
  expect_only_c_library_dependencies(STREAMPOOL_TEST_ALLOC_LIBRARY);
  EXPECT_NE(dynamic_section(STREAMPOOL_TEST_ALLOC_LIBRARY).find("SYMBOLIC"), std::string::npos);
  EXPECT_TRUE(dynamic_entries("SONAME", STREAMPOOL_TEST_ALLOC_LIBRARY).count("libstreampool_alloc.so"));
}
#endif

TEST(Exports, SymbolsBindInsideTheLibrary) {
  EXPECT_NE(dynamic_section().find("SYMBOLIC"), std::string::npos);
}

TEST(Exports, PreloadFolderHoldsLibcudaSoOneThatIsStreampool) {
  char link_target[PATH_MAX];
  char library[PATH_MAX];
  const std::string link = std::string(STREAMPOOL_TEST_PRELOAD_DIR) + "/libcuda.so.1";
  ASSERT_NE(realpath(link.c_str(), link_target), nullptr) << link;
  ASSERT_NE(realpath(STREAMPOOL_TEST_PRELOAD_LIBRARY, library), nullptr);
  EXPECT_STREQ(link_target, library);
}

}  // namespace
