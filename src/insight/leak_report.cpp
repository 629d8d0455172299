#include "leak_report.hpp"
#include "json_text.hpp"

#include <cxxabi.h>
#include <dlfcn.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <utility>
#include <cstdlib>

namespace streampool::insight {

namespace {

struct Frame {
  std::uintptr_t address = 0;
  std::string object;          // empty where dladdr knows none
  std::uintptr_t object_offset = 0;
  std::string symbol;          // demangled; empty where the object has no symbol for it
  std::uintptr_t symbol_offset = 0;
};

Frame resolve(std::uintptr_t address) {
  Frame frame;
  frame.address = address;
  // A return address: the call that made the frame ends just before it.
  const std::uintptr_t inside_call = address == 0 ? 0 : address - 1;
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(inside_call), &info) == 0) return frame;
  if (info.dli_fname != nullptr) frame.object = info.dli_fname;
  frame.object_offset = inside_call - reinterpret_cast<std::uintptr_t>(info.dli_fbase);
  if (info.dli_sname != nullptr) {
    int status = -1;
    char* demangled = abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &status);
    frame.symbol = status == 0 && demangled != nullptr ? demangled : info.dli_sname;
    std::free(demangled);
    frame.symbol_offset = inside_call - reinterpret_cast<std::uintptr_t>(info.dli_saddr);
  }
  return frame;
}

bool in_object(std::uintptr_t address, const void* object) {
  if (object == nullptr || address == 0) return false;
  Dl_info info{};
  return ::dladdr(reinterpret_cast<void*>(address - 1), &info) != 0 && info.dli_fbase == object;
}

// The frames of a site past the allocator's own.
unsigned first_shown(const std::uintptr_t* frames, unsigned depth, const void* own_object) {
  unsigned first = 0;
  while (first < depth && in_object(frames[first], own_object)) ++first;
  return first == depth ? 0 : first;
}

std::string hex(std::uintptr_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%" PRIxPTR, value);
  return text;
}


std::string frame_text(const Frame& frame) {
  std::string out;
  if (!frame.symbol.empty()) {
    out += frame.symbol;
    out += '+';
    out += hex(frame.symbol_offset);
    out += ' ';
  }
  if (frame.object.empty()) {
    out += hex(frame.address);
  } else {
    out += '(';
    out += frame.object;
    out += '+';
    out += hex(frame.object_offset);
    out += ')';
  }
  return out;
}

// Sites with live allocations, most bytes first (then most allocations, then first seen).
std::vector<SiteTotals> live_sites(const CallSiteTable& table) {
  std::vector<SiteTotals> sites = table.sites();
  std::erase_if(sites, [](const SiteTotals& site) { return site.live_count == 0; });
  std::stable_sort(sites.begin(), sites.end(), [](const SiteTotals& a, const SiteTotals& b) {
    if (a.live_bytes != b.live_bytes) return a.live_bytes > b.live_bytes;
    return a.live_count > b.live_count;
  });
  return sites;
}

void append_number(std::string& out, const char* name, std::uint64_t value, bool comma = true) {
  char text[96];
  std::snprintf(text, sizeof text, "\"%s\":%" PRIu64 "%s", name, value, comma ? "," : "");
  out += text;
}

void append_site_json(std::string& out, const CallSiteTable& table, SiteId site, const ReportOptions& options) {
  out += '[';
  const std::uintptr_t* frames = nullptr;
  const unsigned depth = table.frames(site, &frames);
  const unsigned first = first_shown(frames, depth, options.own_object);
  for (unsigned i = first; i < depth && i - first < options.frames_shown; ++i) {
    const Frame frame = resolve(frames[i]);
    if (i != first) out += ',';
    out += "{\"address\":";
    append_json_string(out, hex(frame.address));
    out += ",\"object\":";
    append_json_string(out, frame.object);
    out += ",\"offset\":";
    append_json_string(out, hex(frame.object_offset));
    out += ",\"symbol\":";
    append_json_string(out, frame.symbol);
    out += ",\"symbol_offset\":";
    append_json_string(out, hex(frame.symbol_offset));
    out += '}';
  }
  out += ']';
}

}  // namespace

std::string describe_frame(std::uintptr_t address) { return frame_text(resolve(address)); }

std::string describe_site(const CallSiteTable& table, SiteId site, unsigned frames_wanted, const void* own_object) {
  const std::uintptr_t* frames = nullptr;
  const unsigned depth = table.frames(site, &frames);
  if (depth == 0) return "(a call site past the table's limit)";
  const unsigned first = first_shown(frames, depth, own_object);
  std::string out;
  for (unsigned i = first; i < depth && i - first < frames_wanted; ++i) {
    if (i != first) out += " < ";
    const Frame frame = resolve(frames[i]);
    if (!frame.symbol.empty()) {
      out += frame.symbol;
      out += '+';
      out += hex(frame.symbol_offset);
    } else if (!frame.object.empty()) {
      const std::size_t slash = frame.object.rfind('/');
      out += '(';
      out += slash == std::string::npos ? frame.object : frame.object.substr(slash + 1);
      out += '+';
      out += hex(frame.object_offset);
      out += ')';
    } else {
      out += hex(frame.address);
    }
  }
  return out;
}

