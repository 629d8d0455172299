// The out-of-memory report: what a person needs to act on an allocation that failed, and the one
// explanation that best accounts for the failure.
//
// The hooks gather the figures where an allocation finally fails (src/interpose/hooks/report/
// oom_report.cpp): the request, the process cap, the device's free memory as the driver says, each
// pool of the device (reserved, used, free bytes, the largest free range, the frees still pending
// per stream) and the largest live allocations. This file only reads them: it chooses the
// explanation (explain_oom) and writes the report as text for stderr (oom_text) and as JSON for
// streampool_oom_report (oom_json). No CUDA, no locks, no clock: every explanation can be tested
// with figures made by hand (tests/insight).
//
// How the explanation is chosen, first match wins (docs/DESIGN.md says why in this order; a
// driver request, which no pool serves, starts at 3):
//   1. pending_frees   another stream's frees not yet known complete would cover the request;
//   2. fragmentation   the pool's free bytes cover it, but no free range is large enough;
//   3. held_outside    the cap or the device is full, and more of it is held outside the pools
//                      (forwarded cuMemAlloc, the driver's own use, other processes) than in them;
//   4. cap_reached     the cap cannot take the growth the request needs;
//   5. device_full     the device has less free memory than the request, the pools holding most;
//   6. pool_limit      none of these: the pool could not grow (its maximum size, or its backing).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace streampool::insight {

inline constexpr std::uint64_t kNoLimit = UINT64_MAX;  // no cap on the device

enum class OomCause { pending_frees, fragmentation, held_outside, cap_reached, device_full, pool_limit };

// The name the JSON and the trace carry ("pending_frees" ...).
const char* oom_cause_name(OomCause cause) noexcept;

// Frees of one stream that the failing request could not use yet: they wait for the stream's work
// up to `waits_for_tick` to be known complete (the host has seen it through `completed_tick`), or,
// for a stream that ended, for a synchronisation of its context.
struct OomPendingStream {
  std::uint64_t stream = 0;         // the stream's handle as the program knows it
  std::uint64_t bytes = 0;          // free bytes waiting on it
  std::uint64_t largest_range = 0;  // the largest of those ranges
  std::uint64_t waits_for_tick = 0;
  std::uint64_t completed_tick = 0;
  bool stream_ended = false;
};

struct OomPool {
  std::uint64_t handle = 0;
  int device = -1;  // the device whose memory it holds, -1 for host and managed pools
  bool is_default = false;
  std::uint64_t reserved = 0;       // mapped by the pool
  std::uint64_t used = 0;           // allocated from it (the bytes requested)
  std::uint64_t free_bytes = 0;     // mapped and free: reusable now or once their frees complete
  std::uint64_t largest_free = 0;   // the largest free range, whatever it waits for
  std::vector<OomPendingStream> pending;  // by stream, most bytes first
};

// One live allocation; `call_site` is empty unless call sites are recorded.
struct OomLiveBlock {
  std::uint64_t address = 0;
  std::uint64_t bytes = 0;
  std::uint64_t pool = 0;
  std::string call_site;
};

struct OomFigures {
  // The request: from a pool, or (driver_request) one of the driver's own allocations the cap
  // refused (cuMemAlloc, cuMemAllocPitch, cuMemCreate), which no pool serves.
  bool driver_request = false;
  std::uint64_t bytes = 0;
  std::uint64_t pool = 0;    // the failing pool's handle (0 for a driver request)
  std::uint64_t stream = 0;  // as the program named it (0: the legacy default stream)
  int device = -1;
  std::uint64_t time_ns = 0;  // since the process started using streampool (0: not measured)
  // The process cap on the device (STREAMPOOL_LIMIT, streampool_limit_info).
  std::uint64_t limit = kNoLimit;
  std::uint64_t charged = 0;          // all the cap counts: the pools' mapped memory and forwarded
  std::uint64_t forwarded = 0;        // of that, the driver's own: cuMemAlloc, cuMemAllocPitch, cuMemCreate, arrays, graph memory
  std::uint64_t estimated_other = 0;  // not counted, estimated from cuMemGetInfo
  // The device as the driver sees it (driver_known false: not asked, as during a global capture).
  bool driver_known = false;
  std::uint64_t driver_free = 0;
  std::uint64_t driver_total = 0;
  std::vector<OomPool> pools;  // the failing pool first (for a driver request: none), then the device's others
  std::vector<OomLiveBlock> largest_live;  // largest first
  std::uint64_t failures = 0;  // out-of-memory failures in the process so far, this one included
};

struct OomExplanation {
  OomCause cause = OomCause::pool_limit;
  std::uint64_t stream = 0;  // pending_frees: the stream whose frees would cover the request
  std::string line;          // one sentence saying what explains the failure
};

OomExplanation explain_oom(const OomFigures& figures);

// Fragmentation of a pool's free memory: 0 when it is one range (or none), towards 1 when the
// largest range is a small part of it.
double fragmentation(const OomPool& pool) noexcept;

// The report for a person: several lines, each prefixed "streampool: ", ending in a newline.
std::string oom_text(const OomFigures& figures, const OomExplanation& explanation);
// The same as one JSON object (no newline).
std::string oom_json(const OomFigures& figures, const OomExplanation& explanation);

}  // namespace streampool::insight
