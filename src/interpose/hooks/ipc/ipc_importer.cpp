// The importing side of pools shared between processes (ipc.hpp, ipc_protocol.hpp).
//
// An imported pool is an engine pool (so that attributes, access and destroy behave as for any
// pool) whose backing refuses to reserve: it cannot allocate, as the spec says. Each imported
// allocation is mapped on its own: a fresh reservation as large as the physical allocations behind
// it, each imported from the descriptor the exporter sent and mapped in address order, so the
// importer's pointer is the reservation plus the allocation's offset in its first mapping.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "driver/device_context.hpp"
#include "ipc.hpp"
#include "ipc_protocol.hpp"
#include "hooks/process_state.hpp"

namespace streampool::interpose::ipc {

namespace detail {
std::atomic<bool> pointers_imported{false};
}  // namespace detail

namespace {

// An imported pool's backing: no memory of its own.
class ImportedBacking final : public core::Backing {
 public:
  std::size_t granule_bytes() const override { return std::size_t{2} << 20; }
  std::size_t reservation_bytes() const override { return 0; }
  core::Status reserve(std::size_t, std::uintptr_t*) override { return core::Status::invalid_value; }
  core::Status unreserve(std::uintptr_t, std::size_t) override { return core::Status::success; }
  core::Status map(std::uintptr_t, std::size_t, std::span<const core::AccessDescriptor>) override {
    return core::Status::invalid_value;
  }
  core::Status unmap(std::uintptr_t, std::size_t) override { return core::Status::success; }
  core::Status set_access(std::uintptr_t, std::size_t, std::span<const core::AccessDescriptor>) override {
    return core::Status::success;  // applied to each imported allocation as it is mapped
  }
};

struct ImportedPool {
  int channel = -1;  // our duplicate of the shareable handle
  std::uint64_t token = 0;
  core::PoolProps props;
};

struct Mapping {
  CUdeviceptr address = 0;
  std::size_t bytes = 0;
};

struct ImportedPointer {
  CUdeviceptr reservation = 0;
  std::size_t reserved_bytes = 0;
  std::vector<Mapping> mappings;
  CUdevice context_device = 0;
  std::uint64_t token = 0;
  std::uint64_t generation = 0;
};

struct Imports {
  std::mutex mutex;
  std::unordered_map<const core::Pool*, ImportedPool> pools;
  std::map<CUdeviceptr, ImportedPointer> pointers;  // by the address the importer was given
};

Imports& imports() {
  static auto* instance = new Imports();  // never destroyed: hooks may run at exit
  return *instance;
}

// Sends a request on the pool's shared channel with a private reply socket attached, and returns
// our end of that socket, or -1.
int ask(int channel, RequestKind kind, const unsigned char* data) noexcept {
  int ends[2] = {-1, -1};
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ends) != 0) return -1;
  Request request;
  request.kind = static_cast<std::uint32_t>(kind);
  if (data != nullptr) std::memcpy(request.data, data, sizeof request.data);
  const bool sent = send_message(channel, &request, sizeof request, &ends[1], 1, false);
  close(ends[1]);
  if (!sent) {
    close(ends[0]);
    return -1;
  }
  return ends[0];
}

bool is_seqpacket_socket(int fd) noexcept {
  struct stat info {};
  if (fd < 0 || fstat(fd, &info) != 0 || !S_ISSOCK(info.st_mode)) return false;
  int type = 0;
  socklen_t length = sizeof type;
  return getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &length) == 0 && type == SOCK_SEQPACKET;
}

CUdevice device_for(const core::PoolProps& props) noexcept {
  return props.location_type == CU_MEM_LOCATION_TYPE_DEVICE && driver::valid_device(props.location_id)
             ? props.location_id
             : 0;
}

