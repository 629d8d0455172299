// Modules: the loading mode NVIDIA's cudart 13 asks for at start.
#include <cstdlib>

#include "fake_test_support.hpp"

namespace fake_test {
namespace {

TEST(ModuleLoadingModeTest, LazyUnlessTheEnvironmentAsksForEager) {
  CUmoduleLoadingMode mode{};
  unsetenv("CUDA_MODULE_LOADING");
  ASSERT_EQ(cuModuleGetLoadingMode(&mode), CUDA_SUCCESS);
  EXPECT_EQ(mode, CU_MODULE_LAZY_LOADING);

  setenv("CUDA_MODULE_LOADING", "EAGER", 1);
  ASSERT_EQ(cuModuleGetLoadingMode(&mode), CUDA_SUCCESS);
  EXPECT_EQ(mode, CU_MODULE_EAGER_LOADING);
  unsetenv("CUDA_MODULE_LOADING");

  EXPECT_EQ(cuModuleGetLoadingMode(nullptr), CUDA_ERROR_INVALID_VALUE);
}

}  // namespace
}  // namespace fake_test
