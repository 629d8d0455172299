// Devices and the fake's configuration.
#include <cstring>
#include <string>

#include "fake_test_support.hpp"

namespace fake_test {
namespace {

using DevicesTest = FakeDriverTest;

TEST_F(DevicesTest, DeviceCountAndMemoryFollowTheEnvironment) {
  int count = 0;
  size_t total = 0;
  ASSERT_EQ(cuDeviceGetCount(&count), CUDA_SUCCESS);
  ASSERT_EQ(cuDeviceTotalMem(&total, 2), CUDA_SUCCESS);
  EXPECT_EQ(count, kDevices);
  EXPECT_EQ(total, kMemoryPerDevice);
}

TEST(FakeConfigTest, DefaultsAreOneDeviceOfSixteenGibibytes) {
  EXPECT_EQ(run_self_with_environment("", "--report-fake-config"),
            "init=0 devices=1 memory=17179869184\n");
}

TEST(FakeConfigTest, MemoryAcceptsBinarySuffixes) {
  EXPECT_EQ(run_self_with_environment("STREAMPOOL_FAKE_MEMORY=64M STREAMPOOL_FAKE_DEVICES=2", "--report-fake-config"),
            "init=0 devices=2 memory=67108864\n");
  EXPECT_EQ(run_self_with_environment("STREAMPOOL_FAKE_MEMORY=3k", "--report-fake-config"),
            "init=0 devices=1 memory=3072\n");
}

// stderr before stdout: the warning is written when cuInit reads the settings, the report at exit.
TEST(FakeConfigTest, AMemorySettingThatIsNotASizeIsOneLineAndTheDefault) {
  EXPECT_EQ(run_self_with_environment("STREAMPOOL_FAKE_MEMORY=lots", "--report-fake-config 2>&1"),
            "streampool: warn: bad STREAMPOOL_FAKE_MEMORY value 'lots' (expected bytes per device, more than 0, with an "
            "optional K, M, G or T suffix): 16G per device\n"
            "init=0 devices=1 memory=17179869184\n");
}

TEST(FakeConfigTest, ADeviceCountThatIsNotANumberIsOneLineAndOneDevice) {
  EXPECT_EQ(run_self_with_environment("STREAMPOOL_FAKE_DEVICES=two", "--report-fake-config 2>&1"),
            "streampool: warn: bad STREAMPOOL_FAKE_DEVICES value 'two' (expected a number of devices from 0 to 64): "
            "1 device\n"
            "init=0 devices=1 memory=17179869184\n");
}

TEST(FakeConfigTest, GoodSettingsSayNothing) {
  EXPECT_EQ(run_self_with_environment("STREAMPOOL_FAKE_MEMORY=64M STREAMPOOL_FAKE_DEVICES=2", "--report-fake-config 2>&1"),
            "init=0 devices=2 memory=67108864\n");
}

TEST(FakeConfigTest, ZeroDevicesMakesInitFailWithNoDevice) {
  EXPECT_EQ(run_self_with_environment("STREAMPOOL_FAKE_DEVICES=0", "--report-fake-config"),
            "init=100 devices=0 memory=0\n");
}

TEST_F(DevicesTest, InvalidOrdinalIsInvalidDevice) {
  CUdevice device = 0;
  char name[64];
  EXPECT_EQ(cuDeviceGet(&device, kDevices), CUDA_ERROR_INVALID_DEVICE);
  EXPECT_EQ(cuDeviceGet(&device, -1), CUDA_ERROR_INVALID_DEVICE);
  EXPECT_EQ(cuDeviceGetName(name, sizeof(name), kDevices), CUDA_ERROR_INVALID_DEVICE);
}

TEST_F(DevicesTest, NameIsTheFakeDevice) {
  char name[64] = {};
  ASSERT_EQ(cuDeviceGetName(name, sizeof(name), 1), CUDA_SUCCESS);
  EXPECT_STREQ(name, "streampool fake device");
}

TEST_F(DevicesTest, AttributesDescribeAComputeCapabilityNineDeviceWithVmmButNoNativePools) {
  auto attribute = [](CUdevice_attribute which) {
    int value = -1;
    EXPECT_EQ(cuDeviceGetAttribute(&value, which, 0), CUDA_SUCCESS);
    return value;
  };
  EXPECT_EQ(attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR), 9);
  EXPECT_EQ(attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR), 0);
  EXPECT_EQ(attribute(CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING), 1);
  EXPECT_EQ(attribute(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED), 0);
  EXPECT_EQ(attribute(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED), 1);
  EXPECT_EQ(attribute(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED), 1);
  EXPECT_EQ(attribute(CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS), 1);
  int value = 0;
  EXPECT_EQ(cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_MAX, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuDeviceGetAttribute(&value, static_cast<CUdevice_attribute>(0), 0), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(DevicesTest, DistinctDevicesArePeersButADeviceIsNotItsOwnPeer) {
  int across = 0;
  int itself = 1;
  ASSERT_EQ(cuDeviceCanAccessPeer(&across, 0, 1), CUDA_SUCCESS);
  ASSERT_EQ(cuDeviceCanAccessPeer(&itself, 1, 1), CUDA_SUCCESS);
  EXPECT_EQ(across, 1);
  EXPECT_EQ(itself, 0);
}

TEST_F(DevicesTest, UuidsAndBusIdsAreDistinctPerDeviceAndRoundTrip) {
  CUuuid first{};
  CUuuid second{};
  ASSERT_EQ(cuDeviceGetUuid(&first, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuDeviceGetUuid(&second, 2), CUDA_SUCCESS);
  char bus_id[32] = {};
  ASSERT_EQ(cuDeviceGetPCIBusId(bus_id, sizeof(bus_id), 2), CUDA_SUCCESS);
  CUdevice found = -1;
  ASSERT_EQ(cuDeviceGetByPCIBusId(&found, bus_id), CUDA_SUCCESS);

  EXPECT_NE(std::memcmp(first.bytes, second.bytes, sizeof(first.bytes)), 0);
  EXPECT_EQ(found, 2);
}

TEST_F(DevicesTest, EachDeviceAccountsItsOwnMemory) {
  CUcontext second_device = nullptr;
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&second_device, 1), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxPushCurrent(second_device), CUDA_SUCCESS);
  CUdeviceptr buffer = 0;
  ASSERT_EQ(cuMemAlloc(&buffer, 32 << 20), CUDA_SUCCESS);
  size_t free_on_second = 0;
  size_t total = 0;
  ASSERT_EQ(cuMemGetInfo(&free_on_second, &total), CUDA_SUCCESS);
  int ordinal = -1;
  ASSERT_EQ(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, buffer), CUDA_SUCCESS);
  CUcontext popped = nullptr;
  ASSERT_EQ(cuCtxPopCurrent(&popped), CUDA_SUCCESS);
  size_t free_on_first = 0;
  ASSERT_EQ(cuMemGetInfo(&free_on_first, &total), CUDA_SUCCESS);

  EXPECT_EQ(popped, second_device);
  EXPECT_EQ(ordinal, 1);
  EXPECT_EQ(total - free_on_second, std::size_t{32} << 20);
  EXPECT_EQ(free_on_first, total);
  cuMemFree(buffer);
  cuDevicePrimaryCtxRelease(1);
}

TEST(FakeDriverVersionTest, DriverVersionIsThirteen) {
  int version = 0;
  ASSERT_EQ(cuDriverGetVersion(&version), CUDA_SUCCESS);
  EXPECT_EQ(version, 13000);
}

TEST(FakeErrorNamesTest, ErrorNamesAndStringsAreCudas) {
  const char* name = nullptr;
  const char* text = nullptr;
  ASSERT_EQ(cuGetErrorName(CUDA_ERROR_INVALID_HANDLE, &name), CUDA_SUCCESS);
  ASSERT_EQ(cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &text), CUDA_SUCCESS);
  EXPECT_STREQ(name, "CUDA_ERROR_INVALID_HANDLE");
  EXPECT_STREQ(text, "out of memory");
  EXPECT_EQ(cuGetErrorName(static_cast<CUresult>(998), &name), CUDA_ERROR_INVALID_VALUE);
}

}  // namespace
}  // namespace fake_test
