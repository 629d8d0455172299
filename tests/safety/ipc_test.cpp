// Pools shared between processes, attacked from the importing side.
//
// Class 5, confinement: an importer of one block must reach nothing another allocation of the
// exporter uses. The exporter allocates the exported block between neighbours that are not
// exported, each filled with a pattern of its own; the importer (a child process) probes every
// 4 KiB from 4 MiB below the imported pointer to 8 MiB above it, reads what it can, and writes
// into whatever it can read past the block's own bytes. Violation: a probe reads a neighbour's
// pattern, the readable span reaches beyond the block's granules, or the exporter finds a
// neighbour's bytes changed.
//
// Class 6, the importer's stream-ordered free: the importer uses the imported block on stream S of
// a context it created, frees it with cuMemFreeAsync(ptr, S) while the primary context is current,
// and only then lets S's host function read the block. Violation: the host function faults (the
// memory was unmapped under it) or reads other bytes than the exporter's.
//
// The child is this program again (fork + exec), running one of the DISABLED_IpcChild tests; the
// pool's descriptor and the export data go to it over a unix socket (SCM_RIGHTS), its findings
// come back the same way. The fake driver's VMM memory is memfd-backed: both processes see the
// same bytes.
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <mutex>
#include <vector>

#include "fd_passing.hpp"
#include "safety_support.hpp"

