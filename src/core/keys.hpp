// Opaque identities the engine tracks. The adapters decide what they stand for: for the
// interposer a StreamKey is the CUstream handle value (with the legacy and per-thread default
// streams mapped to reserved keys), an EventKey the CUevent handle value.
#pragma once

#include <cstdint>

namespace streampool::core {

using StreamKey = std::uintptr_t;
using EventKey = std::uintptr_t;
using Marker = std::uintptr_t;  // an Ordering's own completion marker (an event from its pool)

// How a stream synchronises implicitly with the legacy default stream.
enum class StreamKind : std::uint8_t {
  legacy_default,  // the NULL stream of the legacy ABI: waits for and is waited on by blocking streams
  blocking,        // created without CU_STREAM_NON_BLOCKING, and the per-thread default streams
  non_blocking,    // never synchronises implicitly
};

}  // namespace streampool::core
