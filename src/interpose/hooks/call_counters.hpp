// One counter per hooked entry point, for the stats report.
//
// Counting must not hurt multi-thread scaling, so there is no shared atomic per call: each thread
// owns a block of counters (one plain relaxed store per call, no lock prefix, no shared cache line)
// and the report sums all blocks. Blocks are linked into a process-wide list once and never freed;
// a thread that exits hands its block to the next new thread, so totals stay exact and the number
// of blocks is bounded by the peak number of threads that ever called a hook.
//
// The counter itself is a plain increment (a relaxed load and store, no lock prefix: only this thread
// writes it; the report only reads), and the thread's block pointer is initial-exec TLS with a
// constant initialiser, so reaching it is one %fs-relative load (no __tls_get_addr, no TLS wrapper).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

#include "hook_list.hpp"

namespace streampool::interpose {

// Cache-line aligned: blocks of two threads never share a line (malloc would place them side by
// side, and each thread's stores would then evict the other's counters).
struct alignas(64) CounterBlock {
  std::array<std::atomic<std::uint64_t>, kHookCount> calls{};
  std::atomic<bool> in_use{false};
  CounterBlock* next = nullptr;
};

namespace detail {
extern constinit thread_local CounterBlock* thread_counters __attribute__((tls_model("initial-exec")));
CounterBlock* claim_counter_block() noexcept;
}  // namespace detail

inline void count_call(Hook hook) noexcept {
  CounterBlock* block = detail::thread_counters;
  if (block == nullptr) [[unlikely]] block = detail::claim_counter_block();
  if (block == nullptr) return;
  auto& counter = block->calls[static_cast<unsigned>(hook)];
  counter.store(counter.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

// The sum over all threads, per hook.
std::array<std::uint64_t, kHookCount> call_totals() noexcept;

}  // namespace streampool::interpose
