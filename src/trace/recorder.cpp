// See recorder.hpp. Lock order: registry_mutex, then a buffer's lock, then file_mutex.
#include "recorder.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <limits>
#include <new>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <signal.h>
#include <vector>

#include "driver/log.hpp"
#include "files.hpp"

namespace streampool::trace {

namespace detail {
std::atomic<int> state{kUnread};

std::uint64_t monotonic_ns() noexcept {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<std::uint64_t>(now.tv_sec) * 1000000000U + static_cast<std::uint64_t>(now.tv_nsec);
}
}  // namespace detail

namespace {

// detail::state's bits (0: off).
constexpr int kOff = 0;
constexpr int kTiming = 1;     // each call's duration: a second time-stamp read per event
constexpr int kRecording = detail::kRecordingOnly;  // events go to the file

bool recording() noexcept {
  const int state = detail::state.load(std::memory_order_relaxed);
  return state > 0 && (state & kRecording) != 0;  // kUnread (-1) has every bit set
}
constexpr std::uint32_t kCapacity = detail::kBufferCapacity;

struct Chunk {
  Record records[kCapacity];
};

// HotBuffer's committed, thread and records (= chunk->records) are what the inline record() uses.
struct ThreadBuffer : detail::HotBuffer {
  ThreadBuffer() { records = chunk->records; }
  // Replaces the chunk (the owner, under lock) and what record() writes into with it.
  void use(Chunk* fresh) noexcept {
    chunk = fresh;
    records = fresh->records;
  }
  std::mutex lock;
  std::uint32_t flushed = 0;   // records [0, flushed) are written (under lock)
  Chunk* chunk = new Chunk();  // replaced under lock when handed to the writer
  std::atomic<bool> in_use{false};
  std::atomic<std::uint64_t> timed_ticks{0};  // written by the owner only
  std::atomic<std::uint64_t> calls{0};
};

// A full chunk on its way to the file.
struct Pending {
  Chunk* chunk;
  std::uint32_t from;
  std::uint32_t count;
};
constexpr std::size_t kMaxPending = 128;  // beyond this (7 MiB) a thread writes its own chunk
// A written chunk goes back to a program thread only after this many others (3.5 MiB): by then the
// writer's core no longer holds its lines, and the thread's stores need not take them from there.
// Reusing the chunk the writer had just read cost about 5 ns per event on an H200 box (KVM,
// Sapphire Rapids): a tenth of the same-stream pair.
constexpr std::size_t kRotation = 64;
constexpr std::size_t kWakeAt = 16;      // queued chunks that wake the writer at once

// Never destroyed: threads and exit handlers may record until the very end.
struct Registry {
  std::mutex mutex;
  std::vector<ThreadBuffer*> buffers;
  std::vector<ThreadBuffer*> abandoned;  // a forked child's copies of its parent's buffers
  std::uint32_t next_thread = 1;
  bool handlers_registered = false;
  bool timing_requested = false;
  std::string setting;  // the path as given (with %p)
  std::string path;     // the file being written
  const char* open_failure = "";  // why open_file last failed (a literal or strerror's text)
  bool write_failed = false;      // said once per file (under file_mutex)
  // Calibration: ticks at the trace's start and nanoseconds per tick.
  std::uint64_t tick0 = 0;
  double ns_per_tick = 1.0;
  bool calibrated = false;
  // The writer thread: full chunks are written there, off the program's threads. A forked child
  // has none (its threads write their own chunks).
  std::mutex queue_mutex;
  std::condition_variable work;     // a chunk was queued
  std::condition_variable drained;  // the queue is empty and nothing is being written
  std::deque<Pending> queue;
  std::deque<Chunk*> spare;  // written chunks, oldest first
  bool writing = false;
  bool writer_idle = false;  // waiting for work
  bool drain_requested = false;
  bool writer_running = false;
  bool is_forked_child = false;  // no writer thread is started in a forked child
};

Registry& registry() {
  static Registry* instance = new Registry();
  return *instance;
}

std::mutex file_mutex;  // serialises writes and the descriptor's changes
int file_fd = -1;

}  // namespace

constinit thread_local detail::HotBuffer* detail::hot_buffer __attribute__((tls_model("initial-exec"))) = nullptr;

namespace {

// The calling thread's buffer (nullptr before its first event).
ThreadBuffer* own_buffer() noexcept { return static_cast<ThreadBuffer*>(detail::hot_buffer); }

void calibrate(Registry& reg) noexcept {
  if (reg.calibrated) return;
#if defined(__x86_64__) || defined(__i386__)
  const std::uint64_t ticks_begin = now();
  const std::uint64_t ns_begin = detail::monotonic_ns();
  std::uint64_t ns_end = ns_begin;
  while (ns_end - ns_begin < 2000000U) ns_end = detail::monotonic_ns();  // 2 ms, once per process
  const std::uint64_t ticks_end = now();
  if (ticks_end > ticks_begin) {
    reg.ns_per_tick = static_cast<double>(ns_end - ns_begin) / static_cast<double>(ticks_end - ticks_begin);
  }
#endif
  reg.calibrated = true;
}

bool write_all(int fd, const void* data, std::size_t bytes) noexcept {
  const char* cursor = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t written = ::write(fd, cursor, bytes);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return false;
    cursor += written;
    bytes -= static_cast<std::size_t>(written);
  }
  return true;
}

std::uint64_t ticks_to_ns(std::uint64_t ticks) noexcept {
  return static_cast<std::uint64_t>(static_cast<double>(ticks) * registry().ns_per_tick);
}

// Converts records from ticks to nanoseconds, encodes them as blocks and appends them to the file.
void write_records(const Record* records, std::uint32_t count) noexcept {
  Registry& reg = registry();
  constexpr std::uint32_t kBlock = 128;
  Record converted[kBlock];
  unsigned char encoded[sizeof(BlockHeader) + kBlock * kMaxEncodedRecord];
  while (count > 0) {
    const std::uint32_t chunk = count < kBlock ? count : kBlock;
    for (std::uint32_t i = 0; i < chunk; ++i) {
      converted[i] = records[i];
      const std::uint64_t start = records[i].time_ns;
      converted[i].time_ns = start > reg.tick0 ? ticks_to_ns(start - reg.tick0) : 0;
      const std::uint64_t duration = ticks_to_ns(records[i].duration_ns);
      converted[i].duration_ns = static_cast<std::uint32_t>(
          duration < std::numeric_limits<std::uint32_t>::max() ? duration : std::numeric_limits<std::uint32_t>::max());
    }
    const std::size_t bytes = encode_block(converted, chunk, converted[0].thread, encoded);
    {
      std::lock_guard<std::mutex> guard(file_mutex);
      if (file_fd >= 0 && !write_all(file_fd, encoded, bytes) && !reg.write_failed) {
        // The trace the user asked for is incomplete: said once, whatever the log level.
        reg.write_failed = true;
        log::notice(log::Level::warn, "trace %s: write failed, the trace is incomplete: %s", reg.path.c_str(),
                    std::strerror(errno != 0 ? errno : ENOSPC));
      }
    }
    records += chunk;
    count -= chunk;
  }
}

// Writes the buffer's complete records not yet written. The owner of a full buffer also empties it.
void drain(ThreadBuffer& buffer, bool owner_full) noexcept {
  std::lock_guard<std::mutex> guard(buffer.lock);
  const std::uint32_t committed = buffer.committed.load(std::memory_order_acquire);
  if (committed > buffer.flushed) write_records(buffer.chunk->records + buffer.flushed, committed - buffer.flushed);
  buffer.flushed = committed;
  if (owner_full) {
    buffer.flushed = 0;
    buffer.committed.store(0, std::memory_order_relaxed);
  }
}

void drain_all(Registry& reg) noexcept {
  for (ThreadBuffer* buffer : reg.buffers) drain(*buffer, false);
}

void* writer_main(void*) {
  Registry& reg = registry();
  std::unique_lock<std::mutex> lock(reg.queue_mutex);
  for (;;) {
    while (!reg.queue.empty()) {
      const Pending pending = reg.queue.front();
      reg.queue.pop_front();
      reg.writing = true;
      lock.unlock();
      write_records(pending.chunk->records + pending.from, pending.count);
      lock.lock();
      reg.spare.push_back(pending.chunk);
      reg.writing = false;
    }
    reg.drain_requested = false;  // served: everything queued is written
    reg.drained.notify_all();
    // Woken when chunks pile up or someone waits for the file; otherwise it looks every 20 ms, so
    // that a steady stream of chunks costs the program's threads no wake-up calls.
    reg.writer_idle = true;
    reg.work.wait_for(lock, std::chrono::milliseconds(20),
                      [&reg] { return reg.queue.size() >= kWakeAt || reg.drain_requested; });
    reg.writer_idle = false;
  }
  return nullptr;
}

// Caller holds the registry mutex. Without a writer, threads write their own chunks.
void start_writer(Registry& reg) noexcept {
  std::lock_guard<std::mutex> guard(reg.queue_mutex);
  if (reg.writer_running) return;
  sigset_t all;
  sigset_t previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);  // the program's signals are not the writer's
  pthread_t thread;
  pthread_attr_t attributes;
  pthread_attr_init(&attributes);
  pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
  reg.writer_running = pthread_create(&thread, &attributes, &writer_main, nullptr) == 0;
  pthread_attr_destroy(&attributes);
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (reg.writer_running) pthread_setname_np(thread, "streampool-trace");
}

