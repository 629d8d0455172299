// Every kind of pool used by kernels, and a pool shared between processes, with the CUDA runtime:
//
//   pool_kinds kinds   device, the default device pool, pinned host, host NUMA node 0, managed (on the
//                      device and with no location) and an IPC-capable device pool: a kernel writes a
//                      pattern and another checks it; for host and managed memory the CPU reads what
//                      the kernel wrote and a kernel reads what the CPU wrote; statistics and trimming.
//   pool_kinds ipc     a parent allocates from a POSIX-fd pool and fills with a kernel, exports the
//                      pool and the pointers, and runs itself as a child (fork + exec); the child gets
//                      the descriptor over a unix socket (SCM_RIGHTS), imports the pool and the
//                      pointers, checks them with a kernel, writes back with a kernel, frees them
//                      first; the parent checks the write-back. Another pool's data must not import.
//
// Standard output holds only what must be identical on NVIDIA's driver alone and under streampool
// (tools/gpu/pool_kinds_check.sh compares the two); notes that may differ go to standard error.
// POOL_KINDS_NO_KERNELS=1 replaces the kernels by copies (for a dry run over the fake driver).
#include <cuda_runtime.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../tests/common/fd_passing.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CHECK(call)                                                                                  \
  do {                                                                                               \
    cudaError_t check_error = (call);                                                                \
    if (check_error != cudaSuccess) {                                                                \
      std::fprintf(stderr, "%s:%d: %s -> %s\n", __FILE__, __LINE__, #call, cudaGetErrorName(check_error)); \
      std::exit(1);                                                                                  \
    }                                                                                                \
  } while (0)

namespace {

using streampool_test::receive_with_fd;
using streampool_test::send_with_fd;

constexpr size_t kMiB = size_t{1} << 20;
bool use_kernels = true;

__host__ __device__ unsigned pattern(unsigned seed, size_t index) {
  return seed ^ static_cast<unsigned>(index * 2654435761u);
}

__global__ void fill_kernel(unsigned* words, size_t count, unsigned seed) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += size_t{gridDim.x} * blockDim.x) {
    words[i] = pattern(seed, i);
  }
}

__global__ void add_kernel(unsigned* words, size_t count, unsigned delta) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += size_t{gridDim.x} * blockDim.x) {
    words[i] += delta;
  }
}

__global__ void check_kernel(const unsigned* words, size_t count, unsigned seed, unsigned delta,
                             unsigned long long* wrong) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += size_t{gridDim.x} * blockDim.x) {
    if (words[i] != pattern(seed, i) + delta) atomicAdd(wrong, 1ull);
  }
}

void device_fill(void* memory, size_t bytes, unsigned seed, cudaStream_t stream) {
  const size_t count = bytes / sizeof(unsigned);
  if (use_kernels) {
    fill_kernel<<<264, 256, 0, stream>>>(static_cast<unsigned*>(memory), count, seed);
    CHECK(cudaGetLastError());
  } else {
    std::vector<unsigned> host(count);
    for (size_t i = 0; i < count; ++i) host[i] = pattern(seed, i);
    CHECK(cudaMemcpyAsync(memory, host.data(), count * sizeof(unsigned), cudaMemcpyHostToDevice, stream));
  }
  CHECK(cudaStreamSynchronize(stream));
}

void device_add(void* memory, size_t bytes, unsigned delta, cudaStream_t stream) {
  const size_t count = bytes / sizeof(unsigned);
  if (use_kernels) {
    add_kernel<<<264, 256, 0, stream>>>(static_cast<unsigned*>(memory), count, delta);
    CHECK(cudaGetLastError());
  } else {
    std::vector<unsigned> host(count);
    CHECK(cudaMemcpyAsync(host.data(), memory, count * sizeof(unsigned), cudaMemcpyDeviceToHost, stream));
    CHECK(cudaStreamSynchronize(stream));
    for (unsigned& word : host) word += delta;
    CHECK(cudaMemcpyAsync(memory, host.data(), count * sizeof(unsigned), cudaMemcpyHostToDevice, stream));
  }
  CHECK(cudaStreamSynchronize(stream));
}

