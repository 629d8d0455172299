// What an importer of one block of a shared pool can reach, and whether its stream-ordered free
// waits for its stream: the same binary with NVIDIA's pool alone and under
// LD_PRELOAD=libstreampool.so (docs/driver-behaviour.md, "Pools shared between processes").
//
//   ipc_confinement            the exporter: a POSIX-fd pool on device 0; p (1 MiB, exported),
//                              then s (1 MiB), n (2 MiB) and f (28 MiB) after it, not exported,
//                              each filled with its own pattern; then one importer process per
//                              probe, and one for the free case.
//   probe (child)              imports p, reports cuMemGetAddressRange of the imported pointer,
//                              reads 4 bytes at one offset from it with cuMemcpyDtoH and, outside
//                              p's bytes, writes 4 bytes there. One process per probe: an illegal
//                              address poisons only that process's context.
//   free (child)               imports p, creates a context X and a stream S in it, queues on S a
//                              kernel that spins ~300 ms and one that copies p to X's own memory,
//                              makes the primary context current, calls cuMemFreeAsync(p, S), and
//                              then synchronizes S: was the copy intact, did S fault, how long did
//                              the free take (a free that waits for S takes ~300 ms).
//
// One line per probe: "probe <name> offset=<bytes> range=<base offset>,<size> read=<result>
// value=<what the importer read> write=<result> exporter_sees=<what the exporter's memory holds
// there afterwards>"; values are named by pattern (p s n f zero other). The exporter restores its
// memory after each probe.
#include <cuda.h>
#include <cuda_runtime.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "../../tests/common/fd_passing.hpp"

namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

struct Neighbour {
  const char* name;
  std::size_t bytes;
  unsigned char fill;
};
constexpr Neighbour kBlocks[] = {
    {"p", 1 * kMiB, 0x11},   // exported
    {"s", 1 * kMiB, 0x5a},   // the rest of p's 2 MiB granule where blocks are packed
    {"n", 2 * kMiB, 0x5b},   // the next granule
    {"f", 28 * kMiB, 0x5c},  // the rest of the first 32 MiB chunk
};

struct Probe {
  const char* name;
  long long offset;
};
constexpr Probe kProbes[] = {
    {"p_start", 0},
    {"p_last", static_cast<long long>(kMiB) - 4},
    {"before_p", -4},
    {"two_mib_before_p", -2 * static_cast<long long>(kMiB)},
    {"rest_of_granule", static_cast<long long>(kMiB)},
    {"rest_of_granule_mid", static_cast<long long>(kMiB + kMiB / 2)},
    {"granule_last", 2 * static_cast<long long>(kMiB) - 4},
    {"next_granule", 2 * static_cast<long long>(kMiB)},
    {"next_granule_mid", 3 * static_cast<long long>(kMiB)},
    {"chunk_4mib", 4 * static_cast<long long>(kMiB)},
    {"chunk_8mib", 8 * static_cast<long long>(kMiB)},
    {"chunk_16mib", 16 * static_cast<long long>(kMiB)},
    {"chunk_last", 32 * static_cast<long long>(kMiB) - 4},
    {"next_chunk", 32 * static_cast<long long>(kMiB)},
};

struct Order {
  unsigned char data[64] = {};
  long long offset = 0;
};

struct ProbeReport {
  int import_pool = -1;
  int import_pointer = -1;
  int range = -1;
  long long range_base_offset = 0;  // the range's base minus the imported pointer
  unsigned long long range_bytes = 0;
  int read = -1;
  unsigned char value[4] = {};
  int write = -1;  // -2: not tried (inside p)
};

struct FreeReport {
  int import_pool = -1;
  int import_pointer = -1;
  int free_result = -1;
  double free_ms = 0;
  int sync_result = -1;
  double sync_ms = 0;
  int copied_intact = -1;
};

const char* result_name(int result) {
  if (result == -1) return "not_run";
  if (result == -2) return "not_tried";
  const char* name = nullptr;
  if (cuGetErrorName(static_cast<CUresult>(result), &name) != CUDA_SUCCESS || name == nullptr) return "unknown";
  return name;
}

const char* pattern_name(const unsigned char* bytes) {
  for (const Neighbour& block : kBlocks) {
    if (bytes[0] == block.fill && bytes[3] == block.fill) return block.name;
  }
  if (bytes[0] == 0 && bytes[3] == 0) return "zero";
  if (bytes[0] == 0xee && bytes[3] == 0xee) return "importer_write";
  return "other";
}

bool check(CUresult result, const char* what) {
  if (result == CUDA_SUCCESS) return true;
  std::fprintf(stderr, "%s: %s\n", what, result_name(result));
  return false;
}

__global__ void spin(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

__global__ void copy_bytes(const unsigned char* from, unsigned char* to, std::size_t bytes) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < bytes; i += gridDim.x * blockDim.x) to[i] = from[i];
}

// --- the importer ----------------------------------------------------------------------------