// Waits until the writer has written everything queued.
void wait_drained(Registry& reg) noexcept {
  std::unique_lock<std::mutex> lock(reg.queue_mutex);
  if (!reg.writer_running) return;
  reg.drain_requested = true;
  reg.work.notify_one();
  reg.drained.wait(lock, [&reg] { return reg.queue.empty() && !reg.writing; });
}

// The owner of a full buffer hands its chunk to the writer and goes on with a fresh one; false
// when there is no writer or it is too far behind (then the owner writes the chunk itself).
bool hand_off(ThreadBuffer& buffer) noexcept {
  Registry& reg = registry();
  Chunk* fresh = nullptr;
  {
    std::lock_guard<std::mutex> guard(reg.queue_mutex);
    if (!reg.writer_running || reg.queue.size() >= kMaxPending) return false;
    if (reg.spare.size() >= kRotation) {
      fresh = reg.spare.front();
      reg.spare.pop_front();
    }
  }
  if (fresh == nullptr) {
    fresh = new (std::nothrow) Chunk();
    if (fresh == nullptr) return false;
  }
  Pending pending{};
  {
    std::lock_guard<std::mutex> guard(buffer.lock);
    const std::uint32_t committed = buffer.committed.load(std::memory_order_relaxed);
    pending = Pending{buffer.chunk, buffer.flushed, committed - buffer.flushed};
    buffer.use(fresh);
    buffer.flushed = 0;
    buffer.committed.store(0, std::memory_order_relaxed);
  }
  bool wake = false;
  try {
    std::lock_guard<std::mutex> guard(reg.queue_mutex);
    reg.queue.push_back(pending);
    wake = reg.writer_idle && reg.queue.size() >= kWakeAt;
  } catch (...) {
    write_records(pending.chunk->records + pending.from, pending.count);
    return true;
  }
  if (wake) reg.work.notify_one();  // a busy writer takes the next chunk without a wake-up
  return true;
}

