// Pools shared between processes, between real processes: this program exports, and runs itself
// again (fork + exec) as the importer (DISABLED_IpcImporter.Run), passing the pool's descriptor
// over a unix socket with SCM_RIGHTS, as NVIDIA's streamOrderedAllocationIPC sample does. The
// importer's results come back over the same socket. Runs on NVIDIA's driver alone and under
// streampool (where the child is preloaded too: LD_PRELOAD is inherited).
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "conformance.hpp"
#include "fd_passing.hpp"

namespace conformance {
namespace {

using streampool_test::receive_with_fd;
using streampool_test::send_with_fd;

// What the importer is asked to do, and what it found.
struct Order {
  unsigned char data[2][64] = {};  // [0]: an allocation of the shared pool; [1]: of another pool
  unsigned char fill = 0;
};
struct Findings {
  CUresult import_pool = CUDA_ERROR_UNKNOWN;
  CUresult import_pointer = CUDA_ERROR_UNKNOWN;
  CUresult import_other_pools_data = CUDA_ERROR_UNKNOWN;
  CUresult allocate_from_imported = CUDA_ERROR_UNKNOWN;
  CUresult copy = CUDA_ERROR_UNKNOWN;
  CUresult write_back = CUDA_ERROR_UNKNOWN;
  CUresult free_imported = CUDA_ERROR_UNKNOWN;
  unsigned char seen = 0;
};



CUmemPoolProps shareable_props() {
  CUmemPoolProps props = device_pool_props();
  props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  return props;
}

TEST(Ipc, DeviceSupportsPosixFileDescriptorPools) {
  int handle_types = 0;
  CU_ASSERT_OK(cuDeviceGetAttribute(&handle_types, CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES, device()));
  EXPECT_NE(0, handle_types & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
}

TEST(Ipc, ExportWithAHandleTypeThePoolLacksIsRefused) {
  OwnedPool plain(device_pool_props());
  CU_ASSERT_OK(plain.status());
  int fd = -1;
  EXPECT_NE(CUDA_SUCCESS, cuMemPoolExportToShareableHandle(&fd, plain.get(), CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  EXPECT_EQ(-1, fd);
}

TEST(Ipc, AChildProcessImportsAnAllocationReadsItAndWritesBack) {
  OwnedPool pool(shareable_props());
  CU_ASSERT_OK(pool.status());
  OwnedPool other(shareable_props());
  CU_ASSERT_OK(other.status());
  CONFORMANCE_STREAM(stream);
  CUdeviceptr shared = 0;
  CUdeviceptr elsewhere = 0;
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&shared, 8 * kMiB, pool.get(), stream.get()));
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&elsewhere, kMiB, other.get(), stream.get()));
  Order order;
  order.fill = 0x5a;
  CU_ASSERT_OK(cuMemsetD8Async(shared, order.fill, 8 * kMiB, stream.get()));
  CU_ASSERT_OK(cuStreamSynchronize(stream.get()));
  int pool_fd = -1;
  CU_ASSERT_OK(cuMemPoolExportToShareableHandle(&pool_fd, pool.get(), CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  CUmemPoolPtrExportData data{};
  CU_ASSERT_OK(cuMemPoolExportPointer(&data, shared));
  std::memcpy(order.data[0], data.reserved, 64);
  // NVIDIA's driver exports a pointer only of a pool exported already (measured, driver 580).
  int other_fd = -1;
  CU_ASSERT_OK(cuMemPoolExportToShareableHandle(&other_fd, other.get(), CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  close(other_fd);
  CU_ASSERT_OK(cuMemPoolExportPointer(&data, elsewhere));
  std::memcpy(order.data[1], data.reserved, 64);

  int ends[2] = {-1, -1};
  ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends));
  ASSERT_TRUE(send_with_fd(ends[0], &order, sizeof order, pool_fd));
  close(pool_fd);
  const int child_end = dup(ends[1]);  // inherited across exec
  const pid_t child = fork();
  if (child == 0) {
    setenv("CONFORMANCE_IPC_SOCKET", std::to_string(child_end).c_str(), 1);
    execl("/proc/self/exe", "importer", "--gtest_filter=DISABLED_IpcImporter.Run", "--gtest_also_run_disabled_tests",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  close(child_end);
  close(ends[1]);
  int status = 0;
  ASSERT_EQ(child, waitpid(child, &status, 0));
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the importer failed";
  Findings findings;
  ASSERT_TRUE(receive_with_fd(ends[0], &findings, sizeof findings, nullptr));
  close(ends[0]);

  EXPECT_EQ(CUDA_SUCCESS, findings.import_pool);
  EXPECT_EQ(CUDA_SUCCESS, findings.import_pointer);
  EXPECT_NE(CUDA_SUCCESS, findings.import_other_pools_data);
  EXPECT_NE(CUDA_SUCCESS, findings.allocate_from_imported);
  EXPECT_EQ(CUDA_SUCCESS, findings.copy);
  EXPECT_EQ(order.fill, findings.seen);
  EXPECT_EQ(CUDA_SUCCESS, findings.write_back);
  EXPECT_EQ(CUDA_SUCCESS, findings.free_imported);
  if (under_streampool()) {
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, findings.import_other_pools_data);
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, findings.allocate_from_imported);
  }
  unsigned char first = 0;
  CU_EXPECT_OK(cuMemcpyDtoH(&first, shared, 1));
  EXPECT_EQ(0xa5, first);  // the importer's write
  CU_EXPECT_OK(cuMemFreeAsync(shared, stream.get()));
  CU_EXPECT_OK(cuMemFreeAsync(elsewhere, stream.get()));
  CU_EXPECT_OK(cuStreamSynchronize(stream.get()));
}

}  // namespace

// The importer, run as a child by the test above (never on its own: DISABLED_).
TEST(DISABLED_IpcImporter, Run) {
  const char* socket_name = std::getenv("CONFORMANCE_IPC_SOCKET");
  ASSERT_NE(nullptr, socket_name);
  const int socket = std::atoi(socket_name);
  Order order;
  int pool_fd = -1;
  ASSERT_TRUE(receive_with_fd(socket, &order, sizeof order, &pool_fd));
  Findings findings;
  CUmemoryPool pool = nullptr;
  findings.import_pool = cuMemPoolImportFromShareableHandle(
      &pool, reinterpret_cast<void*>(static_cast<std::intptr_t>(pool_fd)), CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
  close(pool_fd);
  if (findings.import_pool == CUDA_SUCCESS) {
    CONFORMANCE_STREAM(stream);
    CUmemPoolPtrExportData data{};
    CUdeviceptr other = 0;
    std::memcpy(data.reserved, order.data[1], 64);
    findings.import_other_pools_data = cuMemPoolImportPointer(&other, pool, &data);
    CUdeviceptr allocated = 0;
    findings.allocate_from_imported = cuMemAllocFromPoolAsync(&allocated, kMiB, pool, stream.get());
    CUdeviceptr imported = 0;
    std::memcpy(data.reserved, order.data[0], 64);
    findings.import_pointer = cuMemPoolImportPointer(&imported, pool, &data);
    if (findings.import_pointer == CUDA_SUCCESS) {
      findings.copy = cuMemcpyDtoH(&findings.seen, imported + 8 * kMiB - 1, 1);
      findings.write_back = cuMemsetD8Async(imported, 0xa5, 1, stream.get());
      findings.free_imported = cuMemFreeAsync(imported, stream.get());  // before the exporter frees
      CU_EXPECT_OK(cuStreamSynchronize(stream.get()));
    }
    CU_EXPECT_OK(cuMemPoolDestroy(pool));
  }
  ASSERT_TRUE(send_with_fd(socket, &findings, sizeof findings, -1));
}

}  // namespace conformance
