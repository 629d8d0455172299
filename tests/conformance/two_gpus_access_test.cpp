// Peer access to a device-0 pool (cuMemPoolSetAccess): device 1 writes what it was granted,
// device 0 reads it back; the grant reaches memory the pool maps later; a revocation is reported,
// and a later grant reaches everything again; a kernel of the revoked device faults (in a process
// of its own, since a fault ends the context it happened in).
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "two_gpus.hpp"

namespace conformance::two_gpus {
namespace {

constexpr std::size_t kWords = kMiB / sizeof(std::uint32_t);

class TwoGpusAccess : public TwoGpusTest, public ::testing::WithParamInterface<Writer> {
 protected:
  void SetUp() override {
    TwoGpusTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    require_writer(GetParam());
  }

  // Device 1 writes `pattern` into `words` words at `data`; device 0 reads them back on s0.
  std::string written_by_device1_and_read_by_device0(CUstream s0, CUstream s1, CUdeviceptr data, std::size_t words,
                                                     std::uint32_t pattern) {
    CUresult result = enqueue_write(GetParam(), context1_, s1, data, words, pattern);
    if (result == CUDA_SUCCESS) {
      ScopedContext scope(context1_);
      result = cuStreamSynchronize(s1);
    }
    if (result != CUDA_SUCCESS) return "device 1's write failed: " + ::testing::PrintToString(result);
    std::vector<std::uint32_t> read_back;
    result = read_words(s0, data, words, &read_back);
    if (result != CUDA_SUCCESS) return "device 0's read failed: " + ::testing::PrintToString(result);
    return mismatch(read_back, pattern);
  }
};

TEST_P(TwoGpusAccess, AGrantedDeviceWritesADevice0PoolAndDevice0ReadsItBack) {
  CONFORMANCE_KEEP_ALL_POOL(pool, 0);
  CONFORMANCE_STREAM(s0);
  ContextStream s1(context1_);
  CU_ASSERT_OK(s1.status());
  CUdeviceptr data = 0;
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&data, kMiB, pool.get(), s0.get()));
  CU_ASSERT_OK(cuMemsetD32Async(data, 0, kWords, s0.get()));
  CU_ASSERT_OK(cuStreamSynchronize(s0.get()));  // mapped and zeroed before the grant

  CUmemAccessDesc grant = access_for(1, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  CU_ASSERT_OK(cuMemPoolSetAccess(pool.get(), &grant, 1));

  EXPECT_EQ(CU_MEM_ACCESS_FLAGS_PROT_READWRITE, pool_access(pool.get(), 1));
  EXPECT_EQ("", written_by_device1_and_read_by_device0(s0.get(), s1.get(), data, kWords, kOldPattern));
  CU_EXPECT_OK(cuMemFreeAsync(data, s0.get()));
}

TEST_P(TwoGpusAccess, MemoryThePoolMapsAfterTheGrantIsReachableToo) {
  CONFORMANCE_KEEP_ALL_POOL(pool, 0);
  CONFORMANCE_STREAM(s0);
  ContextStream s1(context1_);
  CU_ASSERT_OK(s1.status());
  CUmemAccessDesc grant = access_for(1, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  CU_ASSERT_OK(cuMemPoolSetAccess(pool.get(), &grant, 1));  // the pool has mapped nothing yet

  CUdeviceptr first = 0;
  CUdeviceptr grown = 0;  // 96 MiB: beyond the first growth chunk of either implementation
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&first, kMiB, pool.get(), s0.get()));
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&grown, 96 * kMiB, pool.get(), s0.get()));
  CU_ASSERT_OK(cuStreamSynchronize(s0.get()));

  EXPECT_EQ("", written_by_device1_and_read_by_device0(s0.get(), s1.get(), first, kWords, kOldPattern));
  EXPECT_EQ("", written_by_device1_and_read_by_device0(s0.get(), s1.get(), grown, kWords, kNewPattern));
  EXPECT_EQ("", written_by_device1_and_read_by_device0(s0.get(), s1.get(), grown + 95 * kMiB, kWords, kOldPattern));
  CU_EXPECT_OK(cuMemFreeAsync(first, s0.get()));
  CU_EXPECT_OK(cuMemFreeAsync(grown, s0.get()));
}

TEST_P(TwoGpusAccess, ARevocationIsReportedAndAGrantAfterItReachesEverythingAgain) {
  CONFORMANCE_KEEP_ALL_POOL(pool, 0);
  CONFORMANCE_STREAM(s0);
  ContextStream s1(context1_);
  CU_ASSERT_OK(s1.status());
  CUmemAccessDesc grant = access_for(1, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  CUmemAccessDesc revoke = access_for(1, CU_MEM_ACCESS_FLAGS_PROT_NONE);
  CUdeviceptr before = 0;
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&before, kMiB, pool.get(), s0.get()));
  CU_ASSERT_OK(cuStreamSynchronize(s0.get()));
  CU_ASSERT_OK(cuMemPoolSetAccess(pool.get(), &grant, 1));
  ASSERT_EQ("", written_by_device1_and_read_by_device0(s0.get(), s1.get(), before, kWords, kOldPattern));

  CU_ASSERT_OK(cuMemPoolSetAccess(pool.get(), &revoke, 1));
  EXPECT_EQ(CU_MEM_ACCESS_FLAGS_PROT_NONE, pool_access(pool.get(), 1));
  EXPECT_EQ(CU_MEM_ACCESS_FLAGS_PROT_READWRITE, pool_access(pool.get(), 0));  // the owner keeps its access
  CUdeviceptr between = 0;  // mapped while device 1 has no access
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&between, 64 * kMiB, pool.get(), s0.get()));
  CU_ASSERT_OK(cuStreamSynchronize(s0.get()));

  CU_ASSERT_OK(cuMemPoolSetAccess(pool.get(), &grant, 1));
  EXPECT_EQ(CU_MEM_ACCESS_FLAGS_PROT_READWRITE, pool_access(pool.get(), 1));
  EXPECT_EQ("", written_by_device1_and_read_by_device0(s0.get(), s1.get(), before, kWords, kNewPattern));
  EXPECT_EQ("", written_by_device1_and_read_by_device0(s0.get(), s1.get(), between + 63 * kMiB, kWords, kNewPattern));
  CU_EXPECT_OK(cuMemFreeAsync(before, s0.get()));
  CU_EXPECT_OK(cuMemFreeAsync(between, s0.get()));
}

