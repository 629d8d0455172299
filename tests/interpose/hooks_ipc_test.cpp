// Pools shared between processes (cuMemPoolExportToShareableHandle and the three other IPC calls),
// between real processes: this test is the exporter; DISABLED_IpcImporter.Run, run as a child
// (fork + exec of this program), is the importer. The pool's descriptor and the export data go to
// the child over a unix socket (SCM_RIGHTS), and the child's findings come back the same way.
// The fake driver's VMM memory is memfd-backed, so both processes see the same bytes.
#include <fcntl.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <filesystem>
#include <thread>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include "fault_switch.hpp"
#include "fd_passing.hpp"
#include "hooks_test_api.hpp"
#include "sanitizer_build.hpp"
#include "streampool/streampool.h"

// getrandom, defined by this program: it comes before libc's for the preloaded library too. Armed,
// its next calls fail with the given errno, as a signal or a kernel without the call makes them.
namespace ipc_test_random {
std::atomic<int> failures{0};
std::atomic<int> failure_errno{0};
}  // namespace ipc_test_random

extern "C" ssize_t getrandom(void* buffer, size_t length, unsigned int flags) {
  if (ipc_test_random::failures.load() > 0) {
    ipc_test_random::failures.fetch_sub(1);
    errno = ipc_test_random::failure_errno.load();
    return -1;
  }
  return syscall(SYS_getrandom, buffer, length, flags);
}

// stat, defined by this program likewise: armed with a node number, the machine's host NUMA node
// of that number exists (streampool reads /sys/devices/system/node/nodeN), as on a machine with
// more nodes than the test machine may have; it is node 0's directory.
namespace ipc_test_numa {
std::atomic<int> extra_node{-1};
}  // namespace ipc_test_numa

extern "C" int stat(const char* path, struct stat* info) noexcept {  // as glibc declares it
  const int node = ipc_test_numa::extra_node.load();
  if (node >= 0 && std::string(path) == "/sys/devices/system/node/node" + std::to_string(node)) {
    return fstatat(AT_FDCWD, "/sys/devices/system/node/node0", info, 0);
  }
  return fstatat(AT_FDCWD, path, info, 0);
}

namespace {

using streampool_test::receive_with_fd;
using streampool_test::send_with_fd;

constexpr size_t kMiB = size_t{1} << 20;
constexpr int kMaxBlobs = 4;

// What the exporter asks of the importer.
enum ImportFlags : int {
  kImportTwice = 1,         // import each pointer a second time while the first is live
  kCrashAfterImport = 2,    // abort() once everything is imported, freeing nothing
  kWrongHandleType = 4,     // also try the import with a handle type other than POSIX fd
  kFreeBlocking = 8,        // free with cuMemFree instead of cuMemFreeAsync
  kOnDeviceOne = 16,        // work on device 1 alone (DISABLED_IpcImporterOnDeviceOne.Run)
  kFreeOnABareThread = 32,  // free from a thread that has no current context
};

struct Order {
  int count = 0;
  int flags = 0;
  unsigned char fill[kMaxBlobs] = {};  // what each allocation holds (verified, then overwritten)
  unsigned long long bytes[kMaxBlobs] = {};  // each allocation's size
  unsigned char data[kMaxBlobs][64] = {};
};

struct Report {
  int import_pool = -1;
  int wrong_handle_type = -1;
  int import_pointer[kMaxBlobs] = {-1, -1, -1, -1};
  int import_again[kMaxBlobs] = {-1, -1, -1, -1};
  int verified[kMaxBlobs] = {};  // 1: the bytes were the exporter's fill
  int last_byte[kMaxBlobs] = {};  // the allocation's last byte, as the importer reads it
  int free_pointer[kMaxBlobs] = {-1, -1, -1, -1};
  int allocate_from_imported = -1;
  int set_as_device_pool = -1;
  int export_imported = -1;
  int export_handle_types = -1;
  unsigned long long mapped_after_refusals = 0;  // the fake's mapped bytes after every refused import
  unsigned long long mapped_at_start = 0;
  unsigned long long physical_imports = 0;  // the fake's cuMemImportFromShareableHandle calls
  unsigned long long mapped_after_free = 0;  // the fake's mapped bytes once every import is freed
  unsigned long long charged_with_imports = ~0ull;  // device 0's charge to the importer's cap (none)
  int device_zero_active = -1;
  unsigned long long unmaps_by_free = 0;  // the fake's cuMemUnmap calls while the imports were freed
  unsigned long long address_frees_by_free = 0;  // and its cuMemAddressFree calls
  unsigned long long descriptors_before_imports = 0;  // open in the importer once its pool is imported
  unsigned long long descriptors_after_frees = 0;     // and once every imported pointer is freed
  unsigned long long descriptors_at_start = 0;        // open before the pool's import (its handle closed)
  unsigned long long descriptors_at_end = 0;          // and once the imported pool is destroyed  // device 0's primary context, once everything is freed (kOnDeviceOne)
  unsigned long long failed_while_importing = 0;  // calls STREAMPOOL_TEST_FAIL_WHILE_IMPORTING failed
  unsigned long long failed_while_freeing = 0;    // calls STREAMPOOL_TEST_FAIL_WHILE_FREEING failed
  unsigned long long host_functions_by_free = 0;  // the fake's cuLaunchHostFunc calls of the frees
  unsigned long long mapped_as_frees_return = ~0ull;  // the fake's mapped bytes once the free calls returned
  unsigned long long host_node_access[2] = {~0ull, ~0ull};  // the first import's access on host NUMA nodes 0 and 1
  unsigned long long set_access_calls_by_imports = 0;  // the fake's cuMemSetAccess calls of the pointer imports
};

// What the process cap charges this process on `device` (streampool_limit_info), ~0 if unknown.
unsigned long long cap_charged(int device) {
  using Info = int (*)(int, streampool_device_limit*);
  auto info = reinterpret_cast<Info>(hooks_test::streampool_symbol("streampool_limit_info"));
  streampool_device_limit figures{};
  figures.struct_size = sizeof figures;
  size_t free_bytes = 0, total_bytes = 0;
  (void)SP(cuMemGetInfo_v2)(&free_bytes, &total_bytes);  // the cap learns the devices, if not yet
  return info != nullptr && info(device, &figures) == 0 ? figures.charged : ~0ull;
}

unsigned long long fake_mapped_bytes() {
  using Live = void (*)(unsigned long long*, unsigned long long*, unsigned long long*, unsigned long long*);
  auto live = reinterpret_cast<Live>(dlsym(hooks_test::fake_driver(), "streampool_fake_vmm_live"));
  unsigned long long mapped = 0;
  if (live != nullptr) live(nullptr, &mapped, nullptr, nullptr);
  return mapped;
}



// How many descriptors this process has open.
size_t open_descriptors() {
  size_t count = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) ++count;
  return count;
}

