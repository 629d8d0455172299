// Entry point of conformance_tests: initialises the driver once and makes device 0's primary
// context current for every test (the real driver is shared by all tests in the process).
#include "conformance.hpp"

#include <cstdio>

namespace {

class DriverEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    CU_ASSERT_OK(cuInit(0));
    CUdevice dev = 0;
    CU_ASSERT_OK(cuDeviceGet(&dev, 0));
    ASSERT_EQ(conformance::device(), dev);
    CU_ASSERT_OK(cuDevicePrimaryCtxRetain(&context_, dev));
    CU_ASSERT_OK(cuCtxSetCurrent(context_));
    char name[256] = {};
    (void)cuDeviceGetName(name, sizeof name, dev);
    int version = 0;
    (void)cuDriverGetVersion(&version);
    std::printf("conformance: device 0 \"%s\", driver API %d, %s\n", name, version,
                conformance::under_streampool() ? "under streampool" : "NVIDIA's driver alone");
  }

 private:
  CUcontext context_ = nullptr;
};

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new DriverEnvironment);
  return RUN_ALL_TESTS();
}