// Hands the thread's buffer back at thread exit, its records written.
struct Releaser {
  ThreadBuffer* buffer = nullptr;
  ~Releaser() {
    if (buffer == nullptr || own_buffer() != buffer) return;
    drain(*buffer, false);
    detail::hot_buffer = nullptr;
    buffer->in_use.store(false, std::memory_order_release);
  }
};
thread_local Releaser releaser;

[[gnu::noinline]] ThreadBuffer* claim_buffer() noexcept {
  try {
    Registry& reg = registry();
    std::lock_guard<std::mutex> guard(reg.mutex);
    ThreadBuffer* claimed = nullptr;
    for (ThreadBuffer* buffer : reg.buffers) {
      bool expected = false;
      if (buffer->in_use.compare_exchange_strong(expected, true)) {
        claimed = buffer;
        break;
      }
    }
    if (claimed == nullptr) {
      claimed = new ThreadBuffer();
      claimed->in_use.store(true, std::memory_order_relaxed);
      reg.buffers.push_back(claimed);
    }
    {
      // A reused buffer was drained when its thread ended; records of a stopped trace are dropped.
      std::lock_guard<std::mutex> buffer_guard(claimed->lock);
      claimed->committed.store(0, std::memory_order_relaxed);
      claimed->flushed = 0;
    }
    claimed->thread = reg.next_thread++;
    detail::hot_buffer = claimed;
    releaser.buffer = claimed;
    return claimed;
  } catch (...) {
    return nullptr;
  }
}