// Waits up to two seconds for `done` (a pool's end may finish on its service thread).
template <class Condition>
bool eventually(Condition done) {
  for (int tries = 0; tries < 200; ++tries) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

class IpcHooks : public hooks_test::DriverTest {
 protected:
  CUmemoryPool create_pool(CUmemAllocationHandleType handle_types,
                           CUmemLocationType location_type = CU_MEM_LOCATION_TYPE_DEVICE, int location_id = 0) {
    CUmemPoolProps props{};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = location_type;
    props.location.id = location_type == CU_MEM_LOCATION_TYPE_DEVICE ? device : location_id;
    props.handleTypes = handle_types;
    CUmemoryPool pool = nullptr;
    EXPECT_EQ(SP(cuMemPoolCreate)(&pool, &props), CUDA_SUCCESS);
    return pool;
  }

  int export_pool(CUmemoryPool pool) {
    int fd = -1;
    EXPECT_EQ(SP(cuMemPoolExportToShareableHandle)(&fd, pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
              CUDA_SUCCESS);
    return fd;
  }

  CUdeviceptr allocate_filled(CUmemoryPool pool, size_t bytes, unsigned char fill) {
    CUdeviceptr pointer = 0;
    EXPECT_EQ(SP(cuMemAllocFromPoolAsync)(&pointer, bytes, pool, stream), CUDA_SUCCESS);
    EXPECT_EQ(SP(cuMemsetD8Async)(pointer, fill, bytes, stream), CUDA_SUCCESS);
    EXPECT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
    return pointer;
  }

  // A block over one physical allocation per granule: `parts` blocks of part_mib each grow the pool
  // granule by granule; freed, their ranges coalesce and serve the block. 0 if they did not.
  CUdeviceptr allocate_over_granules(CUmemoryPool pool, int parts, size_t part_mib, unsigned char fill) {
    std::vector<CUdeviceptr> grown(static_cast<size_t>(parts));
    for (CUdeviceptr& part : grown) part = allocate_filled(pool, part_mib * kMiB, 0);
    for (CUdeviceptr part : grown) EXPECT_EQ(SP(cuMemFreeAsync)(part, stream), CUDA_SUCCESS);
    CUdeviceptr whole = allocate_filled(pool, static_cast<size_t>(parts) * part_mib * kMiB, fill);
    return whole == grown.front() ? whole : 0;
  }

  CUmemPoolPtrExportData export_pointer(CUdeviceptr pointer) {
    CUmemPoolPtrExportData data{};
    EXPECT_EQ(SP(cuMemPoolExportPointer)(&data, pointer), CUDA_SUCCESS);
    return data;
  }

  // The size of a live allocation, as the pointer queries report it.
  static unsigned long long size_of(const CUmemPoolPtrExportData& data) {
    unsigned long long bytes = 0;
    std::memcpy(&bytes, data.reserved + 24, sizeof bytes);  // streampool's layout; 0 for others
    return bytes;
  }

  unsigned char first_byte(CUdeviceptr pointer) {
    unsigned char byte = 0;
    EXPECT_EQ(SP(cuMemcpyDtoH_v2)(&byte, pointer, 1), CUDA_SUCCESS);
    return byte;
  }

  // The end of a test: the descriptor, the exporter's blocks, the pool.
  void release(int fd, CUmemoryPool pool, const std::vector<CUdeviceptr>& blocks) {
    close(fd);
    for (CUdeviceptr block : blocks) EXPECT_EQ(SP(cuMemFreeAsync)(block, stream), CUDA_SUCCESS);
    EXPECT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
    EXPECT_EQ(SP(cuMemPoolDestroy)(pool), CUDA_SUCCESS);
  }

  // Runs the importer child on `pool_fd` with the given export data; its report, and its exit
  // status in *status (-1: it did not exit normally).
  Report run_importer(int pool_fd, const std::vector<CUmemPoolPtrExportData>& data,
                      const std::vector<unsigned char>& fills, int flags, int* status = nullptr,
                      const std::vector<std::string>& child_environment = {}) {
    Report report;
    int ends[2] = {-1, -1};
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends), 0);
    Order order;
    order.count = static_cast<int>(data.size());
    order.flags = flags;
    for (size_t i = 0; i < data.size(); ++i) {
      std::memcpy(order.data[i], data[i].reserved, 64);
      order.fill[i] = fills[i];
      order.bytes[i] = size_of(data[i]);
    }
    EXPECT_TRUE(send_with_fd(ends[0], &order, sizeof order, pool_fd));  // buffered until the child reads
    const int child_end = dup(ends[1]);  // without close-on-exec: the child inherits it
    std::vector<std::string> environment = child_environment;
    environment.push_back("STREAMPOOL_TEST_IPC_SOCKET=" + std::to_string(child_end));
    const int exit_status = hooks_test::run_child_test(
        (flags & kOnDeviceOne) ? "DISABLED_IpcImporterOnDeviceOne.Run" : "DISABLED_IpcImporter.Run", environment);
    close(child_end);
    close(ends[1]);
    if (status != nullptr) *status = exit_status;
    if (exit_status == 0) {
      EXPECT_TRUE(receive_with_fd(ends[0], &report, sizeof report, nullptr));
    }
    close(ends[0]);
    return report;
  }
};

