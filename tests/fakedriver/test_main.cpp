// The fake reads STREAMPOOL_FAKE_DEVICES / STREAMPOOL_FAKE_MEMORY once per process, so the tests run
// under a fixed configuration set here before anything touches the driver. Tests of other settings
// re-run this binary in a mode that only reports what the fake saw.
#include <cuda.h>
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>
#include <string>

#include "fake_test_support.hpp"

namespace {

constexpr const char* kReportMode = "--report-fake-config";
constexpr const char* kDelayMode = "--report-fake-delay";
constexpr const char* kTraceMode = "--make-traced-calls";
constexpr const char* kContextReuseMode = "--report-context-reuse";

int report_fake_config() {
  const CUresult init = cuInit(0);
  int devices = 0;
  size_t total = 0;
  if (init == CUDA_SUCCESS) {
    cuDeviceGetCount(&devices);
    cuDeviceTotalMem(&total, 0);
  }
  std::printf("init=%d devices=%d memory=%zu\n", static_cast<int>(init), devices, total);
  return 0;
}

// How long cuDriverGetVersion took, in microseconds (delays_test.cpp sets a delay for it).
int report_fake_delay() {
  int version = 0;
  const auto start = std::chrono::steady_clock::now();
  cuDriverGetVersion(&version);
  const auto took = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start);
  std::printf("took_us=%lld\n", static_cast<long long>(took.count()));
  return 0;
}

// A few calls for trace_test.cpp to find in the trace: one answered, one failing, a symbol looked up,
// an export table asked for and a NOT_SUPPORTED stand-in called.
int make_traced_calls() {
  cuInit(0);
  int version = 0;
  cuDriverGetVersion(&version);
  cuDeviceGetCount(nullptr);
  void* function = nullptr;
  CUdriverProcAddressQueryResult status{};
  cuGetProcAddress_v2("cuMemAlloc", &function, 13000, 0, &status);
  const void* table = nullptr;
  const CUuuid validity = {{'\xd4', '\x08', '\x20', '\x55', '\xbd', '\xe6', '\x70', '\x4b', '\x8d', '\x34', '\xba',
                            '\x12', '\x3c', '\x66', '\xe1', '\xf2'}};
  cuGetExportTable(&table, &validity);
  cuGetProcAddress_v2("cuMipmappedArrayGetSparseProperties", &function, 13000, 0, &status);
  if (function != nullptr) reinterpret_cast<int (*)()>(function)();
  return 0;
}

// A context on device 0 destroyed, then one created on the last device: whether it got the old
// handle, the device the handle now names, and what a third create gets, and what a query of the old
// context's event answers (handles_test.cpp).
int report_context_reuse() {
  int devices = 0;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGetCount(&devices) != CUDA_SUCCESS) return 1;
  CUcontext first = nullptr;
  CUcontext second = nullptr;
  CUcontext third = nullptr;
  CUevent event = nullptr;
  if (cuCtxCreate_v4(&first, nullptr, 0, 0) != CUDA_SUCCESS || cuEventCreate(&event, 0) != CUDA_SUCCESS ||
      cuCtxDestroy_v2(first) != CUDA_SUCCESS) {
    return 1;
  }
  const CUresult stale = cuCtxPushCurrent_v2(first);
  const CUresult event_after = cuEventQuery(event);
  if (cuCtxCreate_v4(&second, nullptr, 0, devices - 1) != CUDA_SUCCESS) return 1;
  CUdevice device = -1;
  if (cuCtxGetDevice(&device) != CUDA_SUCCESS) return 1;
  if (cuCtxCreate_v4(&third, nullptr, 0, 0) != CUDA_SUCCESS) return 1;
  std::printf("stale=%d reused=%d device=%d third_new=%d event=%d\n", static_cast<int>(stale), second == first ? 1 : 0,
              static_cast<int>(device), third != first ? 1 : 0, static_cast<int>(event_after));
  return 0;
}

}  // namespace

namespace fake_test {

std::string run_self_with_environment(const std::string& environment, const std::string& mode) {
  const std::string command = "env -u STREAMPOOL_FAKE_DEVICES -u STREAMPOOL_FAKE_MEMORY " + environment +
                              " /proc/" + std::to_string(getpid()) + "/exe " + mode;
  std::string output;
  if (FILE* pipe = popen(command.c_str(), "r"); pipe != nullptr) {
    std::array<char, 256> buffer{};
    while (std::fgets(buffer.data(), static_cast<int>(buffer.size()), pipe) != nullptr) output += buffer.data();
    pclose(pipe);
  }
  return output;
}

}  // namespace fake_test

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], kReportMode) == 0) return report_fake_config();
  if (argc > 1 && std::strcmp(argv[1], kDelayMode) == 0) return report_fake_delay();
  if (argc > 1 && std::strcmp(argv[1], kTraceMode) == 0) return make_traced_calls();
  if (argc > 1 && std::strcmp(argv[1], kContextReuseMode) == 0) return report_context_reuse();
  setenv("STREAMPOOL_FAKE_DEVICES", std::to_string(fake_test::kDevices).c_str(), 1);
  setenv("STREAMPOOL_FAKE_MEMORY", "1G", 1);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
