// ReuseOracle: judges every block the engine hands out against the history of the blocks
// before it, in the GpuModel's happens-before relation only.
//
// Block B may overlap an earlier block A (of the same pool) only if, in every legal execution,
// A is dead before B is born: every use of A (the kernels that touched it) is ordered before
// B's allocation, as the work the program later queues on B's stream is, and A's free is too
// (or A was freed with free_completed: the host had observed every use of A complete, so
// everything issued later follows it). A live A, or a use or free not ordered before B, is a
// violation: some legal execution runs both at once on the same bytes.
// A host synchronisation of the allocating stream must also prove the block's earlier owners
// done: once cuStreamSynchronize(s) returns, the program may use a block allocated on s from
// any stream, as it may on NVIDIA's driver, where reuse through the legacy stream's implicit
// order puts a real wait into s. previous_owners_done() checks that after such a sync.
// Every use of a block (check_use) must follow its bytes' earlier owners as well: work on another
// stream ordered after the allocation only through that allocation is still ordered after them.
// Pure bookkeeping over clocks given to it, so that a test can feed it a wrong history.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "model/gpu_model.hpp"

namespace streampool::testing::model {

struct BlockRecord {
  enum class State { live, freed_on_stream, freed_by_host };
  int pool = 0;
  std::uintptr_t address = 0;
  std::size_t bytes = 0;  // what the program asked for: what it may touch
  OpRef alloc;
  VectorClock alloc_clock;  // what work queued on the allocating stream from now on follows
  State state = State::live;
  OpRef free_op;  // for freed_on_stream
  std::vector<OpRef> uses;  // the kernels that touched it (the allocation itself runs nothing)
};

class ReuseOracle {
 public:
  // Checks B against the history, then records it. Returns its id; *violation is empty when
  // B is legal, else says which earlier block it may overlap in time.
  std::size_t hand_out(const BlockRecord& block, std::string* violation);
  void used(std::size_t id, const OpRef& op) { blocks_[id].uses.push_back(op); }
  // Work with clock `use` touches block `id`: every earlier owner of its bytes must be dead before
  // it. A program may use a block on any stream ordered after its allocation, and on NVIDIA's
  // driver the allocation is itself ordered after the earlier owners' frees (and what the legacy
  // stream's implicit order put before them): work ordered after the allocation is ordered after
  // those owners too. Empty when so, else which earlier use or free may still run.
  std::string check_use(std::size_t id, const VectorClock& use) const;
  void freed_on_stream(std::size_t id, const OpRef& free_op);
  void freed_by_host(std::size_t id);
  // After a host synchronisation that completed block `id`'s allocation: every use and free
  // of an earlier block on its bytes must be complete. Empty when so, else which one is not.
  std::string previous_owners_done(std::size_t id, const GpuModel& gpu) const;
  const BlockRecord& block(std::size_t id) const { return blocks_[id]; }
  // The last block handed out reuses memory freed on another stream instance (coverage).
  bool last_reused_from_other_instance() const { return last_reused_from_other_instance_; }
  // The earlier blocks the last one handed out overlaps.
  const std::vector<std::size_t>& last_overlapped() const { return last_overlapped_; }
  void clear() { blocks_.clear(); }

 private:
  std::vector<BlockRecord> blocks_;
  bool last_reused_from_other_instance_ = false;
  std::vector<std::size_t> last_overlapped_;
};

}  // namespace streampool::testing::model
