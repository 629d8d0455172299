// The generated trampolines, preloaded over the mini driver (STREAMPOOL_LIBCUDA=mini): a call to
// any forwarded name of libstreampool.so must reach the real function of the same name with every
// argument intact (integer and vector registers, stack), on the first call (through the resolver)
// and later ones (straight through the slot); a name the driver lacks answers CUDA_ERROR_NOT_FOUND.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "mini_driver.h"
#include "test_support.hpp"

namespace {

using streampool::test::hooked_names;

class Trampolines : public ::testing::Test {
 protected:
  void SetUp() override {
    streampool_ = dlopen(STREAMPOOL_TEST_PRELOAD_LIBRARY, RTLD_NOW | RTLD_NOLOAD);
    ASSERT_NE(streampool_, nullptr) << "run this test with LD_PRELOAD=libstreampool.so";
    driver_ = dlopen(STREAMPOOL_TEST_MINI_DRIVER, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(driver_, nullptr) << dlerror();
  }

  template <typename Function>
  Function ours(const char* name) const {
    return reinterpret_cast<Function>(dlsym(streampool_, name));
  }
  template <typename Function>
  Function real(const char* name) const {
    return reinterpret_cast<Function>(dlsym(driver_, name));
  }

  void* streampool_ = nullptr;
  void* driver_ = nullptr;
};

TEST_F(Trampolines, ManyThreadsResolvingTheSameNameAllReachIt) {
  using Generic = int (*)();
  const char* name = "cuCtxGetFlags";  // first called here (gtest runs tests in order)
  const int expected = real<Generic>(name)();
  const auto forwarded = ours<Generic>(name);
  std::vector<int> answers(8, -1);
  std::vector<std::thread> threads;
  for (auto& answer : answers) threads.emplace_back([&answer, forwarded] { answer = forwarded(); });
  for (auto& thread : threads) thread.join();
  for (const int answer : answers) EXPECT_EQ(answer, expected);
}

TEST_F(Trampolines, EveryForwardedNameReachesTheRealFunctionOfTheSameName) {
  using Generic = int (*)();
  const auto hooked = hooked_names();
  const auto* names = real<const char* const*>("mini_generic_names");
  ASSERT_NE(names, nullptr);
  int checked = 0;
  for (; *names != nullptr; ++names) {
    if (hooked.count(*names)) continue;
    const auto forwarded = ours<Generic>(*names);
    ASSERT_NE(forwarded, nullptr) << *names;
    EXPECT_EQ(forwarded(), real<Generic>(*names)()) << *names;
    EXPECT_EQ(forwarded(), real<Generic>(*names)()) << *names << " (second call)";
    ++checked;
  }
  EXPECT_GT(checked, 500);
}

TEST_F(Trampolines, PointerArgumentIsForwarded) {
  int count = 0;
  EXPECT_EQ(ours<int (*)(int*)>("cuDeviceGetCount")(&count), 0);
  EXPECT_EQ(count, 3);
}

TEST_F(Trampolines, MixedWidthArgumentsAreForwarded) {
  std::vector<unsigned char> memory(64, 0);
  const auto memset_d8 = ours<int (*)(unsigned long long, unsigned char, std::size_t)>("cuMemsetD8_v2");
  ASSERT_EQ(memset_d8(reinterpret_cast<std::uintptr_t>(memory.data()) + 8, 0xab, 16), 0);
  EXPECT_EQ(memory[7], 0);
  EXPECT_EQ(memory[8], 0xab);
  EXPECT_EQ(memory[23], 0xab);
  EXPECT_EQ(memory[24], 0);
}

TEST_F(Trampolines, StackArgumentsAreForwardedOnFirstAndLaterCalls) {
  using LaunchKernel = int (*)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*,
                               void**, void**);
  const auto launch = ours<LaunchKernel>("cuLaunchKernel");
  const auto* record = real<const mini_launch_record* (*)()>("mini_last_launch")();
  void* params[1] = {nullptr};
  void* extra[1] = {nullptr};
  for (unsigned call = 0; call < 2; ++call) {
    SCOPED_TRACE(call);
    ASSERT_EQ(launch(reinterpret_cast<void*>(0x1000 + call), 1 + call, 2, 3, 4, 5, 6, 7000 + call,
                     reinterpret_cast<void*>(0x2000), params, extra),
              0);
    EXPECT_EQ(record->function, reinterpret_cast<void*>(0x1000 + call));
    EXPECT_EQ(record->grid[0], 1 + call);
    EXPECT_EQ(record->grid[1], 2U);
    EXPECT_EQ(record->grid[2], 3U);
    EXPECT_EQ(record->block[0], 4U);
    EXPECT_EQ(record->block[1], 5U);
    EXPECT_EQ(record->block[2], 6U);
    EXPECT_EQ(record->shared_bytes, 7000 + call);
    EXPECT_EQ(record->stream, reinterpret_cast<void*>(0x2000));
    EXPECT_EQ(record->params, params);
    EXPECT_EQ(record->extra, extra);
  }
}

TEST_F(Trampolines, FloatingPointArgumentsAreForwardedOnFirstAndLaterCalls) {
  const auto clamp = ours<int (*)(void*, float, float)>("cuTexRefSetMipmapLevelClamp");
  const auto* record = real<const mini_clamp_record* (*)()>("mini_last_clamp")();
  for (int call = 0; call < 2; ++call) {
    SCOPED_TRACE(call);
    ASSERT_EQ(clamp(reinterpret_cast<void*>(0x3000), 1.5F + static_cast<float>(call), -2.25F), 0);
    EXPECT_EQ(record->texref, reinterpret_cast<void*>(0x3000));
    EXPECT_EQ(record->min_clamp, 1.5F + static_cast<float>(call));
    EXPECT_EQ(record->max_clamp, -2.25F);
  }
}

TEST_F(Trampolines, NameMissingFromTheDriverAnswersNotFound) {
  ASSERT_EQ(real<void*>("cuProfilerStart"), nullptr) << "the mini driver must lack cuProfilerStart";
  const auto profiler_start = ours<int (*)()>("cuProfilerStart");
  ASSERT_NE(profiler_start, nullptr);
  EXPECT_EQ(profiler_start(), 500);
  EXPECT_EQ(profiler_start(), 500);
}

}  // namespace
