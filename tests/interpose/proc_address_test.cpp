// cuGetProcAddress routing under LD_PRELOAD=libstreampool.so, STREAMPOOL_LIBCUDA=<a driver>:
// streampool must give the real driver's answer for every query cudart 13 makes, except that a
// pointer to a hooked, versioned entry point becomes streampool's definition of exactly that name.
// RoutingOverAnyDriver holds for any driver underneath; RoutingOverMiniDriver pins variants the
// mini driver is known to choose.
#include <cuda.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "test_support.hpp"

#undef cuGetProcAddress

namespace {

using streampool::test::hooked_names;
using streampool::test::object_base_of;
using streampool::test::symbol_at;

using GetProcAddressV1 = CUresult (*)(const char*, void**, int, cuuint64_t);
using GetProcAddressV2 = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);

struct Query {
  std::string symbol;
  int cuda_version;
  cuuint64_t flags;
};

std::vector<Query> cudart13_queries() {
  std::vector<Query> queries;
  std::ifstream input(STREAMPOOL_TEST_QUERIES);
  Query query;
  while (input >> query.symbol >> query.cuda_version >> query.flags) queries.push_back(query);
  return queries;
}

struct Answer {
  CUresult result;
  void* function;
  CUdriverProcAddressQueryResult status;
};