// How many words differ from the pattern (+ delta), as the device sees them.
unsigned long long device_wrong(const void* memory, size_t bytes, unsigned seed, unsigned delta,
                                cudaStream_t stream) {
  const size_t count = bytes / sizeof(unsigned);
  unsigned long long wrong = 0;
  if (use_kernels) {
    unsigned long long* counter = nullptr;
    CHECK(cudaMallocAsync(&counter, sizeof *counter, stream));
    CHECK(cudaMemsetAsync(counter, 0, sizeof *counter, stream));
    check_kernel<<<264, 256, 0, stream>>>(static_cast<const unsigned*>(memory), count, seed, delta, counter);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpyAsync(&wrong, counter, sizeof wrong, cudaMemcpyDeviceToHost, stream));
    CHECK(cudaFreeAsync(counter, stream));
  } else {
    std::vector<unsigned> host(count);
    CHECK(cudaMemcpyAsync(host.data(), memory, count * sizeof(unsigned), cudaMemcpyDeviceToHost, stream));
    CHECK(cudaStreamSynchronize(stream));
    for (size_t i = 0; i < count; ++i) wrong += host[i] != pattern(seed, i) + delta;
  }
  CHECK(cudaStreamSynchronize(stream));
  return wrong;
}

unsigned long long cpu_wrong(const void* memory, size_t bytes, unsigned seed) {
  const auto* words = static_cast<const volatile unsigned*>(memory);
  unsigned long long wrong = 0;
  for (size_t i = 0; i < bytes / sizeof(unsigned); ++i) wrong += words[i] != pattern(seed, i);
  return wrong;
}

void cpu_fill(void* memory, size_t bytes, unsigned seed) {
  auto* words = static_cast<volatile unsigned*>(memory);
  for (size_t i = 0; i < bytes / sizeof(unsigned); ++i) words[i] = pattern(seed, i);
}

const char* type_name(cudaMemoryType type) {
  switch (type) {
    case cudaMemoryTypeHost: return "host";
    case cudaMemoryTypeDevice: return "device";
    case cudaMemoryTypeManaged: return "managed";
    default: return "unregistered";
  }
}

unsigned long long pool_u64(cudaMemPool_t pool, cudaMemPoolAttr attribute) {
  unsigned long long value = 0;
  CHECK(cudaMemPoolGetAttribute(pool, attribute, &value));
  return value;
}

struct Kind {
  const char* name;
  cudaMemAllocationType type;
  cudaMemLocationType location;
  int id;
  cudaMemAllocationHandleType handles;
  bool cpu_access;
  bool use_default;
};

int run_kinds() {
  CHECK(cudaSetDevice(0));
  cudaStream_t stream = nullptr;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const Kind kinds[] = {
      {"device", cudaMemAllocationTypePinned, cudaMemLocationTypeDevice, 0, cudaMemHandleTypeNone, false, false},
      {"device-default", cudaMemAllocationTypePinned, cudaMemLocationTypeDevice, 0, cudaMemHandleTypeNone, false, true},
      {"device-ipc", cudaMemAllocationTypePinned, cudaMemLocationTypeDevice, 0, cudaMemHandleTypePosixFileDescriptor,
       false, false},
      {"host", cudaMemAllocationTypePinned, cudaMemLocationTypeHost, 0, cudaMemHandleTypeNone, true, false},
      {"host-numa-0", cudaMemAllocationTypePinned, cudaMemLocationTypeHostNuma, 0, cudaMemHandleTypeNone, true, false},
      {"managed-device", cudaMemAllocationTypeManaged, cudaMemLocationTypeDevice, 0, cudaMemHandleTypeNone, true,
       false},
      {"managed-none", cudaMemAllocationTypeManaged, cudaMemLocationTypeNone, 0, cudaMemHandleTypeNone, true, false},
  };
  int failures = 0;
  unsigned seed = 0x1000;
  for (const Kind& kind : kinds) {
    seed += 0x101;
    cudaMemPool_t pool = nullptr;
    if (kind.use_default) {
      CHECK(cudaDeviceGetDefaultMemPool(&pool, 0));
    } else {
      cudaMemPoolProps props{};
      props.allocType = kind.type;
      props.handleTypes = kind.handles;
      props.location.type = kind.location;
      props.location.id = kind.id;
      cudaError_t created = cudaMemPoolCreate(&pool, &props);
      if (created != cudaSuccess) {
        std::printf("kind %s: create failed: %s\n", kind.name, cudaGetErrorName(created));
        ++failures;
        continue;
      }
    }
    if (kind.location == cudaMemLocationTypeHost || kind.location == cudaMemLocationTypeHostNuma) {
      // A pool in host memory is the CPU's alone until the device is given access.
      cudaMemAccessDesc access{};
      access.location.type = cudaMemLocationTypeDevice;
      access.location.id = 0;
      access.flags = cudaMemAccessFlagsProtReadWrite;
      const cudaError_t granted = cudaMemPoolSetAccess(pool, &access, 1);
      if (granted != cudaSuccess) {
        std::printf("kind %s: device access refused: %s\n", kind.name, cudaGetErrorName(granted));
        ++failures;
        cudaMemPoolDestroy(pool);
        continue;
      }
    }
    const size_t bytes = 8 * kMiB + 64;
    void* memory = nullptr;
    CHECK(cudaMallocFromPoolAsync(&memory, bytes, pool, stream));
    device_fill(memory, bytes, seed, stream);
    const unsigned long long device_read = device_wrong(memory, bytes, seed, 0, stream);
    unsigned long long cpu_read = 0;
    unsigned long long device_read_cpu_write = 0;
    if (kind.cpu_access) {
      cpu_read = cpu_wrong(memory, bytes, seed);
      cpu_fill(memory, kMiB, seed + 7);
      device_read_cpu_write = device_wrong(memory, kMiB, seed + 7, 0, stream);
    }
    cudaPointerAttributes attributes{};
    CHECK(cudaPointerGetAttributes(&attributes, memory));
    const unsigned long long used = pool_u64(pool, cudaMemPoolAttrUsedMemCurrent);
    CHECK(cudaFreeAsync(memory, stream));
    CHECK(cudaStreamSynchronize(stream));
    CHECK(cudaMemPoolTrimTo(pool, 0));
    const unsigned long long reserved_after_trim = pool_u64(pool, cudaMemPoolAttrReservedMemCurrent);
    const bool good = device_read == 0 && cpu_read == 0 && device_read_cpu_write == 0 && used == bytes &&
                      reserved_after_trim == 0;
    failures += good ? 0 : 1;
    std::printf("kind %s: %s type=%s kernel-write/kernel-read wrong=%llu", kind.name, good ? "ok" : "FAILED",
                type_name(attributes.type), device_read);
    if (kind.cpu_access) {
      std::printf(" kernel-write/cpu-read wrong=%llu cpu-write/kernel-read wrong=%llu", cpu_read,
                  device_read_cpu_write);
    }
    std::printf(" used=%llu reserved-after-trim=%llu\n", used, reserved_after_trim);
    if (!kind.use_default) CHECK(cudaMemPoolDestroy(pool));
  }
  CHECK(cudaStreamDestroy(stream));
  std::printf("kinds: %s\n", failures == 0 ? "all ok" : "FAILED");
  return failures == 0 ? 0 : 1;
}

