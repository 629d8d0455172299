// ReuseOracle: judges every block the engine hands out against the history of the blocks
// before it, in the GpuModel's happens-before relation only.
//
// Block B may overlap an earlier block A (of the same pool) only if, in every legal execution,
// A is dead before B is born: A was freed on a stream and B's allocation op is ordered after
// that free op, or A was freed with free_completed (the host had observed every use of A
// complete, so everything issued later follows it). A live A, or a free not ordered before B,
// is a violation: some legal execution runs both at once on the same bytes.
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
  VectorClock alloc_clock;
  State state = State::live;
  OpRef free_op;  // for freed_on_stream
};

class ReuseOracle {
 public:
  // Checks B against the history, then records it. Returns its id; *violation is empty when
  // B is legal, else says which earlier block it may overlap in time.
  std::size_t hand_out(const BlockRecord& block, std::string* violation);
  void freed_on_stream(std::size_t id, const OpRef& free_op);
  void freed_by_host(std::size_t id);
  const BlockRecord& block(std::size_t id) const { return blocks_[id]; }
  // The last block handed out reuses memory freed on another stream instance (coverage).
  bool last_reused_from_other_instance() const { return last_reused_from_other_instance_; }
  void clear() { blocks_.clear(); }

 private:
  std::vector<BlockRecord> blocks_;
  bool last_reused_from_other_instance_ = false;
};

}  // namespace streampool::testing::model