// Who may touch an imported allocation: whom the imported pool grants access (its own device
// read-write, others as cuMemPoolSetAccess set); for host memory every device and the CPU.
std::vector<CUmemAccessDesc> access_for(core::Pool* pool, const core::PoolProps& props) {
  std::vector<CUmemAccessDesc> list;
  int devices = 0;
  if (driver::device_count(&devices) != CUDA_SUCCESS) devices = 0;
  for (int device = 0; device < devices; ++device) {
    // Pinned host memory is every device's, as in the exporter (VmmBacking grants them all).
    int flags = props.kind == core::PoolKind::pinned_host ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE
                                                          : CU_MEM_ACCESS_FLAGS_PROT_NONE;
    if (props.kind != core::PoolKind::pinned_host &&
        !core::ok(engine().get_access(pool, CU_MEM_LOCATION_TYPE_DEVICE, device, &flags))) {
      continue;
    }
    if (flags == CU_MEM_ACCESS_FLAGS_PROT_NONE) continue;
    CUmemAccessDesc desc{};
    desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    desc.location.id = device;
    desc.flags = static_cast<CUmemAccess_flags>(flags);
    list.push_back(desc);
  }
  if (props.kind == core::PoolKind::pinned_host) {
    CUmemAccessDesc desc{};
    desc.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
    desc.location.id = props.location_type == CU_MEM_LOCATION_TYPE_HOST_NUMA ? props.location_id : 0;
    desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    list.push_back(desc);
  }
  return list;
}

void unmap_all(const ImportedPointer& imported) noexcept {
  const driver::DriverTable& table = driver::real();
  driver::ScopedDeviceContext scope(imported.context_device);
  for (const Mapping& mapping : imported.mappings) {
    if (table.cuMemUnmap != nullptr) table.cuMemUnmap(mapping.address, mapping.bytes);
  }
  if (imported.reservation != 0 && table.cuMemAddressFree != nullptr) {
    table.cuMemAddressFree(imported.reservation, imported.reserved_bytes);
  }
  if (insight_hooks::nvtx_enabled() && imported.reservation != 0) insight_hooks::nvtx_unmapped(imported.reservation);
}

// --- stream-ordered frees of imported pointers -------------------------------------------------
//
// cuMemFreeAsync(ptr, S) of an imported pointer must not unmap before S's work up to the free is
// done, whatever context S belongs to. The free enqueues a host function on S (in S's context)
// behind that work; the host function only hands the mapping to the reaper thread (a host
// function may not call the driver), which unmaps it. The reaper takes no lock of the hooks
// while it calls the driver, and the host function takes only the reaper's queue lock, which
// nobody holds across a driver call: nothing waits in a circle.
struct Reaper {
  std::mutex mutex;
  std::condition_variable wake;
  std::deque<ImportedPointer*> ready;  // their streams reached the free
  pid_t serving = 0;                   // the process whose thread serves the queue (a forked child starts its own)
};

Reaper& reaper() {
  static auto* instance = new Reaper();  // never destroyed: host functions may run at exit
  return *instance;
}

void reap_forever(Reaper* queue) {
  for (;;) {
    ImportedPointer* imported = nullptr;
    {
      std::unique_lock<std::mutex> lock(queue->mutex);
      queue->wake.wait(lock, [queue] { return !queue->ready.empty(); });
      imported = queue->ready.front();
      queue->ready.pop_front();
    }
    unmap_all(*imported);
    delete imported;
  }
}

// The host function enqueued behind a free: the stream's work before it is done.
void CUDA_CB stream_reached_free(void* user) {
  Reaper& queue = reaper();
  {
    std::lock_guard<std::mutex> lock(queue.mutex);
    queue.ready.push_back(static_cast<ImportedPointer*>(user));
  }
  queue.wake.notify_one();
}

bool reaper_running() noexcept {
  Reaper& queue = reaper();
  std::lock_guard<std::mutex> lock(queue.mutex);
  if (queue.serving == getpid()) return true;
  try {
    queue.ready.clear();  // a forked child's copy of its parent's queue: not its mappings
    std::thread(reap_forever, &queue).detach();
  } catch (...) {
    return false;
  }
  queue.serving = getpid();
  return true;
}

// Enqueues the unmap of `imported` behind `stream`'s work, in the stream's context. False if the
// stream could not take the host function (the caller then waits for it itself).
bool unmap_behind(CUstream stream, ImportedPointer* imported) noexcept {
  const driver::DriverTable& table = driver::real();
  if (table.cuLaunchHostFunc == nullptr || table.cuStreamGetCtx == nullptr || !reaper_running()) return false;
  CUcontext context = nullptr;
  if (table.cuStreamGetCtx(stream, &context) != CUDA_SUCCESS || context == nullptr) return false;
  driver::ScopedContext scope(context);
  if (scope.result() != CUDA_SUCCESS) return false;
  return table.cuLaunchHostFunc(stream, &stream_reached_free, imported) == CUDA_SUCCESS;
}

