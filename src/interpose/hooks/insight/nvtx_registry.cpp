#include "nvtx_registry.hpp"

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <span>

#define NVTX_AS_SYSTEM_HEADER
#include <nvtx3/nvToolsExtMem.h>

#include "driver/driver_table.hpp"
#include "driver/log.hpp"

namespace streampool::interpose::insight_hooks {

namespace nvtx_detail {
std::atomic<int> mode_state{-1};
}  // namespace nvtx_detail

namespace {

bool one_of(const char* value, std::initializer_list<const char*> words) noexcept {
  for (const char* word : words) {
    if (std::strcmp(value, word) == 0) return true;
  }
  return false;
}

// compute-sanitizer's injection libraries live in its own folder and carry its name
// (libsanitizer-*.so under compute-sanitizer/); Nsight Systems' and others' do not.
bool names_the_sanitizer(const char* path) noexcept {
  constexpr char kWord[] = "sanitizer";
  constexpr std::size_t kWordLength = sizeof(kWord) - 1;
  constexpr std::size_t kLongestPath = 4096;  // PATH_MAX: a longer value is no library path
  const std::size_t length = strnlen(path, kLongestPath + 1);
  if (length > kLongestPath) return false;
  for (std::size_t start = 0; start + kWordLength <= length; ++start) {
    std::size_t matched = 0;
    while (matched < kWordLength &&
           std::tolower(static_cast<unsigned char>(path[start + matched])) == kWord[matched]) {
      ++matched;
    }
    if (matched == kWordLength) return true;
  }
  return false;
}

}  // namespace

NvtxSetting nvtx_setting(const char* streampool_nvtx, const char* injection_path) noexcept {
  NvtxSetting setting;
  if (streampool_nvtx != nullptr && streampool_nvtx[0] != '\0') {
    if (one_of(streampool_nvtx, {"1", "on", "yes", "true"})) {
      setting.on = true;
      return setting;
    }
    if (one_of(streampool_nvtx, {"0", "off", "no", "false"})) return setting;
    setting.valid = false;  // and decided as if unset
  }
  setting.on = injection_path != nullptr && injection_path[0] != '\0' && names_the_sanitizer(injection_path);
  return setting;
}

namespace {
void prepare_registry() noexcept;
}  // namespace

namespace nvtx_detail {

bool read_mode() noexcept {
  const char* value = std::getenv("STREAMPOOL_NVTX");
  const NvtxSetting setting = nvtx_setting(value, std::getenv("NVTX_INJECTION64_PATH"));
  int expected = -1;
  if (mode_state.compare_exchange_strong(expected, setting.on ? 1 : 0, std::memory_order_relaxed)) {
    if (!setting.valid) {
      log::notice(log::Level::warn, "unknown STREAMPOOL_NVTX value '%.64s' (expected 1 or 0): %s", value,
                  setting.on ? "on, as under compute-sanitizer" : "off");
    }
    if (setting.on) {
      STREAMPOOL_LOG_INFO("NVTX memory registration on");
      prepare_registry();  // the tool's library opened now, before any pool lock is held
    }
    return setting.on;
  }
  return expected == 1;
}

}  // namespace nvtx_detail

namespace {

struct Heap {
  std::size_t bytes = 0;
  nvtxMemHeapHandle_t handle = nullptr;
};

class Registry {
 public:
  void add_heap(std::uintptr_t address, std::size_t bytes) noexcept {
    std::lock_guard lock(mutex_);
    nvtxMemVirtualRangeDesc_t range{};
    range.ptr = reinterpret_cast<const void*>(address);
    range.size = bytes;
    nvtxMemHeapDesc_t desc{};
    desc.extCompatID = NVTX_EXT_COMPATID_MEM;
    desc.structSize = sizeof(desc);
    desc.usage = NVTX_MEM_HEAP_USAGE_TYPE_SUB_ALLOCATOR;
    desc.type = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
    desc.typeSpecificDescSize = sizeof(range);
    desc.typeSpecificDesc = &range;
    desc.messageType = NVTX_MESSAGE_TYPE_ASCII;
    desc.message.ascii = "streampool pool";
    try {
      heaps_[address] = Heap{bytes, nullptr};
    } catch (...) {
      return;  // untracked: registering it would leave a heap nothing unregisters
    }
    heaps_[address].handle = nvtxMemHeapRegister(domain(), &desc);
  }

