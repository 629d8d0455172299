#include <sstream>
#include <utility>

#include "model/random_program.hpp"

namespace streampool::testing::model {

namespace {

// Every counter with the words that name it in the summary.
constexpr std::pair<std::size_t Coverage::*, const char*> kCounters[] = {
    {&Coverage::programs, "programs"},
    {&Coverage::steps, "steps"},
    {&Coverage::allocations, "allocations"},
    {&Coverage::reuses_across_streams, "reuses across streams"},
    {&Coverage::reuses_through_inserted_waits, "reuses through inserted waits"},
    {&Coverage::out_of_memory, "out-of-memory"},
    {&Coverage::inserted_waits, "inserted waits"},
    {&Coverage::markers, "markers"},
    {&Coverage::refused_markers, "refused marker records/waits"},
    {&Coverage::capture_changes, "captures begun or ended"},
    {&Coverage::capture_refusals, "marker calls refused during a capture"},
    {&Coverage::parked_commits, "delayed commits"},
    {&Coverage::parked_driver_calls, "delayed driver calls"},
    {&Coverage::event_tickets_overtaken, "event tickets overtaken by a record"},
    {&Coverage::successful_queries, "successful queries"},
    {&Coverage::syncs_proving_reuse, "host syncs proving a reuse"},
    {&Coverage::streams_destroyed, "streams destroyed"},
    {&Coverage::unseen_stream_ends, "unseen stream ends"},
    {&Coverage::host_frees, "host frees"},
    {&Coverage::legacy_steps, "legacy-stream allocs/frees"},
    {&Coverage::per_thread_steps, "per-thread-stream allocs/frees"},
    {&Coverage::failed_records, "failed records"},
    {&Coverage::failed_waits, "failed waits"},
    {&Coverage::failed_host_calls, "failed syncs/queries"},
    {&Coverage::untracked_records, "untracked records"},
    {&Coverage::graph_launch_records, "graph-launch records"},
    {&Coverage::events_recreated, "events recreated under an old handle"},
    {&Coverage::paused_driver_calls, "driver calls paused"},
    {&Coverage::interleaved_steps, "steps interleaved with them"},
    {&Coverage::blocked_interleavings, "blocked by the event lock"},
    {&Coverage::multi_context_programs, "programs with several contexts"},
    {&Coverage::context_syncs, "context synchronizes"},
    {&Coverage::contexts_ended, "contexts ended"},
    {&Coverage::contexts_ended_unseen, "of them unseen"},
    {&Coverage::context_handles_reused, "context handles reused"},
    {&Coverage::medium_allocations, "allocations of 64 MiB..1 GiB"},
    {&Coverage::large_allocations, "allocations of 1 GiB+"},
    {&Coverage::medium_unit_maps, "32 MiB units mapped"},
    {&Coverage::large_unit_maps, "256 MiB units mapped"},
    {&Coverage::medium_unit_unmaps, "32 MiB units unmapped"},
    {&Coverage::large_unit_unmaps, "256 MiB units unmapped"},
};

}  // namespace

void Coverage::add(const Coverage& other) {
  for (const auto& [counter, name] : kCounters) this->*counter += other.*counter;
}

std::string Coverage::summary() const {
  std::ostringstream out;
  const char* separator = "";
  for (const auto& [counter, name] : kCounters) {
    out << separator << this->*counter << " " << name;
    separator = ", ";
  }
  return out.str();
}

}  // namespace streampool::testing::model