// Opens `path` and writes the header: 0, or an errno value (EINVAL: not a regular file) with the
// reason in reg.open_failure. Caller holds the registry mutex.
int open_file(Registry& reg, const std::string& path, std::uint32_t parent_pid) noexcept {
  // Never a FIFO, a terminal or a device: opening or writing one could block the program.
  const int fd = open_output_file(path.c_str(), true, &reg.open_failure);
  if (fd < 0) return errno;
  FileHeader header{};
  std::memcpy(header.magic, kMagic, sizeof kMagic);
  header.version = kFormatVersion;
  header.header_bytes = sizeof(FileHeader);
  header.block_version = kBlockVersion;
  header.pid = static_cast<std::uint32_t>(getpid());
  header.parent_pid = parent_pid;
  timespec wall{};
  clock_gettime(CLOCK_REALTIME, &wall);
  header.start_unix_ns =
      static_cast<std::uint64_t>(wall.tv_sec) * 1000000000U + static_cast<std::uint64_t>(wall.tv_nsec);
  if (!write_all(fd, &header, sizeof header)) {
    const int error = errno != 0 ? errno : EIO;
    ::close(fd);
    reg.open_failure = std::strerror(error);
    return error;
  }
  reg.tick0 = now();
  reg.path = path;
  std::lock_guard<std::mutex> guard(file_mutex);
  file_fd = fd;
  reg.write_failed = false;
  return 0;
}

void close_file() noexcept {
  std::lock_guard<std::mutex> guard(file_mutex);
  if (file_fd >= 0) ::close(file_fd);
  file_fd = -1;
}

void before_fork() noexcept {
  Registry& reg = registry();
  reg.mutex.lock();
  drain_all(reg);  // what the parent recorded so far is in its file, not copied into the child
  wait_drained(reg);
  reg.queue_mutex.lock();
  file_mutex.lock();
}

void after_fork_in_parent() noexcept {
  Registry& reg = registry();
  file_mutex.unlock();
  reg.queue_mutex.unlock();
  reg.mutex.unlock();
}