// --- ipc ---------------------------------------------------------------------------------------

struct Order {
  cudaMemPoolPtrExportData data[3];  // two allocations of the shared pool, one of another pool
  unsigned long long bytes[2];
  unsigned seeds[2];
};



int run_ipc_child(int socket) {
  CHECK(cudaSetDevice(0));
  Order order{};
  int pool_fd = -1;
  if (!receive_with_fd(socket, &order, sizeof order, &pool_fd) || pool_fd < 0) {
    std::printf("child: nothing received\n");
    return 1;
  }
  cudaStream_t stream = nullptr;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaMemPool_t pool = nullptr;
  CHECK(cudaMemPoolImportFromShareableHandle(&pool, reinterpret_cast<void*>(static_cast<intptr_t>(pool_fd)),
                                             cudaMemHandleTypePosixFileDescriptor, 0));
  close(pool_fd);
  cudaMemAccessFlags flags = cudaMemAccessFlagsProtNone;
  cudaMemLocation location{};
  location.type = cudaMemLocationTypeDevice;
  location.id = 0;
  CHECK(cudaMemPoolGetAccess(&flags, pool, &location));
  std::printf("child: imported pool, device 0 access %s\n", flags == cudaMemAccessFlagsProtReadWrite ? "rw" : "other");
  void* other = nullptr;
  const cudaError_t other_result = cudaMemPoolImportPointer(&other, pool, &order.data[2]);
  (void)cudaGetLastError();
  std::printf("child: another pool's data %s\n", other_result == cudaSuccess ? "IMPORTED" : "refused");
  cudaMemPoolPtrExportData forged = order.data[0];
  forged.reserved[20] ^= 0x40;
  void* forged_pointer = nullptr;
  const cudaError_t forged_result = cudaMemPoolImportPointer(&forged_pointer, pool, &forged);
  (void)cudaGetLastError();
  std::fprintf(stderr, "note: child: export data with byte 20 altered: %s\n", cudaGetErrorName(forged_result));
  if (forged_result == cudaSuccess) CHECK(cudaFreeAsync(forged_pointer, stream));
  int failures = 0;
  void* imported[2] = {};
  for (int i = 0; i < 2; ++i) {
    CHECK(cudaMemPoolImportPointer(&imported[i], pool, &order.data[i]));
    const unsigned long long wrong = device_wrong(imported[i], order.bytes[i], order.seeds[i], 0, stream);
    std::printf("child: allocation %d (%llu bytes) imported, kernel-read wrong=%llu\n", i, order.bytes[i], wrong);
    failures += wrong != 0;
    device_add(imported[i], order.bytes[i], 1, stream);  // the write-back the parent checks
  }
  for (void* pointer : imported) CHECK(cudaFreeAsync(pointer, stream));  // before the exporter frees
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaMemPoolDestroy(pool));
  CHECK(cudaStreamDestroy(stream));
  std::fflush(stdout);
  return failures == 0 ? 0 : 1;
}