namespace safety {
namespace {

using streampool_test::receive_with_fd;
using streampool_test::send_with_fd;

constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::size_t kGranule = 2 * kMiB;  // the fake driver's VMM granule
constexpr std::size_t kProbeStep = 4096;
constexpr std::size_t kProbeBelow = 4 * kMiB;
constexpr std::size_t kProbeAbove = 8 * kMiB;
constexpr unsigned char kExportedFill = 0x11;
constexpr int kMaxPointers = 8;

enum class Role : int { probe = 1, free_on_created_context = 2, stress = 3 };

struct Order {
  int role = 0;
  int count = 0;
  unsigned long long bytes[kMaxPointers] = {};
  unsigned char data[kMaxPointers][64] = {};
  unsigned char forbidden[4] = {};  // the neighbours' patterns
};

struct Report {
  int import_pool = -1;
  int import_pointer = -1;
  // probe
  unsigned long long readable_probes = 0;
  long long lowest_readable = 0;   // offsets from the imported pointer
  long long highest_readable = 0;  // the last readable byte
  unsigned long long forbidden_seen = 0;
  unsigned long long writes_past_block = 0;
  // free_on_created_context, stress
  int free_result = -1;
  int host_function_ran = 0;
  int bytes_intact = 0;
  unsigned long long mapped_before_import = 0;
  unsigned long long mapped_after_unmap = 0;
  int unmapped_in_time = 0;
  // stress
  unsigned long long iterations = 0;
  unsigned long long failures = 0;
};

unsigned long long fake_mapped_bytes() {
  using Live = void (*)(unsigned long long*, unsigned long long*, unsigned long long*, unsigned long long*);
  auto live = reinterpret_cast<Live>(fake_symbol("streampool_fake_vmm_live"));
  unsigned long long mapped = 0;
  if (live != nullptr) live(nullptr, &mapped, nullptr, nullptr);
  return mapped;
}

// Runs DISABLED_IpcChild.<test> in a child process; its exit status, -1 if it did not exit.
int run_child(const char* test, int socket) {
  const pid_t child = fork();
  if (child == 0) {
    const int inherited = dup(socket);  // without close-on-exec
    setenv("STREAMPOOL_TEST_IPC_SOCKET", std::to_string(inherited).c_str(), 1);
    const std::string filter = std::string("--gtest_filter=DISABLED_IpcChild.") + test;
    execl("/proc/self/exe", "child", filter.c_str(), "--gtest_also_run_disabled_tests", static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

class Ipc : public SafetyTest {
 protected:
  CUmemoryPool create_exportable_pool() { return create_pool(device, 0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR); }
  // The exporter's blocks go, then the pool.
  void release(CUmemoryPool shared, const std::vector<CUdeviceptr>& blocks) {
    for (CUdeviceptr block : blocks) EXPECT_EQ(SP(cuMemFreeAsync)(block, a), CUDA_SUCCESS);
    EXPECT_EQ(SP(cuStreamSynchronize)(a), CUDA_SUCCESS);
    EXPECT_EQ(SP(cuMemPoolDestroy)(shared), CUDA_SUCCESS);
  }
  CUdeviceptr allocate_filled(CUmemoryPool from, std::size_t bytes, unsigned char fill) {
    CUdeviceptr pointer = 0;
    EXPECT_EQ(SP(cuMemAllocFromPoolAsync)(&pointer, bytes, from, a), CUDA_SUCCESS);
    EXPECT_EQ(SP(cuMemsetD8Async)(pointer, fill, bytes, a), CUDA_SUCCESS);
    EXPECT_EQ(SP(cuStreamSynchronize)(a), CUDA_SUCCESS);
    return pointer;
  }
  // True when every byte of [pointer, pointer + bytes) still holds `fill`.
  bool holds(CUdeviceptr pointer, std::size_t bytes, unsigned char fill) {
    std::vector<unsigned char> copy(bytes);
    if (SP(cuMemcpyDtoH_v2)(copy.data(), pointer, bytes) != CUDA_SUCCESS) return false;
    return std::all_of(copy.begin(), copy.end(), [fill](unsigned char byte) { return byte == fill; });
  }
  // Hands the pool and the export data of `pointers` to a child playing `role`; its report.
  Report run_importer(CUmemoryPool shared, Role role, const std::vector<CUdeviceptr>& pointers,
                      const std::vector<std::size_t>& sizes, const std::vector<unsigned char>& forbidden = {}) {
    int pool_fd = -1;
    EXPECT_EQ(SP(cuMemPoolExportToShareableHandle)(&pool_fd, shared, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
              CUDA_SUCCESS);
    Order order;
    order.role = static_cast<int>(role);
    order.count = static_cast<int>(pointers.size());
    for (std::size_t i = 0; i < pointers.size(); ++i) {
      CUmemPoolPtrExportData data{};
      EXPECT_EQ(SP(cuMemPoolExportPointer)(&data, pointers[i]), CUDA_SUCCESS);
      std::memcpy(order.data[i], data.reserved, 64);
      order.bytes[i] = sizes[i];
    }
    for (std::size_t i = 0; i < forbidden.size() && i < sizeof order.forbidden; ++i) order.forbidden[i] = forbidden[i];
    int ends[2] = {-1, -1};
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends), 0);
    EXPECT_TRUE(send_with_fd(ends[0], &order, sizeof order, pool_fd));
    close(pool_fd);
    const char* test = role == Role::probe ? "Probe" : role == Role::stress ? "Stress" : "FreeOnCreatedContext";
    const int status = run_child(test, ends[1]);
    close(ends[1]);
    Report report;
    EXPECT_EQ(status, 0) << "the importer died (a fault in it is the violation) or failed";
    if (status == 0) {
      EXPECT_TRUE(receive_with_fd(ends[0], &report, sizeof report, nullptr));
    }
    close(ends[0]);
    return report;
  }

  void expect_confined(const Report& report, std::size_t block_bytes) {
    EXPECT_EQ(report.import_pointer, CUDA_SUCCESS);
    EXPECT_EQ(report.forbidden_seen, 0u) << "the importer read a neighbour's bytes";
    EXPECT_GE(report.readable_probes, block_bytes / kProbeStep);
    // The exporter places the block at a granule, so the importer sees the block's granules alone.
    EXPECT_EQ(report.lowest_readable, 0);
    EXPECT_LT(report.highest_readable, static_cast<long long>((block_bytes + kGranule - 1) / kGranule * kGranule));
  }
};

// The reported case: p, then s right after it (in one granule, where blocks are packed 512 bytes apart).
TEST_F(Ipc, AnImporterSeesNothingOfTheNeighbourAfterTheBlock) {
  CUmemoryPool shared = create_exportable_pool();
  const CUdeviceptr p = allocate_filled(shared, kMiB, kExportedFill);
  const CUdeviceptr s = allocate_filled(shared, kMiB, 0x5a);
  const CUdeviceptr t = allocate_filled(shared, 4096, 0x5b);
  const CUdeviceptr u = allocate_filled(shared, 3 * kMiB, 0x5c);

  const Report report = run_importer(shared, Role::probe, {p}, {kMiB}, {0x5a, 0x5b, 0x5c});

  expect_confined(report, kMiB);
  EXPECT_TRUE(holds(s, kMiB, 0x5a));
  EXPECT_TRUE(holds(t, 4096, 0x5b));
  EXPECT_TRUE(holds(u, 3 * kMiB, 0x5c));
  EXPECT_TRUE(holds(p + 1, kMiB - 1, kExportedFill));  // the importer wrote only its first byte
  release(shared, {p, s, t, u});
}

// A neighbour before the block, and a block that is not a whole number of granules.
TEST_F(Ipc, AnImporterSeesNothingOfTheNeighbourBeforeTheBlock) {
  CUmemoryPool shared = create_exportable_pool();
  const CUdeviceptr before = allocate_filled(shared, kMiB + 512, 0x6a);
  const CUdeviceptr p = allocate_filled(shared, 3 * kMiB, kExportedFill);
  const CUdeviceptr after = allocate_filled(shared, 8192, 0x6b);

  const Report report = run_importer(shared, Role::probe, {p}, {3 * kMiB}, {0x6a, 0x6b});

  expect_confined(report, 3 * kMiB);
  EXPECT_TRUE(holds(before, kMiB + 512, 0x6a));
  EXPECT_TRUE(holds(after, 8192, 0x6b));
  release(shared, {before, p, after});
}

TEST_F(Ipc, AnImportersFreeOnAStreamOfAnotherContextWaitsForThatStream) {
  CUmemoryPool shared = create_exportable_pool();
  const CUdeviceptr p = allocate_filled(shared, kMiB, kExportedFill);

  const Report report = run_importer(shared, Role::free_on_created_context, {p}, {kMiB});

  EXPECT_EQ(report.import_pointer, CUDA_SUCCESS);
  EXPECT_EQ(report.free_result, CUDA_SUCCESS);
  EXPECT_EQ(report.host_function_ran, 1);
  EXPECT_EQ(report.bytes_intact, 1);
  EXPECT_EQ(report.unmapped_in_time, 1) << "the imported memory stayed mapped after its stream went past the free";
  EXPECT_EQ(report.mapped_after_unmap, report.mapped_before_import);
  release(shared, {p});
}

// Bounded: four importer threads, each on a stream of a context of its own, import, use on their
// stream and free there, 25 times each, while the exporter's blocks stay live.
TEST_F(Ipc, StressImportUseAndFreeOnStreamsOfManyContexts) {
  CUmemoryPool shared = create_exportable_pool();
  std::vector<CUdeviceptr> pointers;
  std::vector<std::size_t> sizes;
  for (int i = 0; i < 4; ++i) {
    pointers.push_back(allocate_filled(shared, kMiB, static_cast<unsigned char>(kExportedFill + i)));
    sizes.push_back(kMiB);
  }

  const Report report = run_importer(shared, Role::stress, pointers, sizes);

  EXPECT_EQ(report.iterations, 4u * 25u);
  EXPECT_EQ(report.failures, 0u);
  EXPECT_EQ(report.unmapped_in_time, 1);
  release(shared, pointers);
}

// --- the importer ---------------------------------------------------------------------------

// A gate a host function waits at until the program opens it (bounded, so a broken free that
// waits for the stream cannot hang the test).
struct Gate {
  std::mutex mutex;
  std::condition_variable opened_signal;
  bool opened = false;
  void open() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      opened = true;
    }
    opened_signal.notify_all();
  }
  void wait() {
    std::unique_lock<std::mutex> lock(mutex);
    opened_signal.wait_for(lock, std::chrono::seconds(5), [this] { return opened; });
  }
};

// What a host function of the importer checks: the block still holds the exporter's bytes.
struct Use {
  Gate* gate = nullptr;
  const unsigned char* block = nullptr;
  std::size_t bytes = 0;
  unsigned char fill = 0;
  std::atomic<int> ran{0};
  std::atomic<int> intact{0};
};

void CUDA_CB use_block(void* user) {
  auto* use = static_cast<Use*>(user);
  if (use->gate != nullptr) use->gate->wait();
  bool intact = true;
  for (std::size_t i = 0; i < use->bytes; i += 512) intact = intact && use->block[i] == use->fill;  // faults if unmapped
  use->intact.store(intact ? 1 : 0);
  use->ran.store(1);
}

// The fake's mapped bytes back to `target`, within a bound: the unmap runs on a thread of
// streampool's once the stream passed the free.
bool mapped_returns_to(unsigned long long target, unsigned long long* now) {
  for (int attempt = 0; attempt < 500; ++attempt) {
    *now = fake_mapped_bytes();
    if (*now == target) return true;
    sleep_ms(10);
  }
  return false;
}

class ImporterChild : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* socket_text = std::getenv("STREAMPOOL_TEST_IPC_SOCKET");
    ASSERT_NE(socket_text, nullptr);
    socket = std::atoi(socket_text);
    int pool_fd = -1;
    ASSERT_TRUE(receive_with_fd(socket, &order, sizeof order, &pool_fd));
    ASSERT_EQ(SP(cuInit)(0), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuDeviceGet)(&device, 0), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuDevicePrimaryCtxRetain)(&primary, device), CUDA_SUCCESS);
    ASSERT_EQ(SP(cuCtxSetCurrent)(primary), CUDA_SUCCESS);
    report.mapped_before_import = fake_mapped_bytes();
    report.import_pool = SP(cuMemPoolImportFromShareableHandle)(
        &pool, reinterpret_cast<void*>(static_cast<std::intptr_t>(pool_fd)), CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    close(pool_fd);
    ASSERT_EQ(report.import_pool, CUDA_SUCCESS);
  }
  void TearDown() override {
    if (pool != nullptr) SP(cuMemPoolDestroy)(pool);
    EXPECT_TRUE(send_with_fd(socket, &report, sizeof report, -1));
  }
  CUresult import(int index, CUdeviceptr* pointer) {
    CUmemPoolPtrExportData data{};
    std::memcpy(data.reserved, order.data[index], 64);
    return SP(cuMemPoolImportPointer)(pointer, pool, &data);
  }

  int socket = -1;
  Order order;
  Report report;
  CUdevice device = 0;
  CUcontext primary = nullptr;
  CUmemoryPool pool = nullptr;
};

