// The fake driver answers every cuGetProcAddress query NVIDIA's cudart 13 makes (the recorded list),
// so that programs built against either runtime start over it. Names streampool hooks are the
// exception where the fake lacks them (the pool family): its tests need a driver without them.
#include <cuda.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <string>

namespace {

TEST(FakeDriver, ResolvesEveryEntryPointCudart13Queries) {
  const char* path = std::getenv("STREAMPOOL_LIBCUDA");
  ASSERT_NE(path, nullptr);
  void* driver = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(driver, nullptr);
  auto get = reinterpret_cast<decltype(&cuGetProcAddress_v2)>(dlsym(driver, "cuGetProcAddress_v2"));
  ASSERT_NE(get, nullptr);
  std::set<std::string> hooked;
  std::ifstream hooked_file(STREAMPOOL_TEST_HOOKED_SYMBOLS);
  for (std::string line; std::getline(hooked_file, line);) hooked.insert(line.substr(0, line.find_first_of(" #")));
  std::ifstream queries(STREAMPOOL_TEST_QUERIES);
  std::string name;
  int version = 0;
  unsigned long long flags = 0;
  int count = 0;
  while (queries >> name >> version >> flags) {
    void* function = nullptr;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (hooked.contains(name)) continue;
    EXPECT_EQ(get(name.c_str(), &function, version, flags, &status), CUDA_SUCCESS) << name << " " << version;
    EXPECT_NE(function, nullptr) << name;
    ++count;
  }
  EXPECT_GT(count, 350);  // the list holds 439 queries, 68 of them of hooked names
}

}  // namespace
