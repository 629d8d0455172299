// The exporting side of pools shared between processes (ipc.hpp, ipc_protocol.hpp).
//
// Each exported pool has a secret (two SipHash keys from getrandom) and a token (a random 64-bit
// name). Its first cuMemPoolExportToShareableHandle creates the socket pair and a service thread
// that answers importers until the pool is destroyed; every export hands out a duplicate of the
// same importer end. The thread calls only the real driver (never a hook) and the engine's
// thread-safe lookups.
#include <fcntl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "driver/device_context.hpp"
#include "ipc.hpp"
#include "ipc_protocol.hpp"
#include "hooks/process_state.hpp"

namespace streampool::interpose::ipc {

namespace detail {
std::atomic<bool> pointers_exported{false};
}  // namespace detail

namespace {

struct ExportedPool {
  core::Pool* pool = nullptr;
  core::PoolProps props;
  std::uint64_t token = 0;
  MacKey key;
  std::shared_ptr<driver::GranuleTable> granules;
  int service_end = -1;   // read by the service thread
  int importer_end = -1;  // duplicated for every export
  std::atomic<bool> stopping{false};

  ExportedPool() = default;
  ExportedPool(const ExportedPool&) = delete;
  ExportedPool& operator=(const ExportedPool&) = delete;
  ~ExportedPool() {
    if (service_end >= 0) close(service_end);
    if (importer_end >= 0) close(importer_end);
  }
};

struct PointerRecord {
  std::uint64_t token = 0;
  std::uint64_t generation = 0;
  std::uint64_t bytes = 0;
};

struct Exports {
  std::mutex mutex;
  std::unordered_map<const core::Pool*, std::shared_ptr<ExportedPool>> pools;
  std::unordered_map<std::uintptr_t, PointerRecord> pointers;  // exported, not freed since
  std::uint64_t next_generation = 1;
};

Exports& exports() {
  static auto* instance = new Exports();  // never destroyed: hooks may run at exit
  return *instance;
}

bool random_bytes(void* out, std::size_t size) noexcept {
  auto* bytes = static_cast<unsigned char*>(out);
  std::size_t filled = 0;
  while (filled < size) {
    ssize_t got = getrandom(bytes + filled, size - filled, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    filled += static_cast<std::size_t>(got);
  }
  return true;
}

std::shared_ptr<ExportedPool> exported(const core::Pool* pool) {
  Exports& all = exports();
  std::lock_guard<std::mutex> lock(all.mutex);
  auto entry = all.pools.find(pool);
  return entry == all.pools.end() ? nullptr : entry->second;
}

// --- the service thread ----------------------------------------------------------------------

void send_status(int reply, CUresult status) noexcept {
  PointerReply answer;
  answer.status = static_cast<std::int32_t>(status);
  (void)send_message(reply, &answer, sizeof answer, nullptr, 0, true);
}

void describe(const ExportedPool& exported_pool, int reply) noexcept {
  PoolDescription answer;
  answer.allocation_type = exported_pool.props.allocation_type;
  answer.location_type = exported_pool.props.location_type;
  answer.location_id = exported_pool.props.location_id;
  answer.kind = static_cast<std::int32_t>(exported_pool.props.kind);
  answer.token = exported_pool.token;
  (void)send_message(reply, &answer, sizeof answer, nullptr, 0, true);
}

// The data names a live allocation of this pool exported under exactly this generation.
bool authentic(const ExportedPool& exported_pool, const ExportData& data) {
  if (!well_formed(data) || data.token != exported_pool.token) return false;
  if (!same_tag(tag_for(exported_pool.key, data), data.tag)) return false;
  {
    Exports& all = exports();
    std::lock_guard<std::mutex> lock(all.mutex);
    auto record = all.pointers.find(static_cast<std::uintptr_t>(data.address));
    if (record == all.pointers.end() || record->second.token != data.token ||
        record->second.generation != data.generation || record->second.bytes != data.bytes) {
      return false;
    }
  }
  core::BlockInfo info;
  auto* address = reinterpret_cast<void*>(static_cast<std::uintptr_t>(data.address));
  return engine().lookup(address, &info) && info.base == data.address && info.pool == exported_pool.pool &&
         info.requested_bytes == data.bytes;
}

void map_pointer(const ExportedPool& exported_pool, const Request& request, int reply) {
  const ExportData data = read_export_data(request.data);
  if (!authentic(exported_pool, data)) return send_status(reply, CUDA_ERROR_INVALID_VALUE);
  // Blocking sends, bounded: the importer maps each batch before it reads the next, and one that
  // stalls cannot hold the service thread longer than this.
  timeval limit{kReplyTimeoutMs / 1000, 0};
  (void)setsockopt(reply, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
  const auto begin = static_cast<std::uintptr_t>(data.address);
  bool header_sent = false;
  MappingBatch batch;
  int fds[kMaxFdsPerMessage];
  std::size_t pending = 0;
  auto flush = [&] {
    batch.count = static_cast<std::uint32_t>(pending);
    const bool sent = send_message(reply, &batch, sizeof batch, fds, pending, false);
    for (std::size_t i = 0; i < pending; ++i) close(fds[i]);  // the importer has its own copies now
    pending = 0;
    return sent;
  };
  auto shape = [&](const driver::GranuleTable::RangeShape& range) {
    PointerReply answer;
    answer.mappings = static_cast<std::uint32_t>(range.mappings);
    answer.offset = begin - range.first_base;
    answer.bytes = data.bytes;
    answer.total = range.bytes;
    header_sent = send_message(reply, &answer, sizeof answer, nullptr, 0, false);
    return header_sent;
  };
  auto each = [&](std::size_t bytes, int fd) {
    batch.sizes[pending] = bytes;
    fds[pending++] = fd;
    return pending < kMaxFdsPerMessage || flush();
  };
  CUresult result = CUDA_SUCCESS;
  {
    // The service thread has no context of its own; the pool's device lends one.
    const CUdevice device = exported_pool.props.location_type == CU_MEM_LOCATION_TYPE_DEVICE
                                ? exported_pool.props.location_id
                                : 0;
    driver::ScopedDeviceContext scope(device);
    result = scope.result();
    if (result == CUDA_SUCCESS) result = exported_pool.granules->export_range(begin, begin + data.bytes, shape, each);
  }
  if (result == CUDA_SUCCESS && pending > 0) {
    (void)flush();
  } else {
    for (std::size_t i = 0; i < pending; ++i) close(fds[i]);
  }
  // A failure after the header: the importer sees the answer end early (the socket closes).
  if (!header_sent) send_status(reply, CUDA_ERROR_INVALID_VALUE);
}

void serve(std::shared_ptr<ExportedPool> exported_pool) {
  while (!exported_pool->stopping.load(std::memory_order_acquire)) {
    Request request;
    std::vector<int> fds;
    // A malformed message is dropped; the shutdown of pool_destroyed ends the wait at once (the
    // timeout only bounds how long a missed wake-up could keep the thread).
    if (!receive_message(exported_pool->service_end, &request, sizeof request, &fds, 1000)) continue;
    if (fds.size() != 1 || request.magic != kRequestMagic) {
      close_all(&fds);
      continue;
    }
    const int reply = fds.front();
    try {
      if (request.kind == static_cast<std::uint32_t>(RequestKind::describe_pool)) {
        describe(*exported_pool, reply);
      } else if (request.kind == static_cast<std::uint32_t>(RequestKind::map_pointer)) {
        map_pointer(*exported_pool, request, reply);
      } else {
        send_status(reply, CUDA_ERROR_INVALID_VALUE);
      }
    } catch (...) {
      send_status(reply, CUDA_ERROR_OUT_OF_MEMORY);
    }
    close(reply);
  }
}

// The socket pair and the service thread, on the first export of the pool.
CUresult start_serving(const std::shared_ptr<ExportedPool>& exported_pool) {
  if (exported_pool->importer_end >= 0) return CUDA_SUCCESS;
  int ends[2] = {-1, -1};
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ends) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
  exported_pool->service_end = ends[0];
  exported_pool->importer_end = ends[1];
  try {
    std::thread(serve, exported_pool).detach();
  } catch (...) {
    close(ends[0]);
    close(ends[1]);
    exported_pool->service_end = exported_pool->importer_end = -1;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  return CUDA_SUCCESS;
}

}  // namespace

namespace detail {
void forget_export(std::uintptr_t address) noexcept {
  Exports& all = exports();
  std::lock_guard<std::mutex> lock(all.mutex);
  all.pointers.erase(address);
}
}  // namespace detail

CUresult register_exportable(core::Pool* pool, const core::PoolProps& props,
                             std::shared_ptr<driver::GranuleTable> granules) noexcept {
  try {
    auto exported_pool = std::make_shared<ExportedPool>();
    exported_pool->pool = pool;
    exported_pool->props = props;
    exported_pool->granules = std::move(granules);
    if (!random_bytes(&exported_pool->token, sizeof exported_pool->token) ||
        !random_bytes(exported_pool->key.words, sizeof exported_pool->key.words)) {
      return CUDA_ERROR_OPERATING_SYSTEM;
    }
    Exports& all = exports();
    std::lock_guard<std::mutex> lock(all.mutex);
    all.pools[pool] = std::move(exported_pool);
    return CUDA_SUCCESS;
  } catch (...) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
}

CUresult export_pool(core::Pool* pool, int handle_type, unsigned long long flags, void* handle_out) noexcept {
  try {
    if (handle_out == nullptr || flags != 0 || !engine().is_pool(pool)) return CUDA_ERROR_INVALID_VALUE;
    if (handle_type == CU_MEM_HANDLE_TYPE_FABRIC) return CUDA_ERROR_NOT_SUPPORTED;
    std::shared_ptr<ExportedPool> exported_pool = exported(pool);
    // Not exportable (created without handle types, or imported), or not with this handle type.
    if (exported_pool == nullptr || handle_type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR ||
        (exported_pool->props.handle_types & static_cast<unsigned>(handle_type)) == 0) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    Exports& all = exports();
    std::lock_guard<std::mutex> lock(all.mutex);
    if (CUresult result = start_serving(exported_pool); result != CUDA_SUCCESS) return result;
    const int handle = fcntl(exported_pool->importer_end, F_DUPFD_CLOEXEC, 0);
    if (handle < 0) return CUDA_ERROR_OUT_OF_MEMORY;
    *static_cast<int*>(handle_out) = handle;
    return CUDA_SUCCESS;
  } catch (...) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
}

CUresult export_pointer(CUmemPoolPtrExportData* data_out, CUdeviceptr pointer) noexcept {
  try {
    if (data_out == nullptr || pointer == 0) return CUDA_ERROR_INVALID_VALUE;
    core::BlockInfo info;
    auto* address = reinterpret_cast<void*>(pointer);
    if (!engine().lookup(address, &info) || info.base != static_cast<std::uintptr_t>(pointer)) {
      return CUDA_ERROR_INVALID_VALUE;  // not the start of a live pool allocation
    }
    std::shared_ptr<ExportedPool> exported_pool = exported(info.pool);
    if (exported_pool == nullptr) return CUDA_ERROR_INVALID_VALUE;  // its pool is not exportable
    ExportData data;
    data.magic = kExportDataMagic;
    data.version = kExportDataVersion;
    data.token = exported_pool->token;
    data.address = static_cast<std::uint64_t>(pointer);
    data.bytes = info.requested_bytes;
    {
      Exports& all = exports();
      std::lock_guard<std::mutex> lock(all.mutex);
      PointerRecord& record = all.pointers[static_cast<std::uintptr_t>(pointer)];
      if (record.token != data.token || record.bytes != data.bytes || record.generation == 0) {
        record = PointerRecord{data.token, all.next_generation++, data.bytes};
      }
      data.generation = record.generation;
    }
    detail::pointers_exported.store(true, std::memory_order_relaxed);
    data.tag = tag_for(exported_pool->key, data);
    static_assert(sizeof data_out->reserved == sizeof data);
    std::memcpy(data_out->reserved, &data, sizeof data);
    return CUDA_SUCCESS;
  } catch (...) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
}

namespace detail {
// Called by pool_destroyed (ipc_importer.cpp holds the other half).
void stop_exporting(const core::Pool* pool) noexcept {
  std::shared_ptr<ExportedPool> exported_pool;
  {
    Exports& all = exports();
    std::lock_guard<std::mutex> lock(all.mutex);
    auto entry = all.pools.find(pool);
    if (entry == all.pools.end()) return;
    exported_pool = std::move(entry->second);
    all.pools.erase(entry);
  }
  exported_pool->stopping.store(true, std::memory_order_release);
  // Wakes the service thread; importers asking from now on find the socket shut.
  if (exported_pool->service_end >= 0) shutdown(exported_pool->service_end, SHUT_RDWR);
}
}  // namespace detail

}  // namespace streampool::interpose::ipc