namespace {

// The live bytes and allocations of every site, the ones past the table's limit included.
std::pair<std::uint64_t, std::uint64_t> live_totals(const std::vector<SiteTotals>& sites, const SiteTotals& other) {
  std::uint64_t bytes = other.live_bytes;
  std::uint64_t count = other.live_count;
  for (const SiteTotals& site : sites) {
    bytes += site.live_bytes;
    count += site.live_count;
  }
  return {bytes, count};
}

}  // namespace

std::string leak_report_text(const LeakLedger& ledger, const ReportOptions& options) {
  const CallSiteTable& table = ledger.sites();
  const std::vector<SiteTotals> sites = live_sites(table);
  const SiteTotals other = table.other_sites();
  const auto [bytes, count] = live_totals(sites, other);
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line,
                "streampool: leaks: %" PRIu64 " allocations (%" PRIu64 " bytes) still live at exit, from %zu call sites%s\n",
                count, bytes, sites.size(), other.live_count != 0 ? " and others" : "");
  out += line;
  unsigned shown = 0;
  for (const SiteTotals& site : sites) {
    if (shown++ == options.sites_shown) {
      std::snprintf(line, sizeof line, "streampool: leaks: ... %zu more call sites (in the JSON report)\n",
                    sites.size() - options.sites_shown);
      out += line;
      break;
    }
    std::snprintf(line, sizeof line, "streampool: leaks: %" PRIu64 " bytes in %" PRIu64 " allocations at\n",
                  site.live_bytes, site.live_count);
    out += line;
    const std::uintptr_t* frames = nullptr;
    const unsigned depth = table.frames(site.site, &frames);
    const unsigned first = first_shown(frames, depth, options.own_object);
    for (unsigned i = first; i < depth && i - first < options.frames_shown; ++i) {
      std::snprintf(line, sizeof line, "streampool: leaks:     #%u ", i - first);
      out += line;
      out += describe_frame(frames[i]);
      out += '\n';
    }
  }
  if (other.live_count != 0) {
    std::snprintf(line, sizeof line,
                  "streampool: leaks: %" PRIu64 " bytes in %" PRIu64 " allocations at other sites (past the limit of %u)\n",
                  other.live_bytes, other.live_count, table.max_sites());
    out += line;
  }
  std::uint64_t bad_total = 0;
  std::string counts;
  for (unsigned kind = 0; kind < kBadFreeKinds; ++kind) {
    const std::uint64_t n = ledger.bad_free_count(static_cast<BadFree>(kind));
    bad_total += n;
    if (n == 0) continue;
    std::snprintf(line, sizeof line, "%s%s %" PRIu64, counts.empty() ? "" : ", ",
                  bad_free_name(static_cast<BadFree>(kind)), n);
    counts += line;
  }
  if (bad_total != 0) {
    std::snprintf(line, sizeof line, "streampool: leaks: %" PRIu64 " bad frees: ", bad_total);
    out += line;
    out += counts;
    out += '\n';
  }
  return out;
}

std::string leak_report_json(const LeakLedger& ledger, const ReportOptions& options) {
  const CallSiteTable& table = ledger.sites();
  const std::vector<SiteTotals> sites = live_sites(table);
  const SiteTotals other = table.other_sites();
  const auto [bytes, count] = live_totals(sites, other);
  std::string out = "{\"live\":{";
  append_number(out, "allocations", count);
  append_number(out, "bytes", bytes);
  append_number(out, "sites", sites.size(), false);
  out += "},\"sites\":[";
  bool first = true;
  for (const SiteTotals& site : sites) {
    if (!first) out += ',';
    first = false;
    out += '{';
    append_number(out, "bytes", site.live_bytes);
    append_number(out, "allocations", site.live_count);
    append_number(out, "allocations_ever", site.allocations);
    out += "\"frames\":";
    append_site_json(out, table, site.site, options);
    out += '}';
  }
  out += "],\"other_sites\":{";
  append_number(out, "bytes", other.live_bytes);
  append_number(out, "allocations", other.live_count);
  append_number(out, "max_sites", table.max_sites(), false);
  out += "},\"bad_frees\":{";
  for (unsigned kind = 0; kind < kBadFreeKinds; ++kind) {
    append_number(out, bad_free_name(static_cast<BadFree>(kind)), ledger.bad_free_count(static_cast<BadFree>(kind)),
                  kind + 1 != kBadFreeKinds);
  }
  out += "},\"bad_free_events\":[";
  first = true;
  for (const BadFreeEvent& event : ledger.bad_frees()) {
    if (!first) out += ',';
    first = false;
    out += "{\"kind\":";
    append_json_string(out, bad_free_name(event.kind));
    out += ",\"address\":";
    append_json_string(out, hex(event.address));
    out += ",\"stream\":";
    append_json_string(out, hex(event.stream));
    out += ',';
    append_number(out, "bytes", event.bytes);
    append_number(out, "error", static_cast<std::uint64_t>(event.error));
    if (event.kind == BadFree::racing) append_number(out, "other_thread", event.other_thread);
    out += "\"free_site\":";
    append_site_json(out, table, event.free_site, options);
    if (event.has_allocation_site) {
      out += ",\"allocation_site\":";
      append_site_json(out, table, event.allocation_site, options);
    }
    if (event.has_first_free_site) {
      out += ",\"first_free_site\":";
      append_site_json(out, table, event.first_free_site, options);
    }
    out += '}';
  }
  out += "]}";
  return out;
}

}  // namespace streampool::insight