// Sets who may touch the whole imported range, once everything is mapped.
CUresult grant_access(core::Pool* pool, const core::PoolProps& props, const ImportedPointer& imported) {
  const driver::DriverTable& table = driver::real();
  std::vector<CUmemAccessDesc> access = access_for(pool, props);
  if (access.empty()) return CUDA_ERROR_INVALID_VALUE;
  CUresult result = table.cuMemSetAccess(imported.reservation, imported.reserved_bytes, access.data(), access.size());
  if (result == CUDA_ERROR_INVALID_VALUE && props.kind == core::PoolKind::pinned_host && access.size() > 1) {
    // Drivers that take no host descriptor map host memory CPU-accessible already.
    access.pop_back();
    result = table.cuMemSetAccess(imported.reservation, imported.reserved_bytes, access.data(), access.size());
  }
  return result;
}

// Imports and maps one physical allocation at the end of what is mapped so far.
CUresult map_one(int fd, std::size_t bytes, ImportedPointer* imported) {
  const driver::DriverTable& table = driver::real();
  CUdeviceptr at = imported->reservation;
  for (const Mapping& mapping : imported->mappings) at += mapping.bytes;
  CUmemGenericAllocationHandle handle = 0;
  void* os_handle = reinterpret_cast<void*>(static_cast<std::intptr_t>(fd));
  CUresult result = table.cuMemImportFromShareableHandle(&handle, os_handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  if (result != CUDA_SUCCESS) return result;
  result = table.cuMemMap(at, bytes, 0, handle, 0);
  table.cuMemRelease(handle);  // the mapping holds the memory now
  if (result != CUDA_SUCCESS) return result;
  imported->mappings.push_back(Mapping{at, bytes});
  return CUDA_SUCCESS;
}

// Receives the exporter's answer to map_pointer and maps it: the header, a reservation as large as
// the physical allocations, then each batch of descriptors as it arrives, mapped back to back.
// On failure what was mapped stays in *imported for unmap_all.
CUresult receive_and_map(int reply, core::Pool* pool, const core::PoolProps& props, PointerReply* header,
                         ImportedPointer* imported) {
  const driver::DriverTable& table = driver::real();
  if (table.cuMemImportFromShareableHandle == nullptr || table.cuMemAddressReserve == nullptr ||
      table.cuMemMap == nullptr || table.cuMemSetAccess == nullptr) {
    return driver::missing_entry_result();
  }
  std::vector<int> none;
  const bool received = receive_message(reply, header, sizeof *header, &none, kReplyTimeoutMs);
  close_all(&none);
  if (!received || header->magic != kReplyMagic || header->status != CUDA_SUCCESS || header->mappings == 0 ||
      header->total == 0 || header->offset >= header->total || header->bytes == 0 ||
      header->bytes > header->total - header->offset) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  imported->context_device = device_for(props);
  driver::ScopedDeviceContext scope(imported->context_device);
  if (scope.result() != CUDA_SUCCESS) return scope.result();
  const auto total = static_cast<std::size_t>(header->total);
  CUresult result = table.cuMemAddressReserve(&imported->reservation, total, 0, 0, 0);
  if (result != CUDA_SUCCESS) return result;
  imported->reserved_bytes = total;
  std::size_t mapped_bytes = 0;
  while (imported->mappings.size() < header->mappings) {
    MappingBatch batch;
    std::vector<int> fds;
    if (!receive_message(reply, &batch, sizeof batch, &fds, kReplyTimeoutMs) || batch.magic != kReplyMagic ||
        batch.count == 0 || batch.count > kMaxFdsPerMessage || fds.size() != batch.count ||
        imported->mappings.size() + batch.count > header->mappings) {
      close_all(&fds);
      return CUDA_ERROR_INVALID_VALUE;
    }
    for (std::size_t i = 0; i < batch.count && result == CUDA_SUCCESS; ++i) {
      const auto bytes = static_cast<std::size_t>(batch.sizes[i]);
      if (bytes == 0 || bytes > total - mapped_bytes) {
        result = CUDA_ERROR_INVALID_VALUE;
        break;
      }
      result = map_one(fds[i], bytes, imported);
      mapped_bytes += bytes;
    }
    close_all(&fds);
    if (result != CUDA_SUCCESS) return result;
  }
  if (mapped_bytes != total) return CUDA_ERROR_INVALID_VALUE;
  return grant_access(pool, props, *imported);
}

}  // namespace

