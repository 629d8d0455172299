#include "leak_hooks.hpp"

#include <dlfcn.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>

#include "driver/log.hpp"
#include "hooks/process_state.hpp"
#include "insight/call_site.hpp"
#include "insight/leak_ledger.hpp"
#include "insight/leak_report.hpp"
#include "trace/files.hpp"
#include "trace/recorder.hpp"

namespace streampool::interpose::insight_hooks {

namespace detail {
std::atomic<int> leak_mode{-1};
}  // namespace detail

namespace {

std::atomic<insight::LeakLedger*> ledger_instance{nullptr};
constinit thread_local int repeated_free_depth = 0;
std::atomic<pid_t> report_owner{0};
// The ledger a forked child left behind (its locks may be held by threads that did not survive
// the fork), kept reachable.
std::atomic<insight::LeakLedger*> abandoned_ledger{nullptr};

// The child's pools start afresh (process_state.hpp), and so do its records: a fresh ledger, and
// the exit report is the child's own.
void child_after_fork() {
  insight::LeakLedger* parent = ledger_instance.load(std::memory_order_acquire);
  if (parent == nullptr) return;
  abandoned_ledger.store(parent, std::memory_order_relaxed);
  ledger_instance.store(new (std::nothrow) insight::LeakLedger(insight::LedgerLimits{}), std::memory_order_release);
  report_owner.store(getpid(), std::memory_order_relaxed);
}

// The base of the object these hooks live in (libstreampool.so or libstreampool_cudart.so): its
// frames are the allocator's own and are not shown.
const void* own_object() noexcept {
  static const void* const base = [] {
    Dl_info info{};
    return ::dladdr(reinterpret_cast<void*>(&own_object), &info) != 0 ? info.dli_fbase : nullptr;
  }();
  return base;
}

insight::LeakLedger* ledger() noexcept { return ledger_instance.load(std::memory_order_acquire); }

std::uint64_t thread_id() noexcept {
  static thread_local const std::uint64_t id = static_cast<std::uint64_t>(::syscall(SYS_gettid));
  return id;
}

bool write_all(int fd, const std::string& text) noexcept {
  const char* cursor = text.data();
  std::size_t left = text.size();
  while (left > 0) {
    const ssize_t written = ::write(fd, cursor, left);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return false;
    cursor += written;
    left -= static_cast<std::size_t>(written);
  }
  return true;
}

void write_report_at_exit() {
  insight::LeakLedger* current = ledger();
  // The process that made the ledger, or a forked child that made its own (child_after_fork).
  if (current == nullptr || getpid() != report_owner.load(std::memory_order_relaxed)) return;
  try {
    insight::ReportOptions options;
    options.own_object = own_object();
    write_all(STDERR_FILENO, insight::leak_report_text(*current, options));
    const char* setting = std::getenv("STREAMPOOL_LEAKS_FILE");
    if (setting == nullptr || setting[0] == '\0') return;
    const std::string path = trace::expand_path(setting, getpid());
    const char* why = "";
    const int fd = trace::open_output_file(path.c_str(), false, &why);
    if (fd < 0) {
      log::notice(log::Level::warn, "cannot write the STREAMPOOL_LEAKS_FILE report to %s: %s", path.c_str(), why);
      return;
    }
    const bool written = write_all(fd, insight::leak_report_json(*current, options) + '\n');
    if (::close(fd) != 0 || !written) {
      log::notice(log::Level::warn, "cannot write the STREAMPOOL_LEAKS_FILE report to %s: %s", path.c_str(),
                  std::strerror(errno != 0 ? errno : ENOSPC));
    }
  } catch (...) {
    log::notice(log::Level::warn, "cannot write the leak report: out of memory");
  }
}

insight::SiteId capture_site(insight::LeakLedger& current) noexcept {
  insight::CallStack stack;
  insight::capture_call_stack(&stack);
  return current.sites().intern(stack);
}

std::string site_text(insight::LeakLedger& current, insight::SiteId site) {
  return insight::describe_site(current.sites(), site, 4, own_object());
}

void report_bad_free(insight::LeakLedger& current, const insight::BadFreeEvent& event) noexcept {
  try {
    current.record_bad_free(event);
    std::string line = std::string("leaks: ") + insight::bad_free_name(event.kind);
    char head[160];
    std::snprintf(head, sizeof head, " of %#zx on stream %#zx (returns %d)", static_cast<std::size_t>(event.address),
                  static_cast<std::size_t>(event.stream), event.error);
    line += head;
    if (event.kind == insight::BadFree::racing) {
      std::snprintf(head, sizeof head, " while thread %llu frees it",
                    static_cast<unsigned long long>(event.other_thread));
      line += head;
    }
    line += ": freed at ";
    line += site_text(current, event.free_site);
    if (event.has_allocation_site) {
      std::snprintf(head, sizeof head, "; %llu bytes allocated at ", static_cast<unsigned long long>(event.bytes));
      line += head;
      line += site_text(current, event.allocation_site);
    }
    if (event.has_first_free_site) {
      line += "; first freed at ";
      line += site_text(current, event.first_free_site);
    }
    log::notice(log::Level::warn, "%s", line.c_str());
  } catch (...) {
  }
}

}  // namespace

bool detail::read_leak_mode() noexcept {
  const char* setting = std::getenv("STREAMPOOL_LEAKS");
  int mode = 0;
  if (setting != nullptr && setting[0] != '\0' && std::strcmp(setting, "0") != 0) {
    if (std::strcmp(setting, "1") == 0) {
      mode = 1;
    } else {
      log::notice(log::Level::warn, "STREAMPOOL_LEAKS=%.40s is not 0 or 1: the leak check stays off", setting);
    }
  }
  if (mode == 1) {
    auto* fresh = new (std::nothrow) insight::LeakLedger(insight::LedgerLimits{});
    insight::LeakLedger* expected = nullptr;
    if (fresh == nullptr) {
      log::notice(log::Level::warn, "no memory for the leak check: it stays off");
      mode = 0;
    } else if (ledger_instance.compare_exchange_strong(expected, fresh, std::memory_order_acq_rel)) {
      report_owner.store(getpid(), std::memory_order_relaxed);
      std::atexit(&write_report_at_exit);
      pthread_atfork(nullptr, nullptr, &child_after_fork);
    } else {
      delete fresh;  // another thread's first call made it
    }
  }
  int unread = -1;
  detail::leak_mode.compare_exchange_strong(unread, mode, std::memory_order_acq_rel);
  return detail::leak_mode.load(std::memory_order_acquire) > 0;
}

void allocation_made(void* address, std::size_t bytes, core::Pool* pool) noexcept {
  insight::LeakLedger* current = ledger();
  if (current == nullptr) return;
  try {
    int device = -1;
    const core::PoolProps& props = engine().props(pool);
    if (props.kind == core::PoolKind::device) device = props.location_id;
    current->allocated(reinterpret_cast<std::uintptr_t>(address), bytes, capture_site(*current), device);
  } catch (...) {
  }
}

FreeCheck free_starts(CUdeviceptr address, CUstream stream) noexcept {
  FreeCheck check;
  insight::LeakLedger* current = ledger();
  if (current == nullptr) return check;
  try {
    check.address = static_cast<std::uintptr_t>(address);
    check.stream = reinterpret_cast<std::uintptr_t>(stream);
    insight::LiveAllocation live;
    const insight::LeakLedger::Claim claim = current->begin_free(check.address, thread_id(), &live);
    check.claim = static_cast<int>(claim);
    check.bytes = live.bytes;
    check.allocation_site = live.site;
    check.allocation_device = live.device;
    check.other_thread = live.freeing_thread;
    // After the claim, so that a racing thread finds it while this one is still here.
    check.free_site = capture_site(*current);
    check.active = true;
  } catch (...) {
  }
  return check;
}

void free_ended(const FreeCheck& check, CUresult route_result, CUdevice stream_device, CUresult result) noexcept {
  insight::LeakLedger* current = ledger();
  if (current == nullptr || !check.active) return;
  using Claim = insight::LeakLedger::Claim;
  const auto claim = static_cast<Claim>(check.claim);
  insight::BadFreeEvent event;
  event.address = check.address;
  event.stream = check.stream;
  event.error = static_cast<int>(result);
  event.free_site = check.free_site;
  event.bytes = check.bytes;
  event.allocation_site = check.allocation_site;
  event.has_allocation_site = claim != Claim::unknown;
  try {
    if (claim != Claim::unknown) current->end_free(check.address, thread_id(), result == CUDA_SUCCESS, check.free_site);
    if (claim == Claim::racing) {
      event.kind = insight::BadFree::racing;
      event.other_thread = check.other_thread;
    } else if (route_result != CUDA_SUCCESS) {
      event.kind = current->was_destroyed(check.stream) ? insight::BadFree::destroyed_stream
                                                        : insight::BadFree::invalid_stream;
    } else if (claim == Claim::live) {
      // A free the allocator took, on a stream of another device than the memory's.
      if (result != CUDA_SUCCESS || check.allocation_device < 0 || stream_device == check.allocation_device) return;
      event.kind = insight::BadFree::foreign_stream;
    } else {
      if (result == CUDA_SUCCESS) return;  // another allocator's pointer the driver freed
      insight::FreedAllocation freed;
      if (current->recently_freed(check.address, &freed)) {
        event.kind = insight::BadFree::double_free;
        event.bytes = freed.bytes;
        event.allocation_site = freed.allocation_site;
        event.has_allocation_site = true;
        event.first_free_site = freed.free_site;
        event.has_first_free_site = true;
      } else {
        event.kind = insight::BadFree::not_allocated;
      }
    }
  } catch (...) {
    return;
  }
  if (repeated_free_depth > 0) return;  // the same free, asked again (RepeatedFree)
  report_bad_free(*current, event);
}

RepeatedFree::RepeatedFree() noexcept { ++repeated_free_depth; }
RepeatedFree::~RepeatedFree() { --repeated_free_depth; }

void freed_at_once(CUdeviceptr address) noexcept {
  insight::LeakLedger* current = ledger();
  if (current == nullptr) return;
  try {
    insight::LiveAllocation live;
    const auto pointer = static_cast<std::uintptr_t>(address);
    if (current->begin_free(pointer, thread_id(), &live) == insight::LeakLedger::Claim::unknown) return;
    current->end_free(pointer, thread_id(), true, capture_site(*current));
  } catch (...) {
  }
}

void stream_destroyed(CUstream stream) noexcept {
  insight::LeakLedger* current = ledger();
  if (current == nullptr) return;
  try {
    current->stream_destroyed(reinterpret_cast<std::uintptr_t>(stream));
  } catch (...) {
  }
}

std::string leak_report_json() {
  insight::LeakLedger* current = ledger();
  if (current == nullptr) {
    static const insight::LeakLedger empty{insight::LedgerLimits{0, 1, 1, 0}};
    std::string out = insight::leak_report_json(empty, insight::ReportOptions{});
    return "{\"enabled\":false," + out.substr(1);
  }
  insight::ReportOptions options;
  options.own_object = own_object();
  return "{\"enabled\":true," + insight::leak_report_json(*current, options).substr(1);
}

std::string call_site_of(std::uintptr_t address) {
  if (!leaks_on()) return {};
  insight::LeakLedger* current = ledger();
  insight::SiteId site = insight::kOtherSites;
  if (current == nullptr || !current->live_site(address, &site)) return {};
  return site_text(*current, site);
}

}  // namespace streampool::interpose::insight_hooks