using DISABLED_IpcChild = ImporterChild;

TEST_F(DISABLED_IpcChild, Probe) {
  CUdeviceptr block = 0;
  report.import_pointer = import(0, &block);
  ASSERT_EQ(report.import_pointer, CUDA_SUCCESS);
  const auto below = static_cast<long long>(kProbeBelow);
  const auto above = static_cast<long long>(kProbeAbove);
  bool any = false;
  for (long long offset = -below; offset < above; offset += static_cast<long long>(kProbeStep)) {
    const CUdeviceptr at = block + static_cast<CUdeviceptr>(offset);
    unsigned char page[kProbeStep];
    if (SP(cuMemcpyDtoH_v2)(page, at, sizeof page) != CUDA_SUCCESS) continue;
    ++report.readable_probes;
    if (!any) report.lowest_readable = offset;
    any = true;
    report.highest_readable = offset + static_cast<long long>(kProbeStep) - 1;
    for (unsigned char byte : page) {
      for (unsigned char forbidden : order.forbidden) {
        if (forbidden != 0 && byte == forbidden) ++report.forbidden_seen;
      }
    }
    // Past the block's bytes, the importer tries to write what it can read.
    if (offset >= static_cast<long long>(order.bytes[0]) || offset < 0) {
      std::memset(page, 0xee, sizeof page);
      if (SP(cuMemcpyHtoD_v2)(at, page, sizeof page) == CUDA_SUCCESS) ++report.writes_past_block;
    }
  }
  EXPECT_EQ(SP(cuMemsetD8_v2)(block, 0xa0, 1), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuMemFree_v2)(block), CUDA_SUCCESS);
}