class Routing : public ::testing::Test {
 protected:
  void SetUp() override {
    streampool_ = dlopen(STREAMPOOL_TEST_PRELOAD_LIBRARY, RTLD_NOW | RTLD_NOLOAD);
    ASSERT_NE(streampool_, nullptr) << "run this test with LD_PRELOAD=libstreampool.so";
    const char* driver_path = std::getenv("STREAMPOOL_LIBCUDA");
    ASSERT_NE(driver_path, nullptr) << "run this test with STREAMPOOL_LIBCUDA=<driver>";
    driver_ = dlopen(driver_path, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(driver_, nullptr) << dlerror();
    ASSERT_NE(object_base_of(dlsym(driver_, "cuInit")), object_base_of(dlsym(streampool_, "cuInit")));
    ours_v1_ = reinterpret_cast<GetProcAddressV1>(dlsym(streampool_, "cuGetProcAddress"));
    ours_v2_ = reinterpret_cast<GetProcAddressV2>(dlsym(streampool_, "cuGetProcAddress_v2"));
    real_v2_ = reinterpret_cast<GetProcAddressV2>(dlsym(driver_, "cuGetProcAddress_v2"));
    ASSERT_NE(ours_v1_, nullptr);
    ASSERT_NE(ours_v2_, nullptr);
    ASSERT_NE(real_v2_, nullptr);
  }

  Answer ours(const char* symbol, int version, cuuint64_t flags) const {
    Answer answer{CUDA_ERROR_UNKNOWN, reinterpret_cast<void*>(1), CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT};
    answer.result = ours_v2_(symbol, &answer.function, version, flags, &answer.status);
    return answer;
  }
  Answer real(const char* symbol, int version, cuuint64_t flags) const {
    Answer answer{CUDA_ERROR_UNKNOWN, reinterpret_cast<void*>(1), CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT};
    answer.result = real_v2_(symbol, &answer.function, version, flags, &answer.status);
    return answer;
  }
  void* streampool_definition(const std::string& name) const { return dlsym(streampool_, name.c_str()); }
  bool inside_streampool(const void* address) const {
    return object_base_of(address) == object_base_of(reinterpret_cast<void*>(ours_v2_));
  }

  void* streampool_ = nullptr;
  void* driver_ = nullptr;
  GetProcAddressV1 ours_v1_ = nullptr;
  GetProcAddressV2 ours_v2_ = nullptr;
  GetProcAddressV2 real_v2_ = nullptr;
};

using RoutingOverAnyDriver = Routing;
using RoutingOverMiniDriver = Routing;
using RoutingOverFakeDriver = Routing;

// A hooked name, or the unversioned name of one (cuMemAllocAsync for cuMemAllocAsync_ptsz).
bool names_a_hook(const std::set<std::string>& hooked, const std::string& symbol) {
  for (const std::string& name : hooked) {
    if (name == symbol) return true;
    if (name.rfind(symbol, 0) == 0 && (name.compare(symbol.size(), 2, "_v") == 0 ||
                                       name.compare(symbol.size(), 3, "_pt") == 0)) {
      return true;
    }
  }
  return false;
}

TEST_F(RoutingOverAnyDriver, EveryCudart13QueryGetsTheRealAnswerOrStreampoolsDefinitionOfThatVariant) {
  const auto hooked = hooked_names();
  const auto queries = cudart13_queries();
  ASSERT_EQ(queries.size(), 439U);
  int substituted = 0;
  for (const Query& query : queries) {
    SCOPED_TRACE(query.symbol + " " + std::to_string(query.cuda_version) + " " + std::to_string(query.flags));
    const Answer expected = real(query.symbol.c_str(), query.cuda_version, query.flags);
    const Answer actual = ours(query.symbol.c_str(), query.cuda_version, query.flags);
    if (expected.result == CUDA_ERROR_NOT_FOUND && expected.status == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND &&
        names_a_hook(hooked, query.symbol)) {
      // A hooked name the driver underneath lacks: streampool serves it anyway.
      EXPECT_EQ(actual.result, CUDA_SUCCESS);
      EXPECT_EQ(actual.status, CU_GET_PROC_ADDRESS_SUCCESS);
      EXPECT_EQ(hooked.count(symbol_at(actual.function)), 1U) << symbol_at(actual.function);
      EXPECT_TRUE(inside_streampool(actual.function));
      ++substituted;
      continue;
    }
    EXPECT_EQ(actual.result, expected.result);
    EXPECT_EQ(actual.status, expected.status);
    const std::string real_name = symbol_at(expected.function);
    if (expected.function != nullptr && hooked.count(real_name)) {
      EXPECT_EQ(actual.function, streampool_definition(real_name)) << "expected streampool's " << real_name;
      EXPECT_TRUE(inside_streampool(actual.function));
      ++substituted;
    } else {
      EXPECT_EQ(actual.function, expected.function) << "expected the real " << real_name;
    }
  }
  EXPECT_GE(substituted, 40);  // the allocator family, ordering calls and cuGetProcAddress itself
}

TEST_F(RoutingOverAnyDriver, LegacyAndPerThreadAllocVariantsAreDistinctStreampoolFunctions) {
  const Answer legacy = ours("cuMemAllocAsync", 11020, CU_GET_PROC_ADDRESS_DEFAULT);
  const Answer per_thread = ours("cuMemAllocAsync", 11020, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
  ASSERT_EQ(legacy.result, CUDA_SUCCESS);
  ASSERT_EQ(per_thread.result, CUDA_SUCCESS);
  EXPECT_NE(legacy.function, per_thread.function);
  EXPECT_EQ(legacy.function, streampool_definition("cuMemAllocAsync"));
  EXPECT_EQ(per_thread.function, streampool_definition("cuMemAllocAsync_ptsz"));
}

// The pool family is streampool's whatever the driver underneath exports (the fake driver
// exports none of these; an older driver lacks the CUDA 13 ones).
TEST_F(RoutingOverAnyDriver, EveryPoolEntryPointIsStreampoolsEvenWhereTheDriverLacksIt) {
  const char* const names[] = {
      "cuMemPoolCreate",       "cuMemPoolDestroy",       "cuMemPoolGetAttribute",
      "cuMemPoolSetAttribute", "cuMemPoolGetAccess",     "cuMemPoolSetAccess",
      "cuMemPoolTrimTo",       "cuMemSetMemPool",        "cuMemGetMemPool",
      "cuMemGetDefaultMemPool", "cuDeviceGetDefaultMemPool", "cuDeviceGetMemPool",
      "cuDeviceSetMemPool",    "cuMemPoolExportToShareableHandle", "cuMemPoolImportFromShareableHandle",
      "cuMemPoolExportPointer", "cuMemPoolImportPointer", "cuMemAllocFromPoolAsync"};
  for (const char* name : names) {
    SCOPED_TRACE(name);
    const Answer answer = ours(name, 13000, CU_GET_PROC_ADDRESS_DEFAULT);
    void* function = nullptr;

    EXPECT_EQ(answer.result, CUDA_SUCCESS);
    EXPECT_EQ(answer.status, CU_GET_PROC_ADDRESS_SUCCESS);
    EXPECT_EQ(answer.function, streampool_definition(name));
    EXPECT_EQ(ours_v1_(name, &function, 13000, CU_GET_PROC_ADDRESS_DEFAULT), CUDA_SUCCESS);
    EXPECT_EQ(function, streampool_definition(name));
  }
}

// The fake driver exports no cuMemPoolDestroy and knows the versions of cudaTypedefs.h.
TEST_F(RoutingOverFakeDriver, AHookedNameTheDriverLacksIsNotServedBeforeItsVersion) {
  const Answer expected = real("cuMemPoolDestroy", 11000, CU_GET_PROC_ADDRESS_DEFAULT);
  const Answer actual = ours("cuMemPoolDestroy", 11000, CU_GET_PROC_ADDRESS_DEFAULT);
  const Answer current = ours("cuMemPoolDestroy", 11020, CU_GET_PROC_ADDRESS_DEFAULT);

  EXPECT_EQ(real("cuMemPoolDestroy", 11020, CU_GET_PROC_ADDRESS_DEFAULT).result, CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(actual.result, CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(actual.status, expected.status);
  EXPECT_EQ(actual.status, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  EXPECT_EQ(actual.function, nullptr);
  EXPECT_EQ(current.result, CUDA_SUCCESS);
  EXPECT_EQ(current.function, streampool_definition("cuMemPoolDestroy"));
}

TEST_F(RoutingOverAnyDriver, PerThreadFlagServesThePerThreadVariantOfAHookedName) {
  const Answer answer = ours("cuMemAllocFromPoolAsync", 11020, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);

  ASSERT_EQ(answer.result, CUDA_SUCCESS);
  EXPECT_EQ(answer.function, streampool_definition("cuMemAllocFromPoolAsync_ptsz"));
}

TEST_F(RoutingOverAnyDriver, EmptyProbeGetsTheRealAnswer) {
  const Answer expected = real("", 13000, 0);
  const Answer actual = ours("", 13000, 0);
  EXPECT_EQ(actual.result, expected.result);
  EXPECT_EQ(actual.status, expected.status);
  EXPECT_EQ(actual.function, expected.function);
}

TEST_F(RoutingOverAnyDriver, UnknownSymbolGetsTheRealError) {
  const Answer expected = real("cuNoSuchEntryPoint", 13000, 0);
  const Answer actual = ours("cuNoSuchEntryPoint", 13000, 0);
  EXPECT_NE(actual.result, CUDA_SUCCESS);
  EXPECT_EQ(actual.result, expected.result);
  EXPECT_EQ(actual.status, expected.status);
  EXPECT_EQ(actual.function, nullptr);
}

TEST_F(RoutingOverAnyDriver, GetProcAddressOfGetProcAddressIsStreampools) {
  const Answer answer = ours("cuGetProcAddress", 12000, 0);
  ASSERT_EQ(answer.result, CUDA_SUCCESS);
  EXPECT_TRUE(inside_streampool(answer.function));
  EXPECT_EQ(answer.function, streampool_definition(symbol_at(real("cuGetProcAddress", 12000, 0).function)));
}

TEST_F(RoutingOverAnyDriver, OldAbiGetProcAddressRoutesToo) {
  void* function = nullptr;
  ASSERT_EQ(ours_v1_("cuMemAllocAsync", &function, 11020, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM), CUDA_SUCCESS);
  EXPECT_EQ(function, streampool_definition("cuMemAllocAsync_ptsz"));
}

TEST_F(RoutingOverAnyDriver, LibcudaByNameIsStreampool) {
  void* by_name = dlopen("libcuda.so.1", RTLD_NOW);
  ASSERT_NE(by_name, nullptr) << dlerror();
  EXPECT_EQ(by_name, streampool_);
  EXPECT_TRUE(inside_streampool(dlsym(by_name, "cuInit")));
  dlclose(by_name);
}

TEST_F(RoutingOverAnyDriver, StreampoolVersionIsVisibleToTheProcess) {
  using Version = const char* (*)();
  const auto version = reinterpret_cast<Version>(dlsym(RTLD_DEFAULT, "streampool_version"));
  ASSERT_NE(version, nullptr);
  EXPECT_STREQ(version(), STREAMPOOL_TEST_VERSION);
}

// The mini driver chooses _v2 from cudaVersion 3020 and _ptsz/_ptds for flag 2 (mini_driver.c).
TEST_F(RoutingOverMiniDriver, CudaVersionSelectsTheVersionedHook) {
  EXPECT_EQ(ours("cuCtxSynchronize", 2000, 0).function, streampool_definition("cuCtxSynchronize"));
  EXPECT_EQ(ours("cuCtxSynchronize", 13000, 0).function, streampool_definition("cuCtxSynchronize_v2"));
}

TEST_F(RoutingOverMiniDriver, PerThreadFlagSelectsThePerThreadHook) {
  EXPECT_EQ(ours("cuStreamWaitEvent", 8000, 0).function, streampool_definition("cuStreamWaitEvent"));
  EXPECT_EQ(ours("cuStreamWaitEvent", 8000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM).function,
            streampool_definition("cuStreamWaitEvent_ptsz"));
}

TEST_F(RoutingOverMiniDriver, ForwardedNamesGetTheRealVariant) {
  EXPECT_EQ(ours("cuMemsetD8", 7000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM).function,
            dlsym(driver_, "cuMemsetD8_v2_ptds"));
  EXPECT_EQ(ours("cuMemsetD8", 3020, 0).function, dlsym(driver_, "cuMemsetD8_v2"));
}

}  // namespace
