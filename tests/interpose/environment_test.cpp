// Environments that change what libstreampool.so does, each run as its own ctest test:
//  PassThrough          STREAMPOOL_DISABLE=1 over the mini driver: cuGetProcAddress hands out the
//                       real driver's pointers, hooked names included.
//  WithoutUsableDriver  STREAMPOOL_LIBCUDA naming streampool itself, a stub library (answers 34) or
//                       a library under stubs/: each is refused, so every call answers
//                       CUDA_ERROR_NO_DEVICE instead of recursing into streampool or the stub.
#include <cuda.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "test_support.hpp"

namespace {

using GetProcAddressV2 = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);

void* streampool_handle() { return dlopen(STREAMPOOL_TEST_PRELOAD_LIBRARY, RTLD_NOW | RTLD_NOLOAD); }

TEST(PassThrough, EveryCudart13QueryGetsTheRealPointer) {
  void* streampool = streampool_handle();
  ASSERT_NE(streampool, nullptr) << "run this test with LD_PRELOAD=libstreampool.so";
  void* driver = dlopen(STREAMPOOL_TEST_MINI_DRIVER, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(driver, nullptr) << dlerror();
  const auto ours = reinterpret_cast<GetProcAddressV2>(dlsym(streampool, "cuGetProcAddress_v2"));
  const auto real = reinterpret_cast<GetProcAddressV2>(dlsym(driver, "cuGetProcAddress_v2"));
  std::ifstream queries(STREAMPOOL_TEST_QUERIES);
  std::string symbol;
  int version = 0;
  cuuint64_t flags = 0;
  int compared = 0;
  while (queries >> symbol >> version >> flags) {
    void* expected = nullptr;
    void* actual = nullptr;
    CUdriverProcAddressQueryResult expected_status{};
    CUdriverProcAddressQueryResult actual_status{};
    EXPECT_EQ(ours(symbol.c_str(), &actual, version, flags, &actual_status),
              real(symbol.c_str(), &expected, version, flags, &expected_status));
    EXPECT_EQ(actual, expected) << symbol << " " << version << " " << flags;
    EXPECT_EQ(actual_status, expected_status);
    ++compared;
  }
  EXPECT_EQ(compared, 439);
}

TEST(PassThrough, HookedAllocatorNameGetsTheRealPointer) {
  void* driver = dlopen(STREAMPOOL_TEST_MINI_DRIVER, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(driver, nullptr) << dlerror();
  const auto ours = reinterpret_cast<GetProcAddressV2>(dlsym(streampool_handle(), "cuGetProcAddress_v2"));
  void* function = nullptr;
  ASSERT_EQ(ours("cuMemAllocAsync", &function, 11020, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, nullptr),
            CUDA_SUCCESS);
  EXPECT_EQ(function, dlsym(driver, "cuMemAllocAsync_ptsz"));
}

TEST(WithoutUsableDriver, ForwardedCallAnswersNoDevice) {
  void* streampool = streampool_handle();
  ASSERT_NE(streampool, nullptr) << "run this test with LD_PRELOAD=libstreampool.so";
  const auto device_get_count = reinterpret_cast<CUresult (*)(int*)>(dlsym(streampool, "cuDeviceGetCount"));
  int count = -1;
  EXPECT_EQ(device_get_count(&count), CUDA_ERROR_NO_DEVICE);
  EXPECT_EQ(device_get_count(&count), CUDA_ERROR_NO_DEVICE);
  EXPECT_EQ(count, -1);
}

TEST(WithoutUsableDriver, GetProcAddressAnswersNoDeviceAndNoPointer) {
  const auto ours = reinterpret_cast<GetProcAddressV2>(dlsym(streampool_handle(), "cuGetProcAddress_v2"));
  void* function = reinterpret_cast<void*>(1);
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
  EXPECT_EQ(ours("cuInit", &function, 13000, 0, &status), CUDA_ERROR_NO_DEVICE);
  EXPECT_EQ(function, nullptr);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
}

TEST(WithoutUsableDriver, ErrorNamesAreStillAnswered) {
  const auto name_of = reinterpret_cast<CUresult (*)(CUresult, const char**)>(dlsym(streampool_handle(), "cuGetErrorName"));
  const auto text_of =
      reinterpret_cast<CUresult (*)(CUresult, const char**)>(dlsym(streampool_handle(), "cuGetErrorString"));
  const char* name = nullptr;
  const char* text = nullptr;

  ASSERT_EQ(name_of(CUDA_ERROR_NO_DEVICE, &name), CUDA_SUCCESS);
  ASSERT_EQ(text_of(CUDA_ERROR_NO_DEVICE, &text), CUDA_SUCCESS);
  EXPECT_STREQ(name, "CUDA_ERROR_NO_DEVICE");
  EXPECT_STREQ(text, "no CUDA-capable device is detected");
  EXPECT_EQ(name_of(static_cast<CUresult>(777), &name), CUDA_ERROR_INVALID_VALUE);
}

// Death tests re-run this program ("threadsafe"), so the child finds the driver afresh.
TEST(WithoutUsableDriver, SaysSoInOneLineOnStderrWithoutBeingAsked) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        unsetenv("STREAMPOOL_LOG");
        int count = -1;
        reinterpret_cast<CUresult (*)(int*)>(dlsym(streampool_handle(), "cuDeviceGetCount"))(&count);
        reinterpret_cast<CUresult (*)(int*)>(dlsym(streampool_handle(), "cuDeviceGetCount"))(&count);
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(0),
      "^streampool: error: STREAMPOOL_LIBCUDA=[^\n]* is not a usable driver: every CUDA call answers "
      "CUDA_ERROR_NO_DEVICE[^\n]*\n$");
}

TEST(WithoutUsableDriver, StaysSilentWhenTheLogIsExplicitlyOff) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("STREAMPOOL_LOG", "off", 1);
        int count = -1;
        reinterpret_cast<CUresult (*)(int*)>(dlsym(streampool_handle(), "cuDeviceGetCount"))(&count);
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(0), "^$");
}

TEST(PassThrough, AnUnknownDisableValueIsWarnedAboutAndDisables) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("STREAMPOOL_DISABLE", "maybe", 1);
        void* function = nullptr;
        CUdriverProcAddressQueryResult status{};
        const auto ours = reinterpret_cast<GetProcAddressV2>(dlsym(streampool_handle(), "cuGetProcAddress_v2"));
        void* driver = dlopen(STREAMPOOL_TEST_MINI_DRIVER, RTLD_NOW | RTLD_LOCAL);
        ours("cuMemAllocAsync", &function, 13000, 0, &status);
        std::_Exit(function == dlsym(driver, "cuMemAllocAsync") ? 0 : 1);
      },
      ::testing::ExitedWithCode(0),
      "^streampool: warn: unknown STREAMPOOL_DISABLE value 'maybe' \\(expected 1 or 0\\): streampool is disabled\n$");
}

TEST(PassThrough, FalseDoesNotDisable) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("STREAMPOOL_DISABLE", "false", 1);
        void* function = nullptr;
        CUdriverProcAddressQueryResult status{};
        const auto ours = reinterpret_cast<GetProcAddressV2>(dlsym(streampool_handle(), "cuGetProcAddress_v2"));
        ours("cuMemAllocAsync", &function, 13000, 0, &status);
        std::_Exit(function == dlsym(streampool_handle(), "cuMemAllocAsync") ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "^$");
}

}  // namespace
