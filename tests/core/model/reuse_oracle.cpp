#include "model/reuse_oracle.hpp"

#include <sstream>

namespace streampool::testing::model {

namespace {

std::string describe(std::size_t id, const BlockRecord& block) {
  std::ostringstream out;
  out << "block #" << id << " [0x" << std::hex << block.address << ", 0x" << block.address + block.bytes << std::dec
      << ") of pool " << block.pool << " allocated at stream instance " << block.alloc.instance << " position "
      << block.alloc.position;
  return out.str();
}

}  // namespace

std::size_t ReuseOracle::hand_out(const BlockRecord& block, std::string* violation) {
  violation->clear();
  last_reused_from_other_instance_ = false;
  const std::size_t id = blocks_.size();
  for (std::size_t earlier = 0; earlier < blocks_.size() && violation->empty(); ++earlier) {
    const BlockRecord& other = blocks_[earlier];
    if (other.pool != block.pool || other.bytes == 0 || block.bytes == 0) continue;
    const bool overlap = other.address < block.address + block.bytes && block.address < other.address + other.bytes;
    if (!overlap) continue;
    std::ostringstream why;
    switch (other.state) {
      case BlockRecord::State::live:
        why << describe(id, block) << " overlaps " << describe(earlier, other) << ", which is still live";
        break;
      case BlockRecord::State::freed_on_stream:
        if (ordered_before(other.free_op, block.alloc_clock)) {
          if (other.free_op.instance != block.alloc.instance) last_reused_from_other_instance_ = true;
          continue;
        }
        why << describe(id, block) << " overlaps " << describe(earlier, other) << ", freed at stream instance "
            << other.free_op.instance << " position " << other.free_op.position
            << ", but the new allocation is ordered only after position "
            << clock_at(block.alloc_clock, other.free_op.instance) << " of that instance";
        break;
      case BlockRecord::State::freed_by_host:
        continue;
    }
    *violation = why.str();
  }
  blocks_.push_back(block);
  return id;
}

void ReuseOracle::freed_on_stream(std::size_t id, const OpRef& free_op) {
  blocks_[id].state = BlockRecord::State::freed_on_stream;
  blocks_[id].free_op = free_op;
}

void ReuseOracle::freed_by_host(std::size_t id) { blocks_[id].state = BlockRecord::State::freed_by_host; }

}  // namespace streampool::testing::model