int run_ipc_parent(const char* self) {
  CHECK(cudaSetDevice(0));
  int supported = 0;
  CHECK(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolSupportedHandleTypes, 0));
  std::printf("parent: POSIX fd pools %s\n",
              (supported & cudaMemHandleTypePosixFileDescriptor) != 0 ? "supported" : "NOT supported");
  cudaStream_t stream = nullptr;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypePosixFileDescriptor;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 0;
  cudaMemPool_t pool = nullptr;
  cudaMemPool_t other_pool = nullptr;
  CHECK(cudaMemPoolCreate(&pool, &props));
  CHECK(cudaMemPoolCreate(&other_pool, &props));
  // NVIDIA's driver refuses to export a pointer of a pool not yet exported (as its own sample
  // orders the calls): the pools first.
  int pool_fd = -1;
  CHECK(cudaMemPoolExportToShareableHandle(&pool_fd, pool, cudaMemHandleTypePosixFileDescriptor, 0));
  int other_fd = -1;
  CHECK(cudaMemPoolExportToShareableHandle(&other_fd, other_pool, cudaMemHandleTypePosixFileDescriptor, 0));
  close(other_fd);
  Order order{};
  order.bytes[0] = 3 * kMiB + 128;
  order.bytes[1] = 64 * kMiB;
  order.seeds[0] = 0x1234;
  order.seeds[1] = 0xabcd;
  void* memory[2] = {};
  for (int i = 0; i < 2; ++i) {
    CHECK(cudaMallocFromPoolAsync(&memory[i], order.bytes[i], pool, stream));
    device_fill(memory[i], order.bytes[i], order.seeds[i], stream);
    CHECK(cudaMemPoolExportPointer(&order.data[i], memory[i]));
  }
  void* elsewhere = nullptr;
  CHECK(cudaMallocFromPoolAsync(&elsewhere, kMiB, other_pool, stream));
  CHECK(cudaMemPoolExportPointer(&order.data[2], elsewhere));

  int ends[2] = {-1, -1};
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, ends) != 0 || !send_with_fd(ends[0], &order, sizeof order, pool_fd)) {
    std::printf("parent: could not hand the pool over\n");
    return 1;
  }
  close(pool_fd);
  std::fflush(stdout);
  const pid_t child = fork();
  if (child == 0) {
    const std::string socket = std::to_string(ends[1]);
    execl(self, self, "ipc-child", socket.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(ends[1]);
  int status = 0;
  waitpid(child, &status, 0);
  const bool child_ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  std::printf("parent: child %s\n", child_ok ? "exited 0" : "FAILED");
  int failures = child_ok ? 0 : 1;
  for (int i = 0; i < 2; ++i) {
    const unsigned long long wrong = device_wrong(memory[i], order.bytes[i], order.seeds[i], 1, stream);
    std::printf("parent: allocation %d holds the child's write-back, wrong=%llu\n", i, wrong);
    failures += wrong != 0;
    CHECK(cudaFreeAsync(memory[i], stream));
  }
  CHECK(cudaFreeAsync(elsewhere, stream));
  CHECK(cudaStreamSynchronize(stream));
  std::printf("parent: used after frees %llu\n", pool_u64(pool, cudaMemPoolAttrUsedMemCurrent));
  CHECK(cudaMemPoolDestroy(pool));
  CHECK(cudaMemPoolDestroy(other_pool));
  CHECK(cudaStreamDestroy(stream));
  std::printf("ipc: %s\n", failures == 0 ? "all ok" : "FAILED");
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  use_kernels = std::getenv("POOL_KINDS_NO_KERNELS") == nullptr;
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "kinds") return run_kinds();
  if (mode == "ipc") return run_ipc_parent("/proc/self/exe");
  if (mode == "ipc-child" && argc > 2) return run_ipc_child(std::atoi(argv[2]));
  std::fprintf(stderr, "usage: %s kinds | ipc\n", argv[0]);
  return 2;
}