void after_fork_in_child() noexcept {
  Registry& reg = registry();
  file_mutex.unlock();
  // The writer thread stayed in the parent: the child's threads write their own chunks. What the
  // parent queued since the drain is the parent's.
  reg.queue.clear();
  reg.writing = false;
  reg.writer_running = false;
  reg.is_forked_child = true;
  reg.queue_mutex.unlock();
  // The parent's buffers belong to threads the child does not have, and their records to the
  // parent's trace: the child starts with no buffer (kept reachable, never reused).
  for (ThreadBuffer* buffer : reg.buffers) reg.abandoned.push_back(buffer);
  reg.buffers.clear();
  reg.next_thread = 1;
  detail::hot_buffer = nullptr;
  if (recording()) {
    const auto parent = static_cast<std::uint32_t>(getppid());
    close_file();
    std::string path;
    try {
      path = names_each_process(reg.setting) ? expand_path(reg.setting, getpid())
                                             : expand_path(reg.setting, getppid()) + "." + std::to_string(getpid());
    } catch (...) {
    }
    const int error = path.empty() ? ENOMEM : open_file(reg, path, parent);
    if (error != 0) {
      log::notice(log::Level::warn, "forked child %d cannot write its trace to %s: %s", static_cast<int>(getpid()),
                  path.c_str(), path.empty() ? std::strerror(error) : reg.open_failure);
      detail::state.store(reg.timing_requested ? kTiming : kOff, std::memory_order_relaxed);
    }
  }
  reg.mutex.unlock();
}

void flush_at_exit() noexcept { flush(); }

// Caller holds the registry mutex.
void register_handlers(Registry& reg) noexcept {
  if (reg.handlers_registered) return;
  reg.handlers_registered = true;
  pthread_atfork(&before_fork, &after_fork_in_parent, &after_fork_in_child);
  std::atexit(&flush_at_exit);
}

bool flag_set(const char* name) noexcept {
  const char* value = std::getenv(name);
  return value != nullptr && value[0] != '\0' && !(value[0] == '0' && value[1] == '\0');
}

// Caller holds the registry mutex.
int start_locked(Registry& reg, std::string_view setting) noexcept {
  if (recording()) return EBUSY;
  std::string path;
  try {
    reg.setting.assign(setting);
    path = expand_path(setting, getpid());
  } catch (...) {
    return ENOMEM;
  }
  if (path.empty()) return EINVAL;
  calibrate(reg);
  register_handlers(reg);
  // Records left from a trace stopped earlier are not this trace's.
  for (ThreadBuffer* buffer : reg.buffers) {
    std::lock_guard<std::mutex> guard(buffer->lock);
    buffer->flushed = buffer->committed.load(std::memory_order_acquire);
  }
  const int error = open_file(reg, path, 0);
  if (error != 0) return error;
  if (!reg.is_forked_child) start_writer(reg);
  detail::state.store(kRecording | (reg.timing_requested ? kTiming : kOff), std::memory_order_release);
  return 0;
}

}  // namespace

namespace detail {
bool start_from_environment() noexcept {
  Registry& reg = registry();
  std::lock_guard<std::mutex> guard(reg.mutex);
  const int current = state.load(std::memory_order_relaxed);
  if (current != kUnread) return current > 0;
  reg.timing_requested = flag_set("STREAMPOOL_TIMING");
  const char* setting = std::getenv("STREAMPOOL_TRACE");
  if (setting != nullptr && setting[0] != '\0') {
    reg.open_failure = "";
    const int error = start_locked(reg, setting);
    if (error == 0) return true;
    // A trace asked for and not written is said at any log level but off.
    log::notice(log::Level::warn, "cannot write the STREAMPOOL_TRACE trace to %s: %s", setting,
                reg.open_failure[0] != '\0' ? reg.open_failure : std::strerror(error));
  }
  if (reg.timing_requested) {
    calibrate(reg);
    register_handlers(reg);
  }
  state.store(reg.timing_requested ? kTiming : kOff, std::memory_order_release);
  return reg.timing_requested;
}
}  // namespace detail

