// The leak report: live allocations grouped by call site and sorted by bytes, with the bad frees
// seen, as text (for stderr at exit) and as JSON (STREAMPOOL_LEAKS_FILE, streampool_leak_report).
//
// Symbols are looked up here, at report time only (dladdr): each frame is shown as
// `symbol+0xoffset (object+0xoffset)`, the second offset being the address's place in its object,
// which `addr2line -f -e object 0xoffset` resolves to a file and line where the object has debug
// information. The addresses are return addresses, so the offsets shown are one less: inside the
// call instruction, which is the line that made the call. A binary without symbols in its dynamic
// table (not linked with -rdynamic) shows only the object and offset for its own functions.
#pragma once

#include <cstdint>
#include <string>

#include "leak_ledger.hpp"

namespace streampool::insight {

struct ReportOptions {
  // Innermost frames inside this object (the allocator's own library: its dladdr base) are not
  // shown; null shows every frame.
  const void* own_object = nullptr;
  unsigned sites_shown = 20;       // in the text; the JSON has every site
  unsigned frames_shown = 8;       // per site, in the text and the JSON
  unsigned bad_frees_shown = 16;   // in the text
};

std::string leak_report_text(const LeakLedger& ledger, const ReportOptions& options);
std::string leak_report_json(const LeakLedger& ledger, const ReportOptions& options);

// One frame as the reports show it.
std::string describe_frame(std::uintptr_t address);
// A site in one line: its first `frames` frames past the allocator's own, joined by " < ", each
// by its symbol where it has one, else by its object's file name and offset (the JSON report has
// both for every frame).
std::string describe_site(const CallSiteTable& table, SiteId site, unsigned frames, const void* own_object);

}  // namespace streampool::insight
