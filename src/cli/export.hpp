// `streampool export`: a trace in the formats of the viewers people already use.
//
// Both exporters replay the trace through the engine (replay.hpp), exactly as `streampool
// replay` and `plot` do, and write what the replay observes, event by event:
//  - torch-snapshot: the dictionary PyTorch's torch.cuda.memory._snapshot() returns, pickled
//    (pickle.hpp), for `python -m torch.cuda._memory_viz trace_plot|segment_plot` and the viewer
//    at pytorch.org/memory_viz. One segment per contiguous range a pool has mapped, one trace
//    entry per allocation, free (free_requested then free_completed: a block returns to its
//    pool at once, owned by its stream), map and unmap of pool memory, and failed allocation.
//  - perfetto: the Chrome JSON trace event format (ui.perfetto.dev, chrome://tracing): a counter
//    track of used and reserved bytes per pool, one async slice per allocation on its stream's
//    tracks, instant events for trims, failed allocations (named with the explanation streampool recorded) and the dependencies the engine
//    inserted.
// Addresses in both are those of the replay's address space, where every block lies in memory
// its pool mapped; each allocation also carries the address the program got.
#pragma once

#include <string>

#include "replay.hpp"

namespace streampool::cli {

// Write to the open descriptor `fd`; false with a reason in *error (the replay could not
// represent the trace, or a write failed).
bool export_torch_snapshot(const std::string& path, const trace::Trace& trace, const WhatIf& what_if, int fd,
                           std::string* error);
bool export_perfetto(const std::string& path, const trace::Trace& trace, const WhatIf& what_if, int fd,
                     std::string* error);

// Shared by the exporters.
// Whether the trace records out_of_memory events (streampool's report of a failed allocation, with
// its explanation): then they, not the failed allocations themselves, mark each failure.
bool records_out_of_memory(const trace::Trace& trace);
bool write_all(int fd, const char* bytes, std::size_t size);
std::string hex_of(std::uint64_t value);
std::string stream_label(std::uint64_t stream);  // "stream 0x...", "legacy default stream", ...
// The block the engine places for `requested` bytes (its 512-byte placement).
inline std::uint64_t block_bytes(std::uint64_t requested) { return (requested + 511) & ~std::uint64_t{511}; }

// The replay's progress on a terminal (replay_command.cpp).
std::function<void(double)> terminal_progress(const char* what, std::size_t records);

int export_command(const std::vector<std::string>& args);

}  // namespace streampool::cli