TEST_F(IpcHooks, DeviceReportsPosixFileDescriptorPoolHandles) {
  int handle_types = 0;
  ASSERT_EQ(SP(cuDeviceGetAttribute)(&handle_types, CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES, device),
            CUDA_SUCCESS);
  EXPECT_EQ(handle_types, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
}

// Descriptor 0 is a descriptor like any other: a program that closed its standard input gets it
// for the export's socket or for the handle it is given, and the pool's end still shuts the socket.
TEST_F(IpcHooks, AnExportWorksWhereDescriptorZeroIsFree) {
  const int saved_stdin = dup(0);
  ASSERT_GE(saved_stdin, 0);
  CUmemoryPool first = create_pool(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  close(0);
  const int served = export_pool(first);  // the service's socket takes descriptor 0
  EXPECT_GT(served, 0);
  usleep(100 * 1000);  // the service thread waits for requests by now
  EXPECT_EQ(SP(cuMemPoolDestroy)(first), CUDA_SUCCESS);
  pollfd shut{served, POLLIN, 0};
  // At once: the service thread's own wake-up (a 1 s timeout) is not what ends it.
  EXPECT_EQ(poll(&shut, 1, 200), 1) << "the pool's end left its service socket open";
  close(served);
  EXPECT_TRUE(eventually([] { return fcntl(0, F_GETFD) == -1; })) << "the pool's end left descriptor 0 open";

  ASSERT_EQ(dup2(saved_stdin, 0), 0);
  CUmemoryPool second = create_pool(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  const int again = export_pool(second);  // serving now, on descriptors above 0
  close(0);
  int handle = -1;
  EXPECT_EQ(SP(cuMemPoolExportToShareableHandle)(&handle, second, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
            CUDA_SUCCESS);
  EXPECT_EQ(handle, 0);
  if (handle >= 0) close(handle);
  close(again);
  EXPECT_EQ(SP(cuMemPoolDestroy)(second), CUDA_SUCCESS);
  ASSERT_EQ(dup2(saved_stdin, 0), 0);
  close(saved_stdin);
}

// An exportable pool's sockets end with it: pools that come and go hold no descriptors.
TEST_F(IpcHooks, ADestroyedExportablePoolLeavesNoDescriptorOpen) {
  // Earlier tests' pools close their sockets as their service threads end: count once that settled.
  size_t before = open_descriptors();
  for (int steady = 0, tries = 0; steady < 3 && tries < 50; ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const size_t now = open_descriptors();
    steady = now == before ? steady + 1 : 0;
    before = now;
  }
  for (int round = 0; round < 3; ++round) {
    CUmemoryPool pool = create_pool(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    close(export_pool(pool));
    EXPECT_EQ(SP(cuMemPoolDestroy)(pool), CUDA_SUCCESS);
  }
  EXPECT_TRUE(eventually([&] { return open_descriptors() == before; }))
      << open_descriptors() - before << " descriptors more than before";
}

TEST_F(IpcHooks, ExportablePoolReportsItsHandleTypes) {
  CUmemoryPool pool = create_pool(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  EXPECT_EQ(static_cast<int>(pool_attribute(pool, 10) & 0xffffffffu), CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  EXPECT_EQ(SP(cuMemPoolDestroy)(pool), CUDA_SUCCESS);
}

TEST_F(IpcHooks, FabricAndWin32PoolsAreNotSupported) {
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = device;
  CUmemoryPool pool = nullptr;
  props.handleTypes = CU_MEM_HANDLE_TYPE_FABRIC;
  EXPECT_EQ(SP(cuMemPoolCreate)(&pool, &props), CUDA_ERROR_NOT_SUPPORTED);
  props.handleTypes = CU_MEM_HANDLE_TYPE_WIN32;
  EXPECT_EQ(SP(cuMemPoolCreate)(&pool, &props), CUDA_ERROR_NOT_SUPPORTED);
}

TEST_F(IpcHooks, ExportRefusesHandleTypesThePoolWasNotCreatedWith) {
  CUmemoryPool plain = create_pool(CU_MEM_HANDLE_TYPE_NONE);
  CUmemoryPool exportable = create_pool(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  int fd = -1;

  EXPECT_EQ(SP(cuMemPoolExportToShareableHandle)(&fd, plain, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(SP(cuMemPoolExportToShareableHandle)(&fd, exportable, CU_MEM_HANDLE_TYPE_WIN32, 0),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(SP(cuMemPoolExportToShareableHandle)(&fd, exportable, CU_MEM_HANDLE_TYPE_FABRIC, 0),
            CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(SP(cuMemPoolExportToShareableHandle)(&fd, exportable, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 1),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(SP(cuMemPoolExportToShareableHandle)(nullptr, exportable, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(fd, -1);
  EXPECT_EQ(SP(cuMemPoolDestroy)(plain), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuMemPoolDestroy)(exportable), CUDA_SUCCESS);
}

TEST_F(IpcHooks, ExportPointerRefusesPointersOfPoolsThatAreNotExportable) {
  CUmemoryPool plain = create_pool(CU_MEM_HANDLE_TYPE_NONE);
  CUdeviceptr pointer = allocate_filled(plain, kMiB, 1);
  CUmemPoolPtrExportData data{};

  EXPECT_EQ(SP(cuMemPoolExportPointer)(&data, pointer), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(SP(cuMemFreeAsync)(pointer, stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuMemPoolDestroy)(plain), CUDA_SUCCESS);
}

TEST_F(IpcHooks, AChildProcessImportsReadsAndWritesTheExportersMemory) {
  CUmemoryPool pool = create_pool(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CUdeviceptr small = allocate_filled(pool, 3 * kMiB + 100, 0x5a);
  CUdeviceptr large = allocate_filled(pool, 40 * kMiB, 0x3c);  // spans several physical allocations
  const int fd = export_pool(pool);

  Report report = run_importer(fd, {export_pointer(small), export_pointer(large)}, {0x5a, 0x3c}, 0);

  EXPECT_EQ(report.import_pool, CUDA_SUCCESS);
  EXPECT_EQ(report.import_pointer[0], CUDA_SUCCESS);
  EXPECT_EQ(report.import_pointer[1], CUDA_SUCCESS);
  EXPECT_EQ(report.verified[0], 1);
  EXPECT_EQ(report.verified[1], 1);
  EXPECT_EQ(report.free_pointer[0], CUDA_SUCCESS);
  EXPECT_EQ(report.free_pointer[1], CUDA_SUCCESS);
  EXPECT_EQ(first_byte(small), 0xa0);  // the child's write-back
  EXPECT_EQ(first_byte(large), 0xa1);
  // The exporter holds, and is charged for, the memory; the importer is charged nothing for it.
  EXPECT_EQ(report.charged_with_imports, 0u);
  EXPECT_GE(cap_charged(0), pool_attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT));
  close(fd);
  EXPECT_EQ(SP(cuMemFreeAsync)(small, stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuMemFreeAsync)(large, stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuMemPoolDestroy)(pool), CUDA_SUCCESS);
}

// 75 physical allocations (granule by granule growth) under one allocation: more than one batch
// of descriptors (64) crosses the socket, and the importer maps them back to back.
TEST_F(IpcHooks, AnAllocationOverManyPhysicalAllocationsIsImportedWhole) {
  CUmemoryPool pool = create_pool(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CUdeviceptr whole = allocate_over_granules(pool, 3, 50, 0x29);  // each part grows 25 granules
  ASSERT_NE(whole, 0u);
  ASSERT_EQ(SP(cuMemsetD8_v2)(whole + 150 * kMiB - 1, 0x2a, 1), CUDA_SUCCESS);  // the last byte differs
  const int fd = export_pool(pool);

  Report report = run_importer(fd, {export_pointer(whole)}, {0x29}, 0);

  EXPECT_EQ(report.import_pointer[0], CUDA_SUCCESS);
  EXPECT_EQ(report.verified[0], 1);
  EXPECT_EQ(report.last_byte[0], 0x2a);
  EXPECT_EQ(report.physical_imports, 75u);
  // Its free unmaps each of them and gives the reservation back (a driver may refuse to free a
  // reservation that still has mappings: each is unmapped first).
  EXPECT_EQ(report.unmaps_by_free, 75u);
  EXPECT_EQ(report.address_frees_by_free, 1u);
  EXPECT_EQ(first_byte(whole), 0xa0);
  close(fd);
  EXPECT_EQ(SP(cuMemFreeAsync)(whole, stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuMemPoolDestroy)(pool), CUDA_SUCCESS);
}

// A process that works on device 1 alone starts no context on device 0 by importing (on a GPU such
// a context holds hundreds of MiB of device 0's memory): the importer's mappings are made in the
// pool's device's context, here the current one. With two fake devices, which the fake reads at a
// process's first cuInit: the exporter and its importer are children.
TEST_F(IpcHooks, ImportingOnDeviceOneStartsNoContextOnDeviceZero) {
  EXPECT_EQ(hooks_test::run_child_test("DISABLED_IpcExporterOnDeviceOne.Run", {"STREAMPOOL_FAKE_DEVICES=2"}), 0);
}

class DISABLED_IpcExporterOnDeviceOne : public IpcHooks {
 protected:
  static int device_zero_active() {
    unsigned flags = 0;
    int active = -1;
    EXPECT_EQ(SP(cuDevicePrimaryCtxGetState)(0, &flags, &active), CUDA_SUCCESS);
    return active;
  }
};

TEST_F(DISABLED_IpcExporterOnDeviceOne, Run) {
  CUcontext one = nullptr;
  ASSERT_EQ(SP(cuDevicePrimaryCtxRetain)(&one, 1), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuCtxSetCurrent)(one), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuStreamDestroy_v2)(stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuStreamCreate)(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuDevicePrimaryCtxRelease_v2)(0), CUDA_SUCCESS);  // the fixture's: device 0 unused now
  ASSERT_EQ(device_zero_active(), 0);
  device = 1;
  CUmemoryPool pool = create_pool(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CUdeviceptr block = allocate_filled(pool, kMiB, 0x6b);
  const int fd = export_pool(pool);

  Report report = run_importer(fd, {export_pointer(block)}, {0x6b}, kOnDeviceOne);

  EXPECT_EQ(report.import_pointer[0], CUDA_SUCCESS);
  EXPECT_EQ(report.verified[0], 1);
  EXPECT_EQ(report.free_pointer[0], CUDA_SUCCESS);
  EXPECT_EQ(report.device_zero_active, 0) << "the import made device 0's primary context active";
  // The exporter's service thread maps nothing in, so borrows no context of, a device the pool is not on.
  EXPECT_EQ(device_zero_active(), 0) << "serving the import made the exporter's device 0 context active";
  EXPECT_EQ(first_byte(block), 0xa0);
  release(fd, pool, {block});
}

// A pool's first export makes the socket pair its importers ask through. Where the process has no
// two descriptors left for it, the export is refused and opens nothing; once descriptors are free
// again, the pool exports. In a child: the limit of descriptors is the whole process's.
TEST_F(IpcHooks, AnExportWithoutDescriptorsLeftForItsSocketsIsRefusedAndWorksOnceTheyAreFree) {
#ifdef STREAMPOOL_TEST_UNDER_ASAN
  // The address build runs UBSan too, whose vptr check reads memory through a pipe: with one
  // descriptor left it cannot, and reports a valid object as of the wrong type.
  GTEST_SKIP() << "UBSan's checks need free descriptors, which this test takes away";
#endif
  EXPECT_EQ(hooks_test::run_child_test("DISABLED_IpcExporterUnderADescriptorLimit.Run", {}), 0);
}

class DISABLED_IpcExporterUnderADescriptorLimit : public IpcHooks {};

TEST_F(DISABLED_IpcExporterUnderADescriptorLimit, Run) {
  CUmemoryPool pool = create_pool(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &saved), 0);
  rlimit lowered = saved;
  lowered.rlim_cur = open_descriptors() + 8;  // some numbers free below it
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &lowered), 0);
  // Every descriptor number below the limit taken but one: a socket pair needs two.
  std::vector<int> taken;
  for (int fd = dup(2); fd >= 0; fd = dup(2)) taken.push_back(fd);
  ASSERT_EQ(errno, EMFILE);
  ASSERT_FALSE(taken.empty());
  close(taken.back());
  taken.pop_back();
  int handle = -1;

  const CUresult refused = SP(cuMemPoolExportToShareableHandle)(&handle, pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
  const int spare = dup(2);  // the one number still free, if the refusal left it free
  const int beyond = dup(2);

  EXPECT_EQ(refused, CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(handle, -1);
  EXPECT_GE(spare, 0) << "the refused export kept a descriptor";
  EXPECT_EQ(beyond, -1);
  if (spare >= 0) close(spare);
  for (int fd : taken) close(fd);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &saved), 0);
  const int fd = export_pool(pool);
  EXPECT_GE(fd, 0);
  if (fd >= 0) close(fd);
  EXPECT_EQ(SP(cuMemPoolDestroy)(pool), CUDA_SUCCESS);
}

// An exportable pool's secret is drawn with getrandom (this program's own, below): a draw a signal
// interrupts is made again, and a pool whose draw fails otherwise is refused, not made with a
// secret nobody drew.
TEST_F(IpcHooks, AnExportablePoolsSecretIsDrawnAgainAfterAnInterruptedGetrandom) {
  ipc_test_random::failure_errno = EINTR;
  ipc_test_random::failures = 2;
  CUmemoryPool pool = create_pool(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  EXPECT_EQ(ipc_test_random::failures.load(), 0) << "the pool's creation drew no random bytes";
  ipc_test_random::failures = 0;
  ASSERT_NE(pool, nullptr);
  CUdeviceptr block = allocate_filled(pool, kMiB, 0x4e);
  const int fd = export_pool(pool);
  Report report = run_importer(fd, {export_pointer(block)}, {0x4e}, 0);
  EXPECT_EQ(report.import_pointer[0], CUDA_SUCCESS);
  EXPECT_EQ(report.verified[0], 1);
  release(fd, pool, {block});
}

TEST_F(IpcHooks, AnExportablePoolIsRefusedWhenGetrandomFails) {
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = device;
  props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  ipc_test_random::failure_errno = ENOSYS;
  ipc_test_random::failures = 1 << 20;  // every draw, as long as the test needs
  CUmemoryPool pool = nullptr;
  const CUresult refused = SP(cuMemPoolCreate)(&pool, &props);
  ipc_test_random::failures = 0;
  EXPECT_EQ(refused, CUDA_ERROR_OPERATING_SYSTEM);
  ASSERT_EQ(SP(cuMemPoolCreate)(&pool, &props), CUDA_SUCCESS);  // nothing of the refusal stays
  EXPECT_EQ(SP(cuMemPoolDestroy)(pool), CUDA_SUCCESS);
}

// An importer that closed its standard input gets descriptor 0 for the pool's handle, then for
// the sockets of its requests: each is a descriptor like any other, and each is closed again.
TEST_F(IpcHooks, AnImporterWithDescriptorZeroFreeImportsAndClosesWhatItOpened) {
  CUmemoryPool pool = create_pool(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CUdeviceptr first = allocate_filled(pool, kMiB, 0x33);
  CUdeviceptr second = allocate_filled(pool, kMiB, 0x34);
  const int fd = export_pool(pool);
  int status = -1;

  std::vector<unsigned char> fills = {0x33, 0x34};
  for (const char* when : {"before", "after"}) {  // closed before the pool's handle arrives, or after
    Report report = run_importer(fd, {export_pointer(first), export_pointer(second)}, fills, 0, &status,
                                 {std::string("STREAMPOOL_TEST_CLOSE_STDIN=") + when});

    ASSERT_EQ(status, 0) << when;
    EXPECT_EQ(report.import_pool, CUDA_SUCCESS) << when;
    for (int i = 0; i < 2; ++i) {
      EXPECT_EQ(report.import_pointer[i], CUDA_SUCCESS) << when << " " << i;
      EXPECT_EQ(report.verified[i], 1) << when << " " << i;
      EXPECT_EQ(report.free_pointer[i], CUDA_SUCCESS) << when << " " << i;
    }
    EXPECT_EQ(report.descriptors_after_frees, report.descriptors_before_imports) << when;
    EXPECT_EQ(report.descriptors_at_end, report.descriptors_at_start) << when;
    fills = {0xa0, 0xa1};  // what the importer wrote back
  }
  release(fd, pool, {first, second});
}

TEST_F(IpcHooks, AHostNumaPoolIsSharedToo) {
  CUmemoryPool pool = create_pool(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, CU_MEM_LOCATION_TYPE_HOST_NUMA, 0);
  CUdeviceptr pointer = allocate_filled(pool, kMiB, 0x77);
  const int fd = export_pool(pool);

  Report report = run_importer(fd, {export_pointer(pointer)}, {0x77}, 0);

  EXPECT_EQ(report.import_pointer[0], CUDA_SUCCESS);
  EXPECT_EQ(report.verified[0], 1);
  EXPECT_EQ(*reinterpret_cast<unsigned char*>(pointer), 0xa0);  // host memory: the CPU reads it directly
  close(fd);
  EXPECT_EQ(SP(cuMemFreeAsync)(pointer, stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuMemPoolDestroy)(pool), CUDA_SUCCESS);
}

TEST_F(IpcHooks, AnImportedPoolCannotAllocateNorBeExportedNorBecomeCurrent) {
  CUmemoryPool pool = create_pool(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  const int fd = export_pool(pool);

  Report report = run_importer(fd, {}, {}, kWrongHandleType);

  EXPECT_EQ(report.import_pool, CUDA_SUCCESS);
  EXPECT_EQ(report.wrong_handle_type, CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(report.allocate_from_imported, CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(report.set_as_device_pool, CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(report.export_imported, CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(report.export_handle_types, 0);
  close(fd);
  EXPECT_EQ(SP(cuMemPoolDestroy)(pool), CUDA_SUCCESS);
}

// Export data altered in any byte: the tag, the address, the size, the generation, the zero tail.
TEST_F(IpcHooks, ForgedExportDataIsRefusedAndMapsNothing) {
  CUmemoryPool pool = create_pool(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CUdeviceptr pointer = allocate_filled(pool, 4 * kMiB, 0x11);
  const CUmemPoolPtrExportData genuine = export_pointer(pointer);
  std::vector<CUmemPoolPtrExportData> forged(kMaxBlobs, genuine);
  forged[0].reserved[40] ^= 1;                 // the tag
  forged[1].reserved[16] = static_cast<unsigned char>(forged[1].reserved[16] + 0x40);  // the address, 64 bytes on
  forged[2].reserved[24] ^= 0x80;              // the size
  forged[3].reserved[32] ^= 1;                 // the generation
  const int fd = export_pool(pool);

  Report report = run_importer(fd, forged, {0x11, 0x11, 0x11, 0x11}, 0);

  EXPECT_EQ(report.import_pool, CUDA_SUCCESS);
  for (int i = 0; i < kMaxBlobs; ++i) EXPECT_EQ(report.import_pointer[i], CUDA_ERROR_INVALID_VALUE) << i;
  EXPECT_EQ(report.mapped_after_refusals, report.mapped_at_start);
  close(fd);
  EXPECT_EQ(SP(cuMemFreeAsync)(pointer, stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuMemPoolDestroy)(pool), CUDA_SUCCESS);
}

TEST_F(IpcHooks, TruncatedOrZeroedExportDataIsRefused) {
  CUmemoryPool pool = create_pool(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CUdeviceptr pointer = allocate_filled(pool, kMiB, 0x22);
  const CUmemPoolPtrExportData genuine = export_pointer(pointer);
  CUmemPoolPtrExportData first_half{};
  std::memcpy(first_half.reserved, genuine.reserved, 32);  // only the first 32 bytes arrived
  CUmemPoolPtrExportData tail_set = genuine;
  tail_set.reserved[63] = 1;
  const CUmemPoolPtrExportData zeroed{};
  const int fd = export_pool(pool);

  Report report = run_importer(fd, {first_half, tail_set, zeroed}, {0x22, 0x22, 0x22}, 0);

  EXPECT_EQ(report.import_pointer[0], CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(report.import_pointer[1], CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(report.import_pointer[2], CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(report.mapped_after_refusals, report.mapped_at_start);
  close(fd);
  EXPECT_EQ(SP(cuMemFreeAsync)(pointer, stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuMemPoolDestroy)(pool), CUDA_SUCCESS);
}

// Data of a freed allocation is stale, also once a new allocation took the same address.
TEST_F(IpcHooks, DataOfAFreedAllocationIsRefusedEvenWhenItsAddressIsReused) {
  CUmemoryPool pool = create_pool(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CUdeviceptr freed = allocate_filled(pool, kMiB, 0x33);
  const CUmemPoolPtrExportData stale = export_pointer(freed);
  ASSERT_EQ(SP(cuMemFreeAsync)(freed, stream), CUDA_SUCCESS);
  CUdeviceptr reused = allocate_filled(pool, kMiB, 0x44);
  ASSERT_EQ(reused, freed);  // same stream: the freed block is reused at once
  const CUmemPoolPtrExportData fresh = export_pointer(reused);
  const int fd = export_pool(pool);

  Report report = run_importer(fd, {stale, fresh}, {0x33, 0x44}, 0);

  EXPECT_EQ(report.import_pointer[0], CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(report.import_pointer[1], CUDA_SUCCESS);
  EXPECT_EQ(report.verified[1], 1);
  close(fd);
  EXPECT_EQ(SP(cuMemFreeAsync)(reused, stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuMemPoolDestroy)(pool), CUDA_SUCCESS);
}

// cuMemFree makes export data stale as cuMemFreeAsync does: the next owner of the address is not
// reachable through the old data.
TEST_F(IpcHooks, DataOfAnAllocationFreedWithCuMemFreeIsRefusedEvenWhenItsAddressIsReused) {
  CUmemoryPool pool = create_pool(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CUdeviceptr freed = allocate_filled(pool, kMiB, 0x34);
  const CUmemPoolPtrExportData stale = export_pointer(freed);
  ASSERT_EQ(SP(cuMemFree_v2)(freed), CUDA_SUCCESS);
  CUdeviceptr next_owner = allocate_filled(pool, kMiB, 0x45);
  ASSERT_EQ(next_owner, freed);
  const int fd = export_pool(pool);

  Report report = run_importer(fd, {stale}, {0x45}, 0);

  EXPECT_EQ(report.import_pointer[0], CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(report.mapped_after_refusals, report.mapped_at_start);
  EXPECT_EQ(first_byte(next_owner), 0x45);
  release(fd, pool, {next_owner});
}

// cuMemFree of an imported pointer waits for the importer's context, then gives its mapping back:
// an importer that imports and frees for days holds no more than it holds at once.
TEST_F(IpcHooks, AnImportedPointerFreedWithCuMemFreeIsUnmapped) {
  CUmemoryPool pool = create_pool(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CUdeviceptr pointer = allocate_filled(pool, kMiB, 0x17);
  const CUmemPoolPtrExportData data = export_pointer(pointer);
  const int fd = export_pool(pool);

  Report report = run_importer(fd, {data}, {0x17}, kFreeBlocking);

  EXPECT_EQ(report.import_pointer[0], CUDA_SUCCESS);
  EXPECT_EQ(report.free_pointer[0], CUDA_SUCCESS);
  EXPECT_GT(report.mapped_after_refusals, report.mapped_at_start);
  EXPECT_EQ(report.mapped_after_free, report.mapped_at_start);
  release(fd, pool, {pointer});
}

// The tag is 128 bits, and every one of them counts: a change in its second half is refused too.
TEST_F(IpcHooks, ExportDataWithTheTagsSecondHalfAlteredIsRefused) {
  CUmemoryPool pool = create_pool(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CUdeviceptr pointer = allocate_filled(pool, kMiB, 0x13);
  const CUmemPoolPtrExportData genuine = export_pointer(pointer);
  std::vector<CUmemPoolPtrExportData> forged(2, genuine);
  forged[0].reserved[48] ^= 1;     // the tag's second 64 bits, first byte
  forged[1].reserved[55] ^= 0x80;  // and last byte
  const int fd = export_pool(pool);

  Report report = run_importer(fd, forged, {0x13, 0x13}, 0);

  EXPECT_EQ(report.import_pointer[0], CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(report.import_pointer[1], CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(report.mapped_after_refusals, report.mapped_at_start);
  release(fd, pool, {pointer});
}

// Generations are a counter, so a holder of stale data can guess the one the address's next
// export got: the tag covers the generation, so stale data moved to it is refused.
TEST_F(IpcHooks, StaleDataMovedToTheNextGenerationIsRefused) {
  CUmemoryPool pool = create_pool(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CUdeviceptr freed = allocate_filled(pool, kMiB, 0x35);
  const CUmemPoolPtrExportData stale = export_pointer(freed);
  ASSERT_EQ(SP(cuMemFreeAsync)(freed, stream), CUDA_SUCCESS);
  CUdeviceptr next_owner = allocate_filled(pool, kMiB, 0x46);
  ASSERT_EQ(next_owner, freed);
  const CUmemPoolPtrExportData fresh = export_pointer(next_owner);  // exported to someone else
  CUmemPoolPtrExportData moved = stale;
  std::memcpy(moved.reserved + 32, fresh.reserved + 32, 8);  // the generation field
  ASSERT_NE(std::memcmp(moved.reserved + 32, stale.reserved + 32, 8), 0);
  const int fd = export_pool(pool);

  Report report = run_importer(fd, {moved}, {0x46}, 0);

  EXPECT_EQ(report.import_pointer[0], CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(report.mapped_after_refusals, report.mapped_at_start);
  EXPECT_EQ(first_byte(next_owner), 0x46);
  release(fd, pool, {next_owner});
}

TEST_F(IpcHooks, DataOfADestroyedPoolIsRefused) {
  CUmemoryPool pool = create_pool(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CUdeviceptr pointer = allocate_filled(pool, kMiB, 0x55);
  const CUmemPoolPtrExportData data = export_pointer(pointer);
  const int fd = export_pool(pool);
  ASSERT_EQ(SP(cuMemPoolDestroy)(pool), CUDA_SUCCESS);  // the allocation stays live

  Report report = run_importer(fd, {data}, {0x55}, 0);

  EXPECT_NE(report.import_pool, CUDA_SUCCESS);
  EXPECT_EQ(report.import_pointer[0], -1);  // nothing to import into
  close(fd);
  EXPECT_EQ(SP(cuMemFreeAsync)(pointer, stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
}

// Replays: the same data a second time while imported, and one pool's data offered to another.
TEST_F(IpcHooks, ReplayedDataIsRefused) {
  CUmemoryPool pool = create_pool(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CUmemoryPool other = create_pool(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CUdeviceptr pointer = allocate_filled(pool, kMiB, 0x66);
  CUdeviceptr others = allocate_filled(other, kMiB, 0x67);
  const int fd = export_pool(pool);

  Report report = run_importer(fd, {export_pointer(pointer), export_pointer(others)}, {0x66, 0x67}, kImportTwice);

  EXPECT_EQ(report.import_pointer[0], CUDA_SUCCESS);
  EXPECT_EQ(report.import_again[0], CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(report.import_pointer[1], CUDA_ERROR_INVALID_VALUE);  // another pool's data
  close(fd);
  EXPECT_EQ(SP(cuMemFreeAsync)(pointer, stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuMemFreeAsync)(others, stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuMemPoolDestroy)(pool), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuMemPoolDestroy)(other), CUDA_SUCCESS);
}

TEST_F(IpcHooks, AnImporterThatCrashesLeavesTheExporterIntact) {
  CUmemoryPool pool = create_pool(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CUdeviceptr pointer = allocate_filled(pool, 2 * kMiB, 0x12);
  const CUmemPoolPtrExportData data = export_pointer(pointer);
  const int fd = export_pool(pool);
  const std::uint64_t used_before = pool_attribute(pool, 7);
  const std::uint64_t reserved_before = pool_attribute(pool, 5);

  int crashed_status = 0;
  (void)run_importer(fd, {data}, {0x12}, kCrashAfterImport, &crashed_status);
  Report next = run_importer(fd, {data}, {0xa0}, 0);  // sees the crashed child's write-back

  EXPECT_EQ(crashed_status, -1);
  EXPECT_EQ(pool_attribute(pool, 7), used_before);
  EXPECT_EQ(pool_attribute(pool, 5), reserved_before);
  EXPECT_EQ(next.import_pointer[0], CUDA_SUCCESS);
  EXPECT_EQ(next.verified[0], 1);
  close(fd);
  EXPECT_EQ(SP(cuMemFreeAsync)(pointer, stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuMemPoolDestroy)(pool), CUDA_SUCCESS);
}

TEST_F(IpcHooks, ImportRefusesDescriptorsThatAreNotAnExportedPool) {
  CUmemoryPool pool = nullptr;
  int pipe_ends[2] = {-1, -1};
  ASSERT_EQ(pipe(pipe_ends), 0);
  int silent[2] = {-1, -1};
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, silent), 0);
  auto as_handle = [](int fd) { return reinterpret_cast<void*>(static_cast<std::intptr_t>(fd)); };

  EXPECT_EQ(SP(cuMemPoolImportFromShareableHandle)(&pool, as_handle(pipe_ends[0]),
                                                   CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(SP(cuMemPoolImportFromShareableHandle)(&pool, as_handle(silent[0]),
                                                   CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(SP(cuMemPoolImportFromShareableHandle)(&pool, as_handle(-1), CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(SP(cuMemPoolImportFromShareableHandle)(&pool, as_handle(pipe_ends[0]), CU_MEM_HANDLE_TYPE_FABRIC, 0),
            CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(pool, nullptr);
  for (int fd : {pipe_ends[0], pipe_ends[1], silent[0], silent[1]}) close(fd);
}

// The exporter's driver refuses the second of a block's physical allocations, after the answer's
// header went out: the importer is refused and maps nothing, and the exporter keeps no descriptor
// of the allocation it had exported already.
TEST_F(IpcHooks, AnExportThatFailsMidwayIsRefusedAndLeavesNoDescriptorOpen) {
  CUmemoryPool pool = create_pool(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CUdeviceptr block = allocate_filled(pool, 40 * kMiB, 0x3c);  // spans several physical allocations
  const int fd = export_pool(pool);
  const size_t descriptors_before = open_descriptors();
  hooks_test::fail_call("cuMemExportToShareableHandle", 2, CUDA_ERROR_OUT_OF_MEMORY);

  Report report = run_importer(fd, {export_pointer(block)}, {0x3c}, 0);

  EXPECT_EQ(hooks_test::injected("cuMemExportToShareableHandle"), 1u);
  hooks_test::clear_failures();
  EXPECT_EQ(report.import_pool, CUDA_SUCCESS);
  EXPECT_EQ(report.import_pointer[0], CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(report.mapped_after_refusals, report.mapped_at_start);
  EXPECT_TRUE(eventually([&] { return open_descriptors() == descriptors_before; }))
      << open_descriptors() << " descriptors open, " << descriptors_before << " before";
  release(fd, pool, {block});
}

// The service thread closes each descriptor it exported once, after sending it: a descriptor the
// exporting program opens meanwhile keeps its number, also a number an exported descriptor had.
// Here one is opened as the export ends (the fake runs the test's action when the service thread
// gives back the context it borrowed), once a whole batch of 64 was sent and closed, nothing
// pending; or once the next batch's first was exported and its second export failed.
struct ExportEnd {
  const char* name;
  size_t part_mib;                   // two parts, freed and coalesced: one block over part_mib granules
  unsigned long long failing_export;  // the cuMemExportToShareableHandle call that fails, 0: none
  CUresult import_result;
  unsigned long long physical_imports;
};

void PrintTo(const ExportEnd& end, std::ostream* out) { *out << end.name; }

std::atomic<int> opened_as_the_export_ended{-1};

void open_a_descriptor(void*) { opened_as_the_export_ended = open("/dev/null", O_RDONLY | O_CLOEXEC); }

class IpcExportEnd : public IpcHooks, public ::testing::WithParamInterface<ExportEnd> {};

TEST_P(IpcExportEnd, ADescriptorTheExporterOpensAsAnExportEndsStaysOpen) {
  const ExportEnd& end = GetParam();
  CUmemoryPool pool = create_pool(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CUdeviceptr whole = allocate_over_granules(pool, 2, end.part_mib, 0x2b);
  ASSERT_NE(whole, 0u);
  const int fd = export_pool(pool);
  const CUmemPoolPtrExportData data = export_pointer(whole);
  if (end.failing_export != 0) {
    hooks_test::fail_call("cuMemExportToShareableHandle", end.failing_export, CUDA_ERROR_OUT_OF_MEMORY);
  }
  opened_as_the_export_ended = -1;
  hooks_test::on_call("cuCtxPopCurrent_v2", 1, open_a_descriptor, nullptr);

  Report report = run_importer(fd, {data}, {0x2b}, 0);

  hooks_test::clear_failures();
  EXPECT_EQ(report.import_pointer[0], end.import_result);
  EXPECT_EQ(report.physical_imports, end.physical_imports);
  const int opened = opened_as_the_export_ended.load();
  ASSERT_GE(opened, 0) << "nothing was opened as the export ended";
  EXPECT_NE(fcntl(opened, F_GETFD), -1) << "descriptor " << opened << ", opened as the export ended, was closed by it";
  close(opened);
  release(fd, pool, {whole});
}

INSTANTIATE_TEST_SUITE_P(IpcHooks, IpcExportEnd,
                         ::testing::Values(ExportEnd{"AWholeBatchSent", 64, 0, CUDA_SUCCESS, 64},
                                           ExportEnd{"TheNextBatchsSecondExportFailed", 74, 66,
                                                     CUDA_ERROR_INVALID_VALUE, 64}),
                         [](const ::testing::TestParamInfo<ExportEnd>& param_info) { return std::string(param_info.param.name); });

// A driver call of the import failing in the importer (STREAMPOOL_FAKE_FAIL in its environment):
// the import answers that error, and nothing of it stays mapped.
class IpcImportFailure : public IpcHooks, public ::testing::WithParamInterface<const char*> {};

TEST_P(IpcImportFailure, AFailedDriverCallOfAPointerImportIsItsErrorAndMapsNothing) {
  CUmemoryPool pool = create_pool(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CUdeviceptr block = allocate_filled(pool, 3 * kMiB, 0x5a);
  const int fd = export_pool(pool);
  const std::string failure = std::string("STREAMPOOL_FAKE_FAIL=") + GetParam() + ":1:CUDA_ERROR_OUT_OF_MEMORY";
  int status = -1;

  Report report = run_importer(fd, {export_pointer(block)}, {0x5a}, 0, &status, {failure});

  ASSERT_EQ(status, 0);
  EXPECT_EQ(report.import_pool, CUDA_SUCCESS);
  EXPECT_EQ(report.import_pointer[0], CUDA_ERROR_OUT_OF_MEMORY) << GetParam();
  EXPECT_EQ(report.mapped_after_refusals, report.mapped_at_start) << GetParam();
  release(fd, pool, {block});
}

INSTANTIATE_TEST_SUITE_P(IpcHooks, IpcImportFailure,
                         ::testing::Values("cuMemImportFromShareableHandle", "cuMemMap", "cuMemAddressReserve"));

// cuMemFree of an imported pointer once the driver is deinitialized (at exit, after its own
// teardown): success, and nothing is unmapped (the driver already let everything go).
TEST_F(IpcHooks, AnImportedPointerFreedAfterTheDriversTeardownAnswersSuccess) {
  CUmemoryPool pool = create_pool(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CUdeviceptr block = allocate_filled(pool, 3 * kMiB, 0x5a);
  const int fd = export_pool(pool);
  int status = -1;

  Report report = run_importer(fd, {export_pointer(block)}, {0x5a}, kFreeBlocking, &status,
                               {"STREAMPOOL_FAKE_FAIL=cuCtxSynchronize:1:CUDA_ERROR_DEINITIALIZED"});

  ASSERT_EQ(status, 0);
  EXPECT_EQ(report.import_pointer[0], CUDA_SUCCESS);
  EXPECT_EQ(report.free_pointer[0], CUDA_SUCCESS);
  EXPECT_GT(report.mapped_after_free, report.mapped_at_start);
  release(fd, pool, {block});
}

// cuMemFreeAsync of an imported pointer on a stream that takes no host function: streampool waits
// for the stream itself; when that wait finds the driver torn down (at exit), success, and
// nothing is unmapped.
TEST_F(IpcHooks, AnImportedPointerFreedAsyncAfterTheDriversTeardownAnswersSuccess) {
  CUmemoryPool pool = create_pool(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CUdeviceptr block = allocate_filled(pool, 3 * kMiB, 0x5a);
  const int fd = export_pool(pool);
  int status = -1;

  Report report = run_importer(
      fd, {export_pointer(block)}, {0x5a}, 0, &status,
      {"STREAMPOOL_FAKE_FAIL=cuLaunchHostFunc:1:CUDA_ERROR_NOT_SUPPORTED,cuStreamSynchronize:1:CUDA_ERROR_DEINITIALIZED"});

  ASSERT_EQ(status, 0);
  EXPECT_EQ(report.import_pointer[0], CUDA_SUCCESS);
  EXPECT_EQ(report.free_pointer[0], CUDA_SUCCESS);
  EXPECT_GT(report.mapped_after_free, report.mapped_at_start);
  release(fd, pool, {block});
}

// A driver whose cuMemSetAccess takes no host descriptor (INVALID_VALUE) maps host memory
// CPU-accessible already: the importer asks again with the devices' descriptors only.
TEST_F(IpcHooks, AHostNumaPoolIsImportedWhereTheDriverRefusesAHostAccessDescriptor) {
  CUmemoryPool pool = create_pool(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, CU_MEM_LOCATION_TYPE_HOST_NUMA, 0);
  CUdeviceptr pointer = allocate_filled(pool, kMiB, 0x77);
  const int fd = export_pool(pool);
  int status = -1;

  Report report = run_importer(fd, {export_pointer(pointer)}, {0x77}, 0, &status,
                               {"STREAMPOOL_FAKE_FAIL=cuMemSetAccess:1:CUDA_ERROR_INVALID_VALUE"});

  ASSERT_EQ(status, 0);
  EXPECT_EQ(report.import_pointer[0], CUDA_SUCCESS);
  EXPECT_EQ(report.verified[0], 1);
  release(fd, pool, {pointer});
}

// An importer whose driver cannot count its devices (every cuDeviceGetCount fails) grants a host
// pool's memory to the CPU alone; where the driver refuses that one host descriptor (the first
// cuMemSetAccess of the importer is the import's), the import is refused: the importer does not
// ask again with no descriptor at all, which grants nothing.
TEST_F(IpcHooks, AHostPoolsImportWhoseOnlyAccessDescriptorIsRefusedIsNotRetriedWithNone) {
  CUmemoryPool pool = create_pool(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, CU_MEM_LOCATION_TYPE_HOST_NUMA, 0);
  CUdeviceptr pointer = allocate_filled(pool, kMiB, 0x7a);
  const int fd = export_pool(pool);
  int status = -1;

  Report report = run_importer(fd, {export_pointer(pointer)}, {0x7a}, 0, &status,
                               {"STREAMPOOL_FAKE_FAIL=cuDeviceGetCount:1:CUDA_ERROR_UNKNOWN:0,"
                                "cuMemSetAccess:1:CUDA_ERROR_INVALID_VALUE"});

  ASSERT_EQ(status, 0);
  EXPECT_EQ(report.import_pointer[0], CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(report.set_access_calls_by_imports, 1u);
  EXPECT_EQ(report.mapped_after_refusals, report.mapped_at_start);
  release(fd, pool, {pointer});
}

// A host NUMA pool on node 1 (stat, above, shows streampool a node 1 while the pool is made): its
// importer, a process with one device, grants the CPU access on node 1, where the memory lives.
TEST_F(IpcHooks, AnImporterOfAHostNumaPoolOnNodeOneGrantsTheCpuAccessOnNodeOne) {
  ipc_test_numa::extra_node = 1;
  CUmemoryPool pool = create_pool(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, CU_MEM_LOCATION_TYPE_HOST_NUMA, 1);
  ipc_test_numa::extra_node = -1;
  ASSERT_NE(pool, nullptr);
  CUdeviceptr pointer = allocate_filled(pool, kMiB, 0x79);
  const int fd = export_pool(pool);
  int status = -1;

  Report report = run_importer(fd, {export_pointer(pointer)}, {0x79}, 0, &status);

  ASSERT_EQ(status, 0);
  EXPECT_EQ(report.import_pointer[0], CUDA_SUCCESS);
  EXPECT_EQ(report.verified[0], 1);
  EXPECT_EQ(report.host_node_access[1], static_cast<unsigned long long>(CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
  EXPECT_EQ(report.host_node_access[0], static_cast<unsigned long long>(CU_MEM_ACCESS_FLAGS_PROT_NONE));
  release(fd, pool, {pointer});
}

// A stream-ordered free of an imported pointer enqueues its unmap on the stream, in the stream's
// context. From a thread with no current context (the stream names its context), where that
// context cannot be learned or cannot be made current, nothing is enqueued: the free waits for the
// stream itself and unmaps before it returns.
class IpcFreeWithoutTheStreamsContext : public IpcHooks, public ::testing::WithParamInterface<const char*> {};

TEST_P(IpcFreeWithoutTheStreamsContext, AnImportedPointersFreeWaitsForTheStreamItselfAndEnqueuesNothing) {
  CUmemoryPool pool = create_pool(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CUdeviceptr block = allocate_filled(pool, 3 * kMiB, 0x5b);
  const int fd = export_pool(pool);
  int status = -1;

  Report report = run_importer(fd, {export_pointer(block)}, {0x5b}, kFreeOnABareThread, &status,
                               {std::string("STREAMPOOL_TEST_FAIL_WHILE_FREEING=") + GetParam()});

  ASSERT_EQ(status, 0);
  EXPECT_EQ(report.import_pointer[0], CUDA_SUCCESS);
  EXPECT_EQ(report.free_pointer[0], CUDA_SUCCESS);
  EXPECT_GT(report.failed_while_freeing, 0u) << GetParam() << " was never called";
  EXPECT_EQ(report.host_functions_by_free, 0u) << "the free enqueued its unmap in a context it could not set";
  EXPECT_EQ(report.mapped_as_frees_return, report.mapped_at_start);
  release(fd, pool, {block});
}

INSTANTIATE_TEST_SUITE_P(IpcHooks, IpcFreeWithoutTheStreamsContext,
                         ::testing::Values("cuStreamGetCtx", "cuCtxPushCurrent_v2"));

// An importer working on device 1 maps a pool of device 0 in device 0's context: where that
// context cannot be made current, the import is refused with the driver's error and maps nothing.
TEST_F(IpcHooks, AnImportWhosePoolsDeviceContextCannotBeMadeCurrentIsRefused) {
  CUmemoryPool pool = create_pool(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CUdeviceptr block = allocate_filled(pool, 3 * kMiB, 0x5c);
  const int fd = export_pool(pool);
  int status = -1;

  Report report = run_importer(fd, {export_pointer(block)}, {0x5c}, kOnDeviceOne, &status,
                               {"STREAMPOOL_FAKE_DEVICES=2", "STREAMPOOL_TEST_FAIL_WHILE_IMPORTING=cuCtxPushCurrent_v2"});

  ASSERT_EQ(status, 0);
  EXPECT_EQ(report.import_pool, CUDA_SUCCESS);
  EXPECT_GT(report.failed_while_importing, 0u);
  EXPECT_EQ(report.import_pointer[0], CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(report.mapped_after_refusals, report.mapped_at_start);
  release(fd, pool, {block});
}

// --- the importer, run as a child by run_importer ---

// Every call of the entry named by the environment variable `variable` (if set) fails from now
// until stop_failing_calls_named_by, with an error the import passes on unchanged.
void fail_every_call_named_by(const char* variable) {
  if (const char* name = std::getenv(variable)) hooks_test::fail_calls(name, 1, 0, CUDA_ERROR_OUT_OF_MEMORY);
}

// Clears the failures, STREAMPOOL_FAKE_FAIL's too: only where `variable` armed one.
void stop_failing_calls_named_by(const char* variable) {
  if (std::getenv(variable) != nullptr) hooks_test::clear_failures();
}

unsigned long long failures_named_by(const char* variable) {
  const char* name = std::getenv(variable);
  return name == nullptr ? 0 : hooks_test::injected(name);
}

void import_everything(int socket) {
  Order order;
  int pool_fd = -1;
  ASSERT_TRUE(receive_with_fd(socket, &order, sizeof order, &pool_fd));
  Report report;
  report.mapped_at_start = fake_mapped_bytes();
  // "after": descriptor 0 free once the pool's handle is in, for what the import opens.
  const char* close_stdin = std::getenv("STREAMPOOL_TEST_CLOSE_STDIN");
  if (close_stdin != nullptr && std::strcmp(close_stdin, "after") == 0) close(0);
  report.descriptors_at_start = open_descriptors() - 1;  // the pool's handle, closed below
  CUmemoryPool pool = nullptr;
  void* handle = reinterpret_cast<void*>(static_cast<std::intptr_t>(pool_fd));
  if (order.flags & kWrongHandleType) {
    report.wrong_handle_type = SP(cuMemPoolImportFromShareableHandle)(&pool, handle, CU_MEM_HANDLE_TYPE_WIN32, 0);
  }
  report.import_pool = SP(cuMemPoolImportFromShareableHandle)(&pool, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
  close(pool_fd);  // as cuda-samples' importer does: the imported pool keeps what it needs
  std::array<CUdeviceptr, kMaxBlobs> imported{};
  if (report.import_pool == CUDA_SUCCESS) {
    CUstream stream = nullptr;
    ASSERT_EQ(SP(cuStreamCreate)(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    report.descriptors_before_imports = open_descriptors();
    CUdeviceptr allocated = 0;
    report.allocate_from_imported = SP(cuMemAllocFromPoolAsync)(&allocated, kMiB, pool, stream);
    if (!(order.flags & kOnDeviceOne)) report.set_as_device_pool = SP(cuDeviceSetMemPool)(0, pool);
    int exported_fd = -1;
    report.export_imported =
        SP(cuMemPoolExportToShareableHandle)(&exported_fd, pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    int handle_types = -1;
    if (SP(cuMemPoolGetAttribute)(pool, static_cast<CUmemPool_attribute>(10), &handle_types) == CUDA_SUCCESS) {
      report.export_handle_types = handle_types;
    }
    for (int i = 0; i < order.count; ++i) {
      CUmemPoolPtrExportData data{};
      std::memcpy(data.reserved, order.data[i], 64);
      fail_every_call_named_by("STREAMPOOL_TEST_FAIL_WHILE_IMPORTING");
      const unsigned long long set_access_before = hooks_test::fake_calls("cuMemSetAccess");
      report.import_pointer[i] = SP(cuMemPoolImportPointer)(&imported[i], pool, &data);
      report.set_access_calls_by_imports += hooks_test::fake_calls("cuMemSetAccess") - set_access_before;
      report.failed_while_importing += failures_named_by("STREAMPOOL_TEST_FAIL_WHILE_IMPORTING");
      stop_failing_calls_named_by("STREAMPOOL_TEST_FAIL_WHILE_IMPORTING");
      if (report.import_pointer[i] != CUDA_SUCCESS) continue;
      if (order.flags & kImportTwice) {
        CUdeviceptr again = 0;
        report.import_again[i] = SP(cuMemPoolImportPointer)(&again, pool, &data);
      }
      unsigned char first = 0;
      report.verified[i] = SP(cuMemcpyDtoH_v2)(&first, imported[i], 1) == CUDA_SUCCESS && first == order.fill[i];
      for (int node = 0; node < 2 && i == 0; ++node) {
        const CUmemLocation host_node{CU_MEM_LOCATION_TYPE_HOST_NUMA, node};
        unsigned long long flags = 0;
        if (SP(cuMemGetAccess)(&flags, &host_node, imported[i]) == CUDA_SUCCESS) report.host_node_access[node] = flags;
      }
      unsigned char last = 0;
      if (order.bytes[i] > 0 && SP(cuMemcpyDtoH_v2)(&last, imported[i] + order.bytes[i] - 1, 1) == CUDA_SUCCESS) {
        report.last_byte[i] = last;
      }
      EXPECT_EQ(SP(cuMemsetD8_v2)(imported[i], static_cast<unsigned char>(0xa0 + i), 1), CUDA_SUCCESS);
    }
    report.mapped_after_refusals = fake_mapped_bytes();
    report.charged_with_imports = cap_charged(0);
    report.physical_imports = hooks_test::fake_calls("cuMemImportFromShareableHandle");
    if (order.flags & kCrashAfterImport) std::abort();
    const unsigned long long unmaps_before = hooks_test::fake_calls("cuMemUnmap");
    const unsigned long long address_frees_before = hooks_test::fake_calls("cuMemAddressFree");
    const unsigned long long host_functions_before = hooks_test::fake_calls("cuLaunchHostFunc");
    fail_every_call_named_by("STREAMPOOL_TEST_FAIL_WHILE_FREEING");
    auto free_all = [&] {
      for (int i = 0; i < order.count; ++i) {
        if (report.import_pointer[i] != CUDA_SUCCESS) continue;
        report.free_pointer[i] = (order.flags & kFreeBlocking) ? SP(cuMemFree_v2)(imported[i])
                                                               : SP(cuMemFreeAsync)(imported[i], stream);
      }
    };
    if (order.flags & kFreeOnABareThread) {
      std::thread(free_all).join();
    } else {
      free_all();
    }
    report.mapped_as_frees_return = fake_mapped_bytes();
    report.host_functions_by_free = hooks_test::fake_calls("cuLaunchHostFunc") - host_functions_before;
    report.failed_while_freeing = failures_named_by("STREAMPOOL_TEST_FAIL_WHILE_FREEING");
    stop_failing_calls_named_by("STREAMPOOL_TEST_FAIL_WHILE_FREEING");
    EXPECT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
    // A stream-ordered free unmaps on streampool's reaper thread once the stream reaches it.
    (void)eventually([&] { return fake_mapped_bytes() == report.mapped_at_start; });
    report.mapped_after_free = fake_mapped_bytes();
    // The fake closes an unmapped allocation's memory file after its own lock: allow for that.
    (void)eventually([&] { return open_descriptors() == report.descriptors_before_imports; });
    report.descriptors_after_frees = open_descriptors();
    report.unmaps_by_free = hooks_test::fake_calls("cuMemUnmap") - unmaps_before;
    report.address_frees_by_free = hooks_test::fake_calls("cuMemAddressFree") - address_frees_before;
    unsigned int context_flags = 0;
    int active = -1;
    if (SP(cuDevicePrimaryCtxGetState)(0, &context_flags, &active) == CUDA_SUCCESS) report.device_zero_active = active;
    EXPECT_EQ(SP(cuMemPoolDestroy)(pool), CUDA_SUCCESS);
    SP(cuStreamDestroy_v2)(stream);
    (void)eventually([&] { return open_descriptors() == report.descriptors_at_start; });
    report.descriptors_at_end = open_descriptors();
  }
  ASSERT_TRUE(send_with_fd(socket, &report, sizeof report, -1));
}

}  // namespace

class DISABLED_IpcImporter : public hooks_test::DriverTest {};

// The importer of IpcHooks.ImportingOnDeviceOneStartsNoContextOnDeviceZero: device 1's primary
// context current, device 0's never retained.
class DISABLED_IpcImporterOnDeviceOne : public ::testing::Test {};

TEST_F(DISABLED_IpcImporterOnDeviceOne, Run) {
  const char* socket = std::getenv("STREAMPOOL_TEST_IPC_SOCKET");
  ASSERT_NE(socket, nullptr);
  ASSERT_EQ(SP(cuInit)(0), CUDA_SUCCESS);
  CUcontext one = nullptr;
  ASSERT_EQ(SP(cuDevicePrimaryCtxRetain)(&one, 1), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuCtxSetCurrent)(one), CUDA_SUCCESS);
  import_everything(std::atoi(socket));
}

TEST_F(DISABLED_IpcImporter, Run) {
  const char* socket = std::getenv("STREAMPOOL_TEST_IPC_SOCKET");
  ASSERT_NE(socket, nullptr);
  const char* close_stdin = std::getenv("STREAMPOOL_TEST_CLOSE_STDIN");
  if (close_stdin != nullptr && std::strcmp(close_stdin, "before") == 0) close(0);  // 0 for the pool's handle
  import_everything(std::atoi(socket));
}
