// streampool's report: per pool statistics (the four of CUDA, plus kind, location and release
// threshold), totals, and how often each hooked entry point was called.
//
// STREAMPOOL_STATS=<path> writes it as JSON at exit (the atexit handler is registered on the first
// hook call, after the real driver was loaded, so it runs before the driver's own teardown).
// In the path, %p stands for the process id and %% for a percent sign, so that the processes of
// one job (LD_PRELOAD and STREAMPOOL_STATS are inherited) each write their own report. A child
// forked after the report was registered writes one only when the path holds %p: otherwise the
// path names its parent's report. A report that cannot be written (no such folder, a full disk)
// leaves the exit status alone and says why on stderr at STREAMPOOL_LOG=warn.
// streampool_stats_json() (include/streampool/streampool.h) writes the same report into a caller's buffer.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

namespace streampool::interpose {

std::string stats_json();
void register_stats_report_at_exit() noexcept;
// STREAMPOOL_STATS's path: %p and %% expand as in a trace's (trace::expand_path,
// trace::names_each_process).

}  // namespace streampool::interpose