INSTANTIATE_TEST_SUITE_P(TwoGpus, TwoGpusAccess, ::testing::Values(Writer::kernel, Writer::memset),
                         [](const ::testing::TestParamInfo<Writer>& param_info) { return writer_name(param_info.param); });

// --- Revocation seen by a kernel ---------------------------------------------------------------
// The child's part runs only when the parent starts this binary again with
// --gtest_also_run_disabled_tests; it prints one verdict line and ends the process at once (the
// faulted context of device 1 cannot be torn down cleanly).
constexpr const char kChildTest[] = "TwoGpusRevocationChild.DISABLED_AKernelOfTheRevokedDeviceFaults";
constexpr const char kVerdict[] = "two-gpus-child verdict: ";

using TwoGpusRevocationChild = TwoGpusTest;

TEST_F(TwoGpusRevocationChild, DISABLED_AKernelOfTheRevokedDeviceFaults) {
  CONFORMANCE_KEEP_ALL_POOL(pool, 0);
  CONFORMANCE_STREAM(s0);
  ContextStream s1(context1_);
  CU_ASSERT_OK(s1.status());
  CUmemAccessDesc grant = access_for(1, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  CUmemAccessDesc revoke = access_for(1, CU_MEM_ACCESS_FLAGS_PROT_NONE);
  CUdeviceptr data = 0;
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&data, kMiB, pool.get(), s0.get()));
  CU_ASSERT_OK(cuMemsetD32Async(data, 0, kWords, s0.get()));
  CU_ASSERT_OK(cuStreamSynchronize(s0.get()));
  CU_ASSERT_OK(cuMemPoolSetAccess(pool.get(), &grant, 1));
  CU_ASSERT_OK(enqueue_write(Writer::kernel, context1_, s1.get(), data, kWords, kOldPattern));
  CUresult granted = CUDA_ERROR_UNKNOWN;
  {
    ScopedContext scope(context1_);
    granted = cuStreamSynchronize(s1.get());
  }
  CU_ASSERT_OK(granted) << " (device 1's kernel while it had access)";

  CU_ASSERT_OK(cuMemPoolSetAccess(pool.get(), &revoke, 1));
  const CUresult launched = enqueue_write(Writer::kernel, context1_, s1.get(), data, kWords, kNewPattern);
  CUresult revoked = launched;
  if (launched == CUDA_SUCCESS) {
    ScopedContext scope(context1_);
    revoked = cuStreamSynchronize(s1.get());
  }
  std::vector<std::uint32_t> read_back;
  const CUresult read = read_words(s0.get(), data, kWords, &read_back);
  const bool unchanged = read == CUDA_SUCCESS && mismatch(read_back, kOldPattern).empty();
  std::printf("%slaunch %s, synchronize %s, device 0 still reads the granted write: %s\n", kVerdict,
              ::testing::PrintToString(launched).c_str(), ::testing::PrintToString(revoked).c_str(),
              unchanged ? "yes" : "no");
  // Measured on driver 580 (two H200): the kernel faults (CUDA_ERROR_ILLEGAL_ADDRESS at the
  // synchronize), and the fault is sticky for the whole process, so device 0's read-back fails too:
  // what "still reads the granted write" says is reported, not judged.
  const bool faulted = revoked != CUDA_SUCCESS;
  std::printf("%s%s\n", kVerdict, faulted ? "PASS" : "FAIL");
  std::fflush(stdout);
  std::_Exit(faulted ? 0 : 1);
}

TEST(TwoGpusRevocation, AKernelOfADeviceWhoseAccessWasRevokedFaults) {
  int count = 0;
  CU_ASSERT_OK(cuDeviceGetCount(&count));
  if (count < 2) GTEST_SKIP() << "needs two devices; this driver has " << count;
  if (on_fake_driver()) GTEST_SKIP() << "the fake driver runs no kernels and does not enforce peer access";
  char self[PATH_MAX] = {};
  const ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
  ASSERT_GT(length, 0);
  // The child inherits the environment, LD_PRELOAD included: it runs on the same implementation.
  const std::string command = std::string("timeout -k 5 60 '") + self + "' --gtest_color=no --gtest_also_run_disabled_tests" +
                              " --gtest_filter=" + kChildTest + " 2>&1";
  std::fflush(stdout);
  FILE* child = popen(command.c_str(), "r");
  ASSERT_NE(child, nullptr);
  std::string output;
  char line[512];
  while (std::fgets(line, sizeof line, child) != nullptr) output += line;
  const int status = pclose(child);
  for (std::size_t start = 0; start < output.size();) {
    std::size_t end = output.find('\n', start);
    if (end == std::string::npos) end = output.size();
    std::printf("  child| %s\n", output.substr(start, end - start).c_str());
    start = end + 1;
  }
  EXPECT_NE(output.find(std::string(kVerdict) + "PASS"), std::string::npos) << "the child's output is above";
  EXPECT_EQ(0, status) << "the child's exit status (pclose)";
}

}  // namespace
}  // namespace conformance::two_gpus