  void remove_heap(std::uintptr_t address) noexcept {
    std::lock_guard lock(mutex_);
    auto heap = heaps_.find(address);
    if (heap == heaps_.end()) return;
    // Unregistering a heap takes its regions with it (NVTX); the table forgets them too.
    regions_.erase(regions_.lower_bound(address), regions_.lower_bound(address + heap->second.bytes));
    nvtxMemHeapUnregister(domain(), heap->second.handle);
    heaps_.erase(heap);
  }

  void add_region(std::uintptr_t address, std::size_t bytes) noexcept {
    if (bytes == 0) return;
    std::lock_guard lock(mutex_);
    // A block freed in stream order and handed out again before its free executed is still the old
    // region (its unregistration waits in the stream): the new allocation replaces it now, and the
    // old one's unregistration, when its stream gets there, finds another generation and does nothing.
    if (regions_.contains(address)) unregister_locked(address);
    try {
      regions_.emplace(address, Region{bytes, ++generations_});
    } catch (...) {
      return;
    }
    for_each_piece(address, bytes, [this](const Heap& heap, std::uintptr_t start, std::size_t length) {
      nvtxMemVirtualRangeDesc_t range{};
      range.ptr = reinterpret_cast<const void*>(start);
      range.size = length;
      nvtxMemRegionsRegisterBatch_t batch{};
      batch.extCompatID = NVTX_EXT_COMPATID_MEM;
      batch.structSize = sizeof(batch);
      batch.regionType = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
      batch.heap = heap.handle;
      batch.regionCount = 1;
      batch.regionDescElementSize = sizeof(range);
      batch.regionDescElements = &range;
      nvtxMemRegionsRegister(domain(), &batch);
    });
  }

  std::size_t remove_region(std::uintptr_t address) noexcept {
    std::lock_guard lock(mutex_);
    return unregister_locked(address);
  }

  // The region at `address` as it is now (0: none), for a stream-ordered unregistration.
  std::uint64_t generation_of(std::uintptr_t address) noexcept {
    std::lock_guard lock(mutex_);
    auto region = regions_.find(address);
    return region == regions_.end() ? 0 : region->second.generation;
  }

  // The region unregistered if it is still the one `generation` names.
  void remove_region_of(std::uintptr_t address, std::uint64_t generation) noexcept {
    std::lock_guard lock(mutex_);
    auto region = regions_.find(address);
    if (region != regions_.end() && region->second.generation == generation) unregister_locked(address);
  }

  void prepare() noexcept {
    std::lock_guard lock(mutex_);
    (void)domain();
  }

 private:
  struct Region {
    std::size_t bytes = 0;
    std::uint64_t generation = 0;
  };

  std::size_t unregister_locked(std::uintptr_t address) noexcept {
    auto region = regions_.find(address);
    if (region == regions_.end()) return 0;
    const std::size_t bytes = region->second.bytes;
    regions_.erase(region);
    for_each_piece(address, bytes, [this](const Heap&, std::uintptr_t start, std::size_t) {
      nvtxMemRegionRef_t reference{};
      reference.pointer = reinterpret_cast<const void*>(start);
      nvtxMemRegionsUnregisterBatch_t batch{};
      batch.extCompatID = NVTX_EXT_COMPATID_MEM;
      batch.structSize = sizeof(batch);
      batch.refType = NVTX_MEM_REGION_REF_TYPE_POINTER;
      batch.refCount = 1;
      batch.refElementSize = sizeof(reference);
      batch.refElements = &reference;
      nvtxMemRegionsUnregister(domain(), &batch);
    });
    return bytes;
  }

  // The part of [address, address + bytes) in each registered heap, lowest first. A block lies
  // in one mapping unless it spans granules the pool mapped at different times.
  template <class Visit>
  void for_each_piece(std::uintptr_t address, std::size_t bytes, Visit&& visit) const noexcept {
    const std::uintptr_t end = address + bytes;
    auto heap = heaps_.upper_bound(address);
    if (heap != heaps_.begin()) --heap;
    for (; heap != heaps_.end() && heap->first < end; ++heap) {
      const std::uintptr_t heap_end = heap->first + heap->second.bytes;
      const std::uintptr_t start = heap->first > address ? heap->first : address;
      const std::uintptr_t stop = heap_end < end ? heap_end : end;
      if (start < stop) visit(heap->second, start, stop - start);
    }
  }

  // Made on first use: compute-sanitizer takes NVTX calls only once CUDA is initialised, which it
  // is by the first map (made inside an allocation call).
  nvtxDomainHandle_t domain() noexcept {
    if (!domain_made_) {
      domain_ = nvtxDomainCreateA("streampool");
      domain_made_ = true;
    }
    return domain_;
  }