void detail::record_slow(Op op, std::uint16_t flags, std::int32_t result, std::uint64_t stream, std::uint64_t pool,
                         std::uint64_t size, std::uint64_t address, std::uint64_t start) noexcept {
  const int observed = detail::state.load(std::memory_order_relaxed);
  ThreadBuffer* buffer = own_buffer();
  if (buffer == nullptr) {
    buffer = claim_buffer();
    if (buffer == nullptr) return;
  }
  std::uint64_t elapsed = 0;
  // Time in the allocator: its own calls, not the host synchronisations the program waits in.
  if ((observed & kTiming) != 0) {
    const std::uint64_t end = now();
    elapsed = end > start ? end - start : 0;
    if (op <= Op::pool_set_attribute) {
      buffer->timed_ticks.store(buffer->timed_ticks.load(std::memory_order_relaxed) + elapsed,
                                std::memory_order_relaxed);
      buffer->calls.store(buffer->calls.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    }
  }
  if ((observed & kRecording) == 0) return;
  std::uint32_t index = buffer->committed.load(std::memory_order_relaxed);
  if (index == kCapacity) {
    if (!hand_off(*buffer)) drain(*buffer, true);
    index = 0;
  }
  detail::write_record(*buffer, index, op, flags, result, stream, pool, size, address, start,
                       static_cast<std::uint32_t>(elapsed < 0xffffffffU ? elapsed : 0xffffffffU));
}

int start(std::string_view path) noexcept {
  Registry& reg = registry();
  std::lock_guard<std::mutex> guard(reg.mutex);
  if (detail::state.load(std::memory_order_relaxed) == detail::kUnread) {
    reg.timing_requested = flag_set("STREAMPOOL_TIMING");  // an explicit start replaces STREAMPOOL_TRACE
  }
  const int error = start_locked(reg, path);
  if (error != 0 && detail::state.load(std::memory_order_relaxed) == detail::kUnread) {
    detail::state.store(reg.timing_requested ? kTiming : kOff, std::memory_order_release);
  }
  return error;
}

int flush() noexcept {
  Registry& reg = registry();
  std::lock_guard<std::mutex> guard(reg.mutex);
  if (!recording()) return ENOENT;
  drain_all(reg);
  wait_drained(reg);
  return 0;
}

int stop() noexcept {
  Registry& reg = registry();
  std::lock_guard<std::mutex> guard(reg.mutex);
  if (!recording()) return ENOENT;
  detail::state.store(reg.timing_requested ? kTiming : kOff, std::memory_order_release);
  drain_all(reg);
  wait_drained(reg);
  close_file();
  reg.path.clear();
  return 0;
}

std::string current_path() {
  Registry& reg = registry();
  std::lock_guard<std::mutex> guard(reg.mutex);
  return recording() ? reg.path : std::string();
}

std::uint64_t timed_ns() noexcept {
  Registry& reg = registry();
  std::lock_guard<std::mutex> guard(reg.mutex);
  std::uint64_t ticks = 0;
  for (const ThreadBuffer* buffer : reg.buffers) ticks += buffer->timed_ticks.load(std::memory_order_relaxed);
  return ticks_to_ns(ticks);
}

std::uint64_t timed_calls() noexcept {
  Registry& reg = registry();
  std::lock_guard<std::mutex> guard(reg.mutex);
  std::uint64_t calls = 0;
  for (const ThreadBuffer* buffer : reg.buffers) calls += buffer->calls.load(std::memory_order_relaxed);
  return calls;
}

std::string expand_path(std::string_view setting, long pid) {
  std::string path;
  path.reserve(setting.size() + 16);
  for (std::size_t i = 0; i < setting.size(); ++i) {
    if (setting[i] == '%' && i + 1 < setting.size() && (setting[i + 1] == 'p' || setting[i + 1] == '%')) {
      path += setting[i + 1] == 'p' ? std::to_string(pid) : std::string("%");
      ++i;
    } else {
      path += setting[i];
    }
  }
  return path;
}

bool names_each_process(std::string_view setting) {
  for (std::size_t i = 0; i + 1 < setting.size(); ++i) {
    if (setting[i] != '%') continue;
    if (setting[i + 1] == 'p') return true;
    ++i;
  }
  return false;
}

}  // namespace streampool::trace
