// Pools shared between processes, between real processes: this program exports, and runs itself
// again (fork + exec) as the importer (DISABLED_IpcImporter.Run), passing the pool's descriptor
// over a unix socket with SCM_RIGHTS, as NVIDIA's streamOrderedAllocationIPC sample does. The
// importer's results come back over the same socket. Runs on NVIDIA's driver alone and under
// streampool (where the child is preloaded too: LD_PRELOAD is inherited).
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
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

// The importer's stream-ordered free on a stream of a context it created, the primary current.
struct FreeOrder {
  unsigned char data[64] = {};
  unsigned char fill = 0;
};
struct FreeFindings {
  CUresult import_pointer = CUDA_ERROR_UNKNOWN;
  CUresult free_imported = CUDA_ERROR_UNKNOWN;
  CUresult synchronize = CUDA_ERROR_UNKNOWN;
  int free_returned_first = 0;  // the free returned while the stream's work before it still waited
  int copy_intact = 0;          // the copy queued before the free read the exporter's bytes
};

// Sends `order` with the pool's descriptor to DISABLED_IpcImporter.<test>, run as a child
// (fork + exec of this program), and receives what it found.
template <typename OrderT, typename FindingsT>
void run_importer(const char* test, const OrderT& order, int pool_fd, FindingsT* findings) {
  int ends[2] = {-1, -1};
  ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends));
  ASSERT_TRUE(send_with_fd(ends[0], &order, sizeof order, pool_fd));
  const int child_end = dup(ends[1]);  // inherited across exec
  const std::string filter = std::string("--gtest_filter=DISABLED_IpcImporter.") + test;
  const pid_t child = fork();
  if (child == 0) {
    setenv("CONFORMANCE_IPC_SOCKET", std::to_string(child_end).c_str(), 1);
    execl("/proc/self/exe", "importer", filter.c_str(), "--gtest_also_run_disabled_tests", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(child_end);
  close(ends[1]);
  int status = 0;
  ASSERT_EQ(child, waitpid(child, &status, 0));
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the importer failed or faulted";
  ASSERT_TRUE(receive_with_fd(ends[0], findings, sizeof *findings, nullptr));
  close(ends[0]);
}

// The importer's end of the socket and the pool it imports from the descriptor sent with `order`.
template <typename OrderT>
int receive_order(OrderT* order, CUmemoryPool* pool, CUresult* import_pool) {
  const char* socket_name = std::getenv("CONFORMANCE_IPC_SOCKET");
  if (socket_name == nullptr) return -1;
  const int socket = std::atoi(socket_name);
  int pool_fd = -1;
  if (!receive_with_fd(socket, order, sizeof *order, &pool_fd)) return -1;
  *import_pool = cuMemPoolImportFromShareableHandle(
      pool, reinterpret_cast<void*>(static_cast<std::intptr_t>(pool_fd)), CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
  close(pool_fd);
  return socket;
}

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

  Findings findings;
  run_importer("Run", order, pool_fd, &findings);
  close(pool_fd);
  if (HasFatalFailure()) return;

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

// The importer uses the block on a stream S of a context it created and frees it there while the
// primary context is current: the free is ordered on S, so the copy queued on S before it (held
// back until the free has returned) still reads the exporter's bytes.
TEST(Ipc, AnImportersFreeOnAStreamOfAnotherContextIsOrderedOnThatStream) {
  OwnedPool pool(shareable_props());
  CU_ASSERT_OK(pool.status());
  CONFORMANCE_STREAM(stream);
  CUdeviceptr shared = 0;
  CU_ASSERT_OK(cuMemAllocFromPoolAsync(&shared, 4 * kMiB, pool.get(), stream.get()));
  FreeOrder order;
  order.fill = 0x3b;
  CU_ASSERT_OK(cuMemsetD8Async(shared, order.fill, 4 * kMiB, stream.get()));
  CU_ASSERT_OK(cuStreamSynchronize(stream.get()));
  int pool_fd = -1;
  CU_ASSERT_OK(cuMemPoolExportToShareableHandle(&pool_fd, pool.get(), CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  CUmemPoolPtrExportData data{};
  CU_ASSERT_OK(cuMemPoolExportPointer(&data, shared));
  std::memcpy(order.data, data.reserved, 64);

  FreeFindings findings;
  run_importer("FreeOnACreatedContextsStream", order, pool_fd, &findings);
  close(pool_fd);
  if (HasFatalFailure()) return;

  EXPECT_EQ(CUDA_SUCCESS, findings.import_pointer);
  EXPECT_EQ(CUDA_SUCCESS, findings.free_imported);
  EXPECT_EQ(CUDA_SUCCESS, findings.synchronize);
  EXPECT_EQ(1, findings.free_returned_first);
  EXPECT_EQ(1, findings.copy_intact);
  CU_EXPECT_OK(cuMemFreeAsync(shared, stream.get()));
  CU_EXPECT_OK(cuStreamSynchronize(stream.get()));
}

// Holds a stream back until the program opens it (bounded: a free that waited for the stream
// would otherwise hang; it is then seen as not having returned first).
struct Gate {
  std::mutex mutex;
  std::condition_variable signal;
  bool opened = false;
  bool waited_for_program = false;
};

void CUDA_CB wait_at_gate(void* user) {
  auto* gate = static_cast<Gate*>(user);
  std::unique_lock<std::mutex> lock(gate->mutex);
  gate->waited_for_program = gate->signal.wait_for(lock, std::chrono::seconds(5), [gate] { return gate->opened; });
}

}  // namespace

// The importers, run as children by the tests above (never on their own: DISABLED_).
TEST(DISABLED_IpcImporter, FreeOnACreatedContextsStream) {
  FreeOrder order;
  CUmemoryPool pool = nullptr;
  CUresult import_pool = CUDA_ERROR_UNKNOWN;
  const int socket = receive_order(&order, &pool, &import_pool);
  ASSERT_GE(socket, 0);
  FreeFindings findings;
  if (import_pool == CUDA_SUCCESS) {
    CUcontext primary = nullptr;
    CU_ASSERT_OK(cuCtxGetCurrent(&primary));
    CUcontext created = nullptr;
    CU_ASSERT_OK(cuCtxCreate(&created, nullptr, 0, device()));  // now current
    CUstream stream = nullptr;
    CU_ASSERT_OK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    void* host = nullptr;
    CU_ASSERT_OK(cuMemAllocHost(&host, 4 * kMiB));  // pinned: the copy is queued, not done at once
    std::memset(host, 0, 4 * kMiB);
    CUmemPoolPtrExportData data{};
    std::memcpy(data.reserved, order.data, 64);
    CUdeviceptr imported = 0;
    findings.import_pointer = cuMemPoolImportPointer(&imported, pool, &data);
    if (findings.import_pointer == CUDA_SUCCESS) {
      Gate gate;
      CU_EXPECT_OK(cuLaunchHostFunc(stream, &wait_at_gate, &gate));
      CU_EXPECT_OK(cuMemcpyDtoHAsync(host, imported, 4 * kMiB, stream));
      CU_EXPECT_OK(cuCtxSetCurrent(primary));
      findings.free_imported = cuMemFreeAsync(imported, stream);
      {
        std::lock_guard<std::mutex> lock(gate.mutex);
        gate.opened = true;
      }
      gate.signal.notify_all();
      findings.synchronize = cuStreamSynchronize(stream);
      findings.free_returned_first = gate.waited_for_program ? 1 : 0;
      const auto* bytes = static_cast<const unsigned char*>(host);
      findings.copy_intact = 1;
      for (std::size_t i = 0; i < 4 * kMiB; ++i) {
        if (bytes[i] != order.fill) findings.copy_intact = 0;
      }
    }
    CU_EXPECT_OK(cuCtxSetCurrent(created));
    CU_EXPECT_OK(cuMemFreeHost(host));
    CU_EXPECT_OK(cuStreamDestroy(stream));
    CU_EXPECT_OK(cuCtxSetCurrent(primary));
    CU_EXPECT_OK(cuCtxDestroy(created));
    CU_EXPECT_OK(cuMemPoolDestroy(pool));
  }
  ASSERT_TRUE(send_with_fd(socket, &findings, sizeof findings, -1));
}

TEST(DISABLED_IpcImporter, Run) {
  Order order;
  CUmemoryPool pool = nullptr;
  Findings findings;
  const int socket = receive_order(&order, &pool, &findings.import_pool);
  ASSERT_GE(socket, 0);
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