// Device 0's primary context, current.
bool open_primary(CUdevice* device, CUcontext* primary) {
  return check(cuInit(0), "cuInit") && check(cuDeviceGet(device, 0), "cuDeviceGet") &&
         check(cuDevicePrimaryCtxRetain(primary, *device), "retain") && check(cuCtxSetCurrent(*primary), "current");
}

CUresult import(int socket, Order* order, CUmemoryPool* pool, CUdeviceptr* pointer, int* import_pool) {
  int pool_fd = -1;
  if (!streampool_test::receive_with_fd(socket, order, sizeof *order, &pool_fd)) return CUDA_ERROR_INVALID_VALUE;
  *import_pool = cuMemPoolImportFromShareableHandle(pool, reinterpret_cast<void*>(static_cast<std::intptr_t>(pool_fd)),
                                                    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
  close(pool_fd);
  if (*import_pool != CUDA_SUCCESS) return static_cast<CUresult>(*import_pool);
  CUmemPoolPtrExportData data{};
  std::memcpy(data.reserved, order->data, sizeof data.reserved);
  return cuMemPoolImportPointer(pointer, *pool, &data);
}

int run_probe_child(int socket) {
  CUdevice device = 0;
  CUcontext primary = nullptr;
  if (!open_primary(&device, &primary)) return 1;
  Order order;
  ProbeReport report;
  CUmemoryPool pool = nullptr;
  CUdeviceptr block = 0;
  report.import_pointer = import(socket, &order, &pool, &block, &report.import_pool);
  if (report.import_pointer == CUDA_SUCCESS) {
    CUdeviceptr base = 0;
    std::size_t bytes = 0;
    report.range = cuMemGetAddressRange(&base, &bytes, block);
    report.range_base_offset = static_cast<long long>(base) - static_cast<long long>(block);
    report.range_bytes = bytes;
    const CUdeviceptr at = block + static_cast<CUdeviceptr>(order.offset);
    report.read = cuMemcpyDtoH(report.value, at, sizeof report.value);
    const bool inside_p = order.offset >= 0 && order.offset < static_cast<long long>(kBlocks[0].bytes);
    if (inside_p) {
      report.write = -2;
    } else {
      const unsigned char marker[4] = {0xee, 0xee, 0xee, 0xee};
      report.write = cuMemcpyHtoD(at, marker, sizeof marker);
      if (report.write == CUDA_SUCCESS) report.write = cuCtxSynchronize();
    }
    (void)cuMemFree(block);
  }
  streampool_test::send_with_fd(socket, &report, sizeof report, -1);
  return 0;
}

int run_free_child(int socket) {
  CUdevice device = 0;
  CUcontext primary = nullptr;
  if (!open_primary(&device, &primary)) return 1;
  Order order;
  FreeReport report;
  CUmemoryPool pool = nullptr;
  CUdeviceptr block = 0;
  report.import_pointer = import(socket, &order, &pool, &block, &report.import_pool);
  if (report.import_pointer == CUDA_SUCCESS) {
    CUcontext created = nullptr;
    CUstream stream = nullptr;
    CUdeviceptr copy = 0;
    if (check(cuCtxCreate(&created, nullptr, 0, device), "cuCtxCreate") &&
        check(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate") &&
        check(cuMemAlloc(&copy, kBlocks[0].bytes), "cuMemAlloc")) {
      int clock_khz = 0;
      cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0);
      auto cuda_stream = reinterpret_cast<cudaStream_t>(stream);
      spin<<<1, 1, 0, cuda_stream>>>(static_cast<long long>(clock_khz) * 300);  // ~300 ms
      copy_bytes<<<64, 256, 0, cuda_stream>>>(reinterpret_cast<const unsigned char*>(block),
                                              reinterpret_cast<unsigned char*>(copy), kBlocks[0].bytes);
      (void)check(cuCtxSetCurrent(primary), "cuCtxSetCurrent primary");
      const auto before_free = std::chrono::steady_clock::now();
      report.free_result = cuMemFreeAsync(block, stream);
      const auto after_free = std::chrono::steady_clock::now();
      report.sync_result = cuStreamSynchronize(stream);
      const auto after_sync = std::chrono::steady_clock::now();
      report.free_ms = std::chrono::duration<double, std::milli>(after_free - before_free).count();
      report.sync_ms = std::chrono::duration<double, std::milli>(after_sync - before_free).count();
      (void)cuCtxSetCurrent(created);
      unsigned char* host = static_cast<unsigned char*>(std::malloc(kBlocks[0].bytes));
      if (host != nullptr && cuMemcpyDtoH(host, copy, kBlocks[0].bytes) == CUDA_SUCCESS) {
        report.copied_intact = 1;
        for (std::size_t i = 0; i < kBlocks[0].bytes; ++i) {
          if (host[i] != kBlocks[0].fill) report.copied_intact = 0;
        }
      }
      std::free(host);
    }
  }
  streampool_test::send_with_fd(socket, &report, sizeof report, -1);
  return 0;
}

// --- the exporter ----------------------------------------------------------------------------

template <typename Report>
bool run_child(const char* self, const char* mode, int pool_fd, const Order& order, Report* report) {
  int ends[2] = {-1, -1};
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0) return false;
  if (!streampool_test::send_with_fd(ends[0], &order, sizeof order, pool_fd)) return false;
  const pid_t child = fork();
  if (child == 0) {
    const std::string socket = std::to_string(dup(ends[1]));  // without close-on-exec
    execl(self, self, mode, socket.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(ends[1]);
  int status = 0;
  const bool exited = child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  const bool answered = exited && streampool_test::receive_with_fd(ends[0], report, sizeof *report, nullptr);
  close(ends[0]);
  if (!answered) std::fprintf(stderr, "%s child: no report (status %d)\n", mode, status);
  return answered;
}

// What the exporter holds at `at`: the pattern name, or the read's error.
std::string exporter_view(CUdeviceptr at) {
  unsigned char bytes[4] = {};
  const CUresult result = cuMemcpyDtoH(bytes, at, sizeof bytes);
  return result == CUDA_SUCCESS ? pattern_name(bytes) : result_name(result);
}

int run_exporter(const char* self) {
  CUdevice device = 0;
  CUcontext primary = nullptr;
  CUstream stream = nullptr;
  if (!open_primary(&device, &primary) || !check(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate")) {
    return 1;
  }
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = device;
  props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  CUmemoryPool pool = nullptr;
  if (!check(cuMemPoolCreate(&pool, &props), "cuMemPoolCreate")) return 1;
  CUdeviceptr blocks[sizeof kBlocks / sizeof kBlocks[0]] = {};
  for (std::size_t i = 0; i < sizeof kBlocks / sizeof kBlocks[0]; ++i) {
    if (!check(cuMemAllocFromPoolAsync(&blocks[i], kBlocks[i].bytes, pool, stream), "alloc") ||
        !check(cuMemsetD8Async(blocks[i], kBlocks[i].fill, kBlocks[i].bytes, stream), "fill")) {
      return 1;
    }
  }
  if (!check(cuStreamSynchronize(stream), "sync")) return 1;
  for (std::size_t i = 0; i < sizeof kBlocks / sizeof kBlocks[0]; ++i) {
    std::printf("block %s bytes=%zu at_p%+lld\n", kBlocks[i].name, kBlocks[i].bytes,
                static_cast<long long>(blocks[i]) - static_cast<long long>(blocks[0]));
  }
  unsigned long long reserved = 0;
  cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved);
  std::printf("pool reserved=%llu\n", reserved);
  int pool_fd = -1;
  CUmemPoolPtrExportData data{};
  if (!check(cuMemPoolExportToShareableHandle(&pool_fd, pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0), "export") ||
      !check(cuMemPoolExportPointer(&data, blocks[0]), "export pointer")) {
    return 1;
  }
  Order order;
  std::memcpy(order.data, data.reserved, sizeof order.data);

  for (const Probe& probe : kProbes) {
    order.offset = probe.offset;
    const CUdeviceptr exporter_at = blocks[0] + static_cast<CUdeviceptr>(probe.offset);
    unsigned char saved[4] = {};
    const bool exporter_mapped = cuMemcpyDtoH(saved, exporter_at, sizeof saved) == CUDA_SUCCESS;
    ProbeReport report;
    if (!run_child(self, "probe", pool_fd, order, &report)) {
      std::printf("probe %s offset=%lld child_failed\n", probe.name, probe.offset);
      continue;
    }
    const std::string after = exporter_view(exporter_at);
    std::printf("probe %s offset=%lld import=%s range=%s:%lld,%llu read=%s value=%s write=%s exporter_sees=%s\n",
                probe.name, probe.offset, result_name(report.import_pointer), result_name(report.range),
                report.range_base_offset, report.range_bytes, result_name(report.read),
                report.read == CUDA_SUCCESS ? pattern_name(report.value) : "-", result_name(report.write),
                after.c_str());
    if (exporter_mapped) (void)cuMemcpyHtoD(exporter_at, saved, sizeof saved);  // as it was, for the next probe
  }

  order.offset = 0;
  FreeReport freed;
  if (run_child(self, "free", pool_fd, order, &freed)) {
    std::printf("free import=%s free=%s free_ms=%.1f sync=%s sync_ms=%.1f copy_intact=%d exporter_p=%s\n",
                result_name(freed.import_pointer), result_name(freed.free_result), freed.free_ms,
                result_name(freed.sync_result), freed.sync_ms, freed.copied_intact, exporter_view(blocks[0]).c_str());
  } else {
    std::printf("free child_failed\n");
  }
  close(pool_fd);
  for (CUdeviceptr block : blocks) cuMemFreeAsync(block, stream);
  cuStreamSynchronize(stream);
  cuMemPoolDestroy(pool);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "probe") == 0) return run_probe_child(std::atoi(argv[2]));
  if (argc == 3 && std::strcmp(argv[1], "free") == 0) return run_free_child(std::atoi(argv[2]));
  return run_exporter("/proc/self/exe");
}