CUresult import_pool(CUmemoryPool* pool_out, void* handle, int handle_type, unsigned long long flags) noexcept {
  try {
    if (pool_out == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    if (handle_type == CU_MEM_HANDLE_TYPE_FABRIC) return CUDA_ERROR_NOT_SUPPORTED;
    if (handle_type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) return CUDA_ERROR_INVALID_VALUE;
    const int fd = static_cast<int>(reinterpret_cast<std::intptr_t>(handle));
    if (!is_seqpacket_socket(fd)) return CUDA_ERROR_INVALID_VALUE;
    const int channel = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (channel < 0) return CUDA_ERROR_INVALID_VALUE;
    const int reply = ask(channel, RequestKind::describe_pool, nullptr);
    PoolDescription description;
    std::vector<int> fds;
    const bool answered = reply >= 0 && receive_message(reply, &description, sizeof description, &fds, kReplyTimeoutMs);
    if (reply >= 0) close(reply);
    close_all(&fds);
    if (!answered || description.magic != kReplyMagic || description.status != CUDA_SUCCESS ||
        description.token == 0) {
      close(channel);
      return CUDA_ERROR_INVALID_VALUE;
    }
    core::PoolProps props;
    props.kind = static_cast<core::PoolKind>(description.kind);
    props.allocation_type = description.allocation_type;
    props.location_type = description.location_type;
    props.location_id = description.location_id;
    props.handle_types = 0;  // an imported pool cannot be exported again
    props.max_size = 0;
    if (props.location_type == CU_MEM_LOCATION_TYPE_DEVICE && !driver::valid_device(props.location_id)) {
      props.location_type = driver::kMemLocationTypeInvisible;  // not a device this process sees
      props.location_id = -2;                                     // cudaInvalidDeviceId
    }
    core::Pool* pool = nullptr;
    core::Status status = engine().create_pool(props, std::make_unique<ImportedBacking>(), &pool);
    if (!core::ok(status)) {
      close(channel);
      return to_cuda(status);
    }
    {
      Imports& all = imports();
      std::lock_guard<std::mutex> lock(all.mutex);
      all.pools[pool] = ImportedPool{channel, description.token, props};
    }
    *pool_out = reinterpret_cast<CUmemoryPool>(pool);
    return CUDA_SUCCESS;
  } catch (...) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
}

CUresult import_pointer(CUdeviceptr* pointer_out, core::Pool* pool, const CUmemPoolPtrExportData* data) noexcept {
  try {
    if (pointer_out == nullptr || data == nullptr) return CUDA_ERROR_INVALID_VALUE;
    ImportedPool imported_pool;
    int channel = -1;
    const ExportData export_data = read_export_data(data->reserved);
    {
      Imports& all = imports();
      std::lock_guard<std::mutex> lock(all.mutex);
      auto entry = all.pools.find(pool);
      if (entry == all.pools.end() || !engine().is_pool(pool)) return CUDA_ERROR_INVALID_VALUE;
      imported_pool = entry->second;
      // Data of another pool, or not export data at all: refused without asking.
      if (!well_formed(export_data) || export_data.token != imported_pool.token) return CUDA_ERROR_INVALID_VALUE;
      for (const auto& [address, imported] : all.pointers) {
        if (imported.token == export_data.token && imported.generation == export_data.generation) {
          return CUDA_ERROR_INVALID_VALUE;  // imported already and not freed: a replay
        }
      }
      channel = fcntl(imported_pool.channel, F_DUPFD_CLOEXEC, 0);  // survives a concurrent destroy
    }
    if (channel < 0) return CUDA_ERROR_INVALID_VALUE;
    const int reply = ask(channel, RequestKind::map_pointer, data->reserved);
    close(channel);
    if (reply < 0) return CUDA_ERROR_INVALID_VALUE;  // the exporter's pool is gone
    PointerReply header;
    ImportedPointer imported;
    imported.token = export_data.token;
    imported.generation = export_data.generation;
    CUresult result = receive_and_map(reply, pool, imported_pool.props, &header, &imported);
    close(reply);
    if (result != CUDA_SUCCESS) {
      unmap_all(imported);
      return result == CUDA_ERROR_OUT_OF_MEMORY ? result : CUDA_ERROR_INVALID_VALUE;
    }
    const CUdeviceptr pointer = imported.reservation + static_cast<CUdeviceptr>(header.offset);
    // Under NVTX registration: the importer's mapping a heap, the exported block's bytes its region,
    // so that memcheck sees a write into the granule's rest as outside any allocation.
    if (insight_hooks::nvtx_enabled()) {
      insight_hooks::nvtx_mapped(imported.reservation, imported.reserved_bytes);
      insight_hooks::nvtx_allocated(pointer, static_cast<std::size_t>(export_data.bytes));
    }
    {
      Imports& all = imports();
      std::lock_guard<std::mutex> lock(all.mutex);
      all.pointers[pointer] = std::move(imported);
    }
    detail::pointers_imported.store(true, std::memory_order_release);
    *pointer_out = pointer;
    return CUDA_SUCCESS;
  } catch (...) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
}

bool is_imported_pool(const core::Pool* pool) noexcept {
  Imports& all = imports();
  std::lock_guard<std::mutex> lock(all.mutex);
  return all.pools.contains(pool);
}

bool is_imported_pointer(CUdeviceptr pointer) noexcept {
  if (!detail::pointers_imported.load(std::memory_order_acquire)) return false;
  Imports& all = imports();
  std::lock_guard<std::mutex> lock(all.mutex);
  return all.pointers.contains(pointer);
}

namespace {

bool take_imported(CUdeviceptr pointer, ImportedPointer* imported) {
  Imports& all = imports();
  std::lock_guard<std::mutex> lock(all.mutex);
  auto entry = all.pointers.find(pointer);
  if (entry == all.pointers.end()) return false;
  *imported = std::move(entry->second);
  all.pointers.erase(entry);
  return true;
}

// cuMemFree's order: the current context's work is done before the memory goes.
CUresult unmap_after_context(const ImportedPointer& imported) noexcept {
  const driver::DriverTable& table = driver::real();
  if (table.cuCtxSynchronize != nullptr) {
    CUresult result = table.cuCtxSynchronize();
    if (result == CUDA_ERROR_DEINITIALIZED) return CUDA_SUCCESS;
  }
  unmap_all(imported);
  return CUDA_SUCCESS;
}

}  // namespace

CUresult free_imported(CUdeviceptr pointer) noexcept {
  try {
    ImportedPointer imported;
    if (!take_imported(pointer, &imported)) return CUDA_ERROR_INVALID_VALUE;
    if (insight_hooks::nvtx_enabled()) insight_hooks::nvtx_freeing(pointer);
    return unmap_after_context(imported);
  } catch (...) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
}

CUresult free_imported_async(CUdeviceptr pointer, CUstream stream) noexcept {
  try {
    auto imported = std::make_unique<ImportedPointer>();
    if (!take_imported(pointer, imported.get())) return CUDA_ERROR_INVALID_VALUE;
    // Gone for memcheck at the call, as a pool block's free is; the mapping's heap at the unmap.
    if (insight_hooks::nvtx_enabled()) insight_hooks::nvtx_freeing(pointer);
    if (unmap_behind(stream, imported.get())) {
      (void)imported.release();  // the reaper deletes it
      return CUDA_SUCCESS;
    }
    // No host function on that stream: wait for it here, then for the current context.
    const driver::DriverTable& table = driver::real();
    if (table.cuStreamSynchronize != nullptr && table.cuStreamSynchronize(stream) == CUDA_ERROR_DEINITIALIZED) {
      return CUDA_SUCCESS;
    }
    return unmap_after_context(*imported);
  } catch (...) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
}

void pool_destroyed(const core::Pool* pool) noexcept {
  detail::stop_exporting(pool);
  Imports& all = imports();
  std::lock_guard<std::mutex> lock(all.mutex);
  auto entry = all.pools.find(pool);
  if (entry == all.pools.end()) return;
  close(entry->second.channel);
  all.pools.erase(entry);
}

}  // namespace streampool::interpose::ipc