TEST_F(DISABLED_IpcChild, FreeOnCreatedContext) {
  CUcontext created = nullptr;
  ASSERT_EQ(SP(cuCtxCreate_v4)(&created, nullptr, 0, device), CUDA_SUCCESS);  // now current
  CUstream stream = nullptr;
  ASSERT_EQ(SP(cuStreamCreate)(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  CUdeviceptr block = 0;
  report.import_pointer = import(0, &block);
  ASSERT_EQ(report.import_pointer, CUDA_SUCCESS);
  Gate gate;
  Use use;
  use.gate = &gate;
  use.block = reinterpret_cast<const unsigned char*>(block);
  use.bytes = order.bytes[0];
  use.fill = kExportedFill;
  ASSERT_EQ(SP(cuLaunchHostFunc)(stream, &use_block, &use), CUDA_SUCCESS);

  ASSERT_EQ(SP(cuCtxSetCurrent)(primary), CUDA_SUCCESS);
  report.free_result = SP(cuMemFreeAsync)(block, stream);
  gate.open();  // only now may the stream's work run on: the free returned first

  ASSERT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
  report.host_function_ran = use.ran.load();
  report.bytes_intact = use.intact.load();
  report.unmapped_in_time = mapped_returns_to(report.mapped_before_import, &report.mapped_after_unmap) ? 1 : 0;
  ASSERT_EQ(SP(cuCtxSetCurrent)(created), CUDA_SUCCESS);
  SP(cuStreamDestroy_v2)(stream);
  SP(cuCtxSetCurrent)(primary);
  SP(cuCtxDestroy_v2)(created);
}

TEST_F(DISABLED_IpcChild, Stress) {
  constexpr int kThreads = 4;
  constexpr int kIterations = 25;
  std::atomic<unsigned long long> iterations{0};
  std::atomic<unsigned long long> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads && t < order.count; ++t) {
    threads.emplace_back([&, t] {
      CUcontext created = nullptr;
      CUstream stream = nullptr;
      if (SP(cuCtxCreate_v4)(&created, nullptr, 0, device) != CUDA_SUCCESS ||
          SP(cuStreamCreate)(&stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
        ++failures;
        return;
      }
      for (int i = 0; i < kIterations; ++i) {
        CUdeviceptr block = 0;
        if (import(t, &block) != CUDA_SUCCESS) {
          ++failures;
          continue;
        }
        Use use;
        use.block = reinterpret_cast<const unsigned char*>(block);
        use.bytes = order.bytes[t];
        use.fill = static_cast<unsigned char>(kExportedFill + t);
        // Every other iteration frees with the primary context current, as a library would.
        if (i % 2 == 1) SP(cuCtxSetCurrent)(primary);
        const bool queued = SP(cuLaunchHostFunc)(stream, &use_block, &use) == CUDA_SUCCESS;
        if (!queued || SP(cuMemFreeAsync)(block, stream) != CUDA_SUCCESS) ++failures;
        if (SP(cuStreamSynchronize)(stream) != CUDA_SUCCESS || use.ran.load() != 1 || use.intact.load() != 1) {
          ++failures;
        }
        SP(cuCtxSetCurrent)(created);
        ++iterations;
      }
      SP(cuStreamDestroy_v2)(stream);
      SP(cuCtxSetCurrent)(nullptr);
      SP(cuCtxDestroy_v2)(created);
    });
  }
  for (std::thread& thread : threads) thread.join();
  report.iterations = iterations.load();
  report.failures = failures.load();
  report.unmapped_in_time = mapped_returns_to(report.mapped_before_import, &report.mapped_after_unmap) ? 1 : 0;
}

}  // namespace
}  // namespace safety
