// The out-of-memory report's choice of explanation and its two renderings (oom_report.hpp).
#include "oom_report.hpp"
#include "json_text.hpp"

#include <cinttypes>
#include <cstdio>

namespace streampool::insight {

namespace {

constexpr std::uint64_t kPlacement = 512;  // the driver's placement unit: what a request takes

std::uint64_t placed(std::uint64_t bytes) noexcept {
  return bytes > UINT64_MAX - (kPlacement - 1) ? bytes : (bytes + kPlacement - 1) / kPlacement * kPlacement;
}

std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) noexcept { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

// "4.0 MiB": the unit that keeps the figure below 1024.
std::string human(std::uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double value = static_cast<double>(bytes);
  std::size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < sizeof kUnits / sizeof kUnits[0]) {
    value /= 1024.0;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %s", value, kUnits[unit]);
  return text;
}

std::string hex(std::uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%" PRIx64, value);
  return text;
}

// Another stream whose pending frees would cover the request (the requester may reuse its own
// frees at once: those left are too small or too scattered, which is fragmentation's case).
const OomPendingStream* stream_covering(const OomPool& pool, std::uint64_t requester, std::uint64_t needed) noexcept {
  const OomPendingStream* best = nullptr;
  for (const OomPendingStream& pending : pool.pending) {
    if (pending.stream == requester) continue;
    if (pending.bytes >= needed && (best == nullptr || pending.bytes > best->bytes)) best = &pending;
  }
  return best;
}

// What the device's pools hold (their mapped memory), as the pools themselves count it.
std::uint64_t device_pools_reserved(const OomFigures& figures) noexcept {
  std::uint64_t total = 0;
  for (const OomPool& pool : figures.pools) {
    if (pool.device == figures.device) total = saturating_add(total, pool.reserved);
  }
  return total;
}

void append_u64(std::string& out, const char* name, std::uint64_t value) {
  char text[64];
  std::snprintf(text, sizeof text, "\"%s\":%" PRIu64 ",", name, value);
  out += text;
}

void append_hex(std::string& out, const char* name, std::uint64_t value) {
  out += '"';
  out += name;
  out += "\":\"";
  out += hex(value);
  out += "\",";
}


void close_object(std::string& out) {
  if (!out.empty() && out.back() == ',') out.pop_back();
  out += '}';
}

void close_array(std::string& out) {
  if (!out.empty() && out.back() == ',') out.pop_back();
  out += ']';
}

}  // namespace

const char* oom_cause_name(OomCause cause) noexcept {
  switch (cause) {
    case OomCause::pending_frees:
      return "pending_frees";
    case OomCause::fragmentation:
      return "fragmentation";
    case OomCause::held_outside:
      return "held_outside";
    case OomCause::cap_reached:
      return "cap_reached";
    case OomCause::device_full:
      return "device_full";
    case OomCause::pool_limit:
      break;
  }
  return "pool_limit";
}

double fragmentation(const OomPool& pool) noexcept {
  if (pool.free_bytes == 0 || pool.largest_free >= pool.free_bytes) return 0.0;
  return 1.0 - static_cast<double>(pool.largest_free) / static_cast<double>(pool.free_bytes);
}

OomExplanation explain_oom(const OomFigures& figures) {
  OomExplanation explanation;
  const std::uint64_t needed = placed(figures.bytes);
  const std::string request = human(figures.bytes);
  const OomPool* failing = figures.pools.empty() || figures.driver_request ? nullptr : &figures.pools.front();

  if (failing != nullptr) {
    if (const OomPendingStream* pending = stream_covering(*failing, figures.stream, needed)) {
      explanation.cause = OomCause::pending_frees;
      explanation.stream = pending->stream;
      explanation.line = "frees still pending on stream " + hex(pending->stream) + ": " + human(pending->bytes) +
                         " freed there would serve the " + request + " request once " +
                         (pending->stream_ended ? "its context is synchronised"
                                                : "that stream's work is known complete (synchronise it, or "
                                                  "make the allocating stream wait on an event of it)");
      return explanation;
    }
    if (failing->free_bytes >= needed && failing->largest_free < needed) {
      explanation.cause = OomCause::fragmentation;
      explanation.line = "fragmentation: the pool has " + human(failing->free_bytes) + " free but its largest free range is " +
                         human(failing->largest_free) + ", less than the " + request +
                         " request, and it could not grow";
      return explanation;
    }
  }

  const std::uint64_t pools_reserved = device_pools_reserved(figures);
  const bool capped = figures.limit != kNoLimit;
  const bool over_cap = capped && saturating_add(figures.charged, needed) > figures.limit;
  if (over_cap) {
    const std::uint64_t outside = saturating_add(figures.forwarded, figures.estimated_other);
    if (outside > pools_reserved) {
      explanation.cause = OomCause::held_outside;
      explanation.line = "memory held outside the pools: " + human(outside) + " of the " + human(figures.limit) +
                         " cap is forwarded cuMemAlloc/cuMemCreate memory or the driver's own, the pools hold " +
                         human(pools_reserved);
      return explanation;
    }
    explanation.cause = OomCause::cap_reached;
    explanation.line = "cap reached: " + human(figures.charged) + " of the " + human(figures.limit) +
                       " cap is charged, the pools hold " + human(pools_reserved) + " of it";
    if (failing != nullptr) explanation.line += " (" + human(failing->used) + " in use in this pool)";
    return explanation;
  }
  if (figures.driver_known && figures.driver_free < needed) {
    const std::uint64_t device_used = figures.driver_total > figures.driver_free ? figures.driver_total - figures.driver_free : 0;
    const std::uint64_t outside = device_used > pools_reserved ? device_used - pools_reserved : 0;
    if (outside > pools_reserved) {
      explanation.cause = OomCause::held_outside;
      explanation.line = "memory held outside the pools: the device has " + human(figures.driver_free) +
                         " free, " + human(outside) + " of its memory is held outside streampool's pools (" +
                         human(pools_reserved) + " in them)";
      return explanation;
    }
    explanation.cause = OomCause::device_full;
    explanation.line = "device full: the device has " + human(figures.driver_free) + " free, less than the " + request +
                       " request; its pools hold " + human(pools_reserved);
    return explanation;
  }
  explanation.cause = OomCause::pool_limit;
  explanation.line = "the pool could not grow by " + request + " (its maximum size, or its backing refused)";
  return explanation;
}

std::string oom_text(const OomFigures& figures, const OomExplanation& explanation) {
  std::string out;
  char line[512];
  if (figures.driver_request) {
    std::snprintf(line, sizeof line,
                  "streampool: out of memory: %s (%" PRIu64 " bytes) of the driver's own (cuMemAlloc, cuMemAllocPitch "
                  "or cuMemCreate), device %d\n",
                  human(figures.bytes).c_str(), figures.bytes, figures.device);
  } else {
    std::snprintf(line, sizeof line, "streampool: out of memory: %s (%" PRIu64 " bytes) on stream %s from pool %s, device %d\n",
                  human(figures.bytes).c_str(), figures.bytes, hex(figures.stream).c_str(), hex(figures.pool).c_str(),
                  figures.device);
  }
  out += line;
  const std::string cap = figures.limit == kNoLimit ? std::string("none") : human(figures.limit);
  std::snprintf(line, sizeof line, "streampool:   cap %s, charged %s (forwarded %s, uncounted about %s)", cap.c_str(),
                human(figures.charged).c_str(), human(figures.forwarded).c_str(), human(figures.estimated_other).c_str());
  out += line;
  if (figures.driver_known) {
    out += "; device free " + human(figures.driver_free) + " of " + human(figures.driver_total) + "\n";
  } else {
    out += "; device free memory not asked\n";
  }
  for (const OomPool& pool : figures.pools) {
    std::snprintf(line, sizeof line,
                  "streampool:   pool %s%s (device %d): reserved %s, used %s, free %s, largest free range %s, "
                  "fragmentation %.0f%%\n",
                  hex(pool.handle).c_str(), pool.is_default ? " default" : "", pool.device, human(pool.reserved).c_str(),
                  human(pool.used).c_str(), human(pool.free_bytes).c_str(), human(pool.largest_free).c_str(),
                  fragmentation(pool) * 100.0);
    out += line;
    for (const OomPendingStream& pending : pool.pending) {
      if (pending.stream_ended) {
        std::snprintf(line, sizeof line,
                      "streampool:     pending on ended stream %s: %s (largest %s), waits for a synchronisation\n",
                      hex(pending.stream).c_str(), human(pending.bytes).c_str(), human(pending.largest_range).c_str());
      } else {
        std::snprintf(line, sizeof line,
                      "streampool:     pending on stream %s: %s (largest %s), waits for its work through tick %" PRIu64
                      " (known complete through %" PRIu64 ")\n",
                      hex(pending.stream).c_str(), human(pending.bytes).c_str(), human(pending.largest_range).c_str(),
                      pending.waits_for_tick, pending.completed_tick);
      }
      out += line;
    }
  }
  for (const OomLiveBlock& block : figures.largest_live) {
    std::snprintf(line, sizeof line, "streampool:   live %s: %s (pool %s)%s%s\n", hex(block.address).c_str(),
                  human(block.bytes).c_str(), hex(block.pool).c_str(), block.call_site.empty() ? "" : " at ",
                  block.call_site.c_str());
    out += line;
  }
  out += "streampool:   explanation: " + explanation.line + "\n";
  return out;
}

std::string oom_json(const OomFigures& figures, const OomExplanation& explanation) {
  std::string out = "{";
  out += figures.driver_request ? "\"request\":\"driver\"," : "\"request\":\"pool\",";
  append_u64(out, "bytes", figures.bytes);
  append_hex(out, "pool", figures.pool);
  append_hex(out, "stream", figures.stream);
  out += "\"device\":" + std::to_string(figures.device) + ",";
  append_u64(out, "time_ns", figures.time_ns);
  append_u64(out, "failures", figures.failures);
  if (figures.limit == kNoLimit) {
    out += "\"limit\":null,";
  } else {
    append_u64(out, "limit", figures.limit);
  }
  append_u64(out, "charged", figures.charged);
  append_u64(out, "forwarded", figures.forwarded);
  append_u64(out, "estimated_uncounted", figures.estimated_other);
  if (figures.driver_known) {
    out += "\"driver\":{";
    append_u64(out, "free", figures.driver_free);
    append_u64(out, "total", figures.driver_total);
    close_object(out);
    out += ',';
  } else {
    out += "\"driver\":null,";
  }
  out += "\"pools\":[";
  for (const OomPool& pool : figures.pools) {
    out += '{';
    append_hex(out, "handle", pool.handle);
    out += "\"device\":" + std::to_string(pool.device) + ",\"default\":" + (pool.is_default ? "true," : "false,");
    append_u64(out, "reserved", pool.reserved);
    append_u64(out, "used", pool.used);
    append_u64(out, "free", pool.free_bytes);
    append_u64(out, "largest_free", pool.largest_free);
    char ratio[48];
    std::snprintf(ratio, sizeof ratio, "\"fragmentation\":%.4f,", fragmentation(pool));
    out += ratio;
    out += "\"pending\":[";
    for (const OomPendingStream& pending : pool.pending) {
      out += '{';
      append_hex(out, "stream", pending.stream);
      append_u64(out, "bytes", pending.bytes);
      append_u64(out, "largest_range", pending.largest_range);
      append_u64(out, "waits_for_tick", pending.waits_for_tick);
      append_u64(out, "completed_tick", pending.completed_tick);
      out += std::string("\"stream_ended\":") + (pending.stream_ended ? "true" : "false");
      out += "},";
    }
    close_array(out);
    out += "},";
  }
  close_array(out);
  out += ",\"largest_live\":[";
  for (const OomLiveBlock& block : figures.largest_live) {
    out += '{';
    append_hex(out, "address", block.address);
    append_u64(out, "bytes", block.bytes);
    append_hex(out, "pool", block.pool);
    out += "\"call_site\":";
    if (block.call_site.empty()) {
      out += "null";
    } else {
      append_json_string(out, block.call_site);
    }
    out += "},";
  }
  close_array(out);
  out += ",\"cause\":\"";
  out += oom_cause_name(explanation.cause);
  out += "\",";
  if (explanation.cause == OomCause::pending_frees) append_hex(out, "cause_stream", explanation.stream);
  out += "\"explanation\":";
  append_json_string(out, explanation.line);
  out += '}';
  return out;
}

}  // namespace streampool::insight