  std::mutex mutex_;
  std::map<std::uintptr_t, Heap> heaps_;
  std::map<std::uintptr_t, Region> regions_;
  std::uint64_t generations_ = 0;
  nvtxDomainHandle_t domain_ = nullptr;
  bool domain_made_ = false;
};

// Never destroyed: hooks run until the process is gone.
Registry& registry() noexcept {
  static Registry* instance = new Registry();
  return *instance;
}

void prepare_registry() noexcept { registry().prepare(); }

// Each mapping a heap: mapped at map (or, for a backing of whole chunks, at reserve), gone at the
// matching unmap (unreserve). The backing's contract is that an unmap is of exactly one map's range.
class NvtxBacking final : public core::Backing {
 public:
  explicit NvtxBacking(std::unique_ptr<core::Backing> inner) noexcept
      : inner_(std::move(inner)), chunked_(inner_->reservation_bytes() == 0) {}

  std::size_t granule_bytes() const override { return inner_->granule_bytes(); }
  std::size_t reservation_bytes() const override { return inner_->reservation_bytes(); }
  core::Status reserve(std::size_t bytes, std::uintptr_t* base) override {
    const core::Status status = inner_->reserve(bytes, base);
    if (chunked_ && core::ok(status)) registry().add_heap(*base, bytes);
    return status;
  }
  core::Status unreserve(std::uintptr_t base, std::size_t bytes) override {
    const core::Status status = inner_->unreserve(base, bytes);
    if (chunked_ && core::ok(status)) registry().remove_heap(base);
    return status;
  }
  core::Status map(std::uintptr_t address, std::size_t bytes,
                   std::span<const core::AccessDescriptor> access) override {
    const core::Status status = inner_->map(address, bytes, access);
    if (!chunked_ && core::ok(status)) registry().add_heap(address, bytes);
    return status;
  }
  core::Status unmap(std::uintptr_t address, std::size_t bytes) override {
    const core::Status status = inner_->unmap(address, bytes);
    if (!chunked_ && core::ok(status)) registry().remove_heap(address);
    return status;
  }
  core::Status set_access(std::uintptr_t address, std::size_t bytes,
                          std::span<const core::AccessDescriptor> access) override {
    return inner_->set_access(address, bytes, access);
  }

 private:
  std::unique_ptr<core::Backing> inner_;
  bool chunked_;
};

}  // namespace

void nvtx_allocated(std::uintptr_t address, std::size_t bytes) noexcept { registry().add_region(address, bytes); }

std::size_t nvtx_freeing(std::uintptr_t address) noexcept { return registry().remove_region(address); }

namespace {

struct QueuedUnregistration {
  std::uintptr_t address;
  std::uint64_t generation;
};

// Runs on the driver's callback thread once the stream reached the free: no CUDA call, only the
// registry's lock and NVTX.
void CUDA_CB unregister_in_stream_order(void* data) {
  std::unique_ptr<QueuedUnregistration> queued(static_cast<QueuedUnregistration*>(data));
  registry().remove_region_of(queued->address, queued->generation);
}

}  // namespace

std::uint64_t nvtx_region_generation(std::uintptr_t address) noexcept {
  return registry().generation_of(address);
}

void nvtx_freed_in_stream_order(std::uintptr_t address, std::uint64_t generation, CUstream stream) noexcept {
  if (generation == 0) return;
  const driver::DriverTable& table = driver::real();
  auto queued = std::unique_ptr<QueuedUnregistration>(new (std::nothrow) QueuedUnregistration{address, generation});
  if (queued != nullptr && table.cuLaunchHostFunc != nullptr &&
      table.cuLaunchHostFunc(stream, &unregister_in_stream_order, queued.get()) == CUDA_SUCCESS) {
    (void)queued.release();  // the host function deletes it
    return;
  }
  registry().remove_region_of(address, generation);  // no host function: at the call, as before
}

void nvtx_mapped(std::uintptr_t address, std::size_t bytes) noexcept { registry().add_heap(address, bytes); }

void nvtx_unmapped(std::uintptr_t address) noexcept { registry().remove_heap(address); }

std::unique_ptr<core::Backing> nvtx_observed(std::unique_ptr<core::Backing> backing) {
  if (!nvtx_enabled() || backing == nullptr) return backing;
  return std::make_unique<NvtxBacking>(std::move(backing));
}

}  // namespace streampool::interpose::insight_hooks
