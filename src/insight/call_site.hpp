// A call site: the return addresses of the stack that made a call, innermost first.
//
// Captured with libc's backtrace() (glibc unwinds through the binaries' own unwind tables, so it
// needs no frame pointers, and brings no link dependency: it loads its unwinder on first use).
// Only the addresses are kept; what they mean (object, offset, symbol) is asked at report time
// (leak_report.hpp), so capturing is a copy of the stack's return addresses and a hash of them.
#pragma once

#include <cstddef>
#include <cstdint>

namespace streampool::insight {

// Return addresses kept per call site. Deep enough to reach past the allocator's own frames and a
// framework's wrappers into the program.
inline constexpr unsigned kMaxFrames = 24;

struct CallStack {
  std::uintptr_t frames[kMaxFrames];
  unsigned depth = 0;
};

// The calling thread's stack, innermost first, starting at the caller of capture_call_stack.
void capture_call_stack(CallStack* stack) noexcept;

// FNV-1a over the addresses; never 0 (0 marks an empty slot of the call-site table).
std::uint64_t hash_frames(const std::uintptr_t* frames, unsigned depth) noexcept;

}  // namespace streampool::insight
