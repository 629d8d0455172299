#include "call_counters.hpp"

#include <new>

#include "process_state.hpp"

namespace streampool::interpose {

namespace {

std::atomic<CounterBlock*> all_blocks{nullptr};

// Set once this thread's exit has begun: hooks called from later thread-exit code (or from atexit
// handlers on the main thread) still count, into a block that is then never handed back.
thread_local bool thread_exiting = false;

// Hands the block back when its thread exits.
struct BlockRelease {
  CounterBlock* block = nullptr;
  ~BlockRelease() {
    if (block != nullptr) block->in_use.store(false, std::memory_order_release);
    detail::thread_counters = nullptr;
    thread_exiting = true;
  }
};
thread_local BlockRelease block_release;

void adopt(CounterBlock* block) noexcept {
  detail::thread_counters = block;
  if (!thread_exiting) block_release.block = block;
}

constexpr const char* kHookNames[] = {
#define STREAMPOOL_HOOK_NAME(name) #name,
    STREAMPOOL_HOOKED_ENTRIES(STREAMPOOL_HOOK_NAME)
#undef STREAMPOOL_HOOK_NAME
};

}  // namespace

namespace detail {

constinit thread_local CounterBlock* thread_counters __attribute__((tls_model("initial-exec"))) = nullptr;

CounterBlock* claim_counter_block() noexcept {
  // First hook call of this thread: a good moment to arm the process-wide once-only work.
  note_first_use();
  for (CounterBlock* block = all_blocks.load(std::memory_order_acquire); block != nullptr; block = block->next) {
    bool expected = false;
    if (block->in_use.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) {
      adopt(block);
      return block;
    }
  }
  auto* fresh = new (std::nothrow) CounterBlock;
  if (fresh == nullptr) return nullptr;
  fresh->in_use.store(true, std::memory_order_relaxed);
  CounterBlock* head = all_blocks.load(std::memory_order_relaxed);
  do {
    fresh->next = head;
  } while (!all_blocks.compare_exchange_weak(head, fresh, std::memory_order_acq_rel));
  adopt(fresh);
  return fresh;
}

}  // namespace detail

const char* hook_name(Hook hook) noexcept {
  auto index = static_cast<unsigned>(hook);
  return index < kHookCount ? kHookNames[index] : "?";
}

std::array<std::uint64_t, kHookCount> call_totals() noexcept {
  std::array<std::uint64_t, kHookCount> totals{};
  for (CounterBlock* block = all_blocks.load(std::memory_order_acquire); block != nullptr; block = block->next) {
    for (unsigned i = 0; i < kHookCount; ++i) totals[i] += block->calls[i].load(std::memory_order_relaxed);
  }
  return totals;
}

}  // namespace streampool::interpose
