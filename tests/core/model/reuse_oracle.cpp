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

bool overlap(const BlockRecord& a, const BlockRecord& b) {
  return a.pool == b.pool && a.bytes != 0 && b.bytes != 0 && a.address < b.address + b.bytes &&
         b.address < a.address + a.bytes;
}

}  // namespace

std::size_t ReuseOracle::hand_out(const BlockRecord& block, std::string* violation) {
  violation->clear();
  last_reused_from_other_instance_ = false;
  last_overlapped_.clear();
  const std::size_t id = blocks_.size();
  for (std::size_t earlier = 0; earlier < blocks_.size() && violation->empty(); ++earlier) {
    const BlockRecord& other = blocks_[earlier];
    if (!overlap(other, block)) continue;
    last_overlapped_.push_back(earlier);
    std::ostringstream why;
    switch (other.state) {
      case BlockRecord::State::live:
        why << describe(id, block) << " overlaps " << describe(earlier, other) << ", which is still live";
        break;
      case BlockRecord::State::freed_on_stream: {
        if (!ordered_before(other.free_op, block.alloc_clock)) {
          why << describe(id, block) << " overlaps " << describe(earlier, other) << ", freed at stream instance "
              << other.free_op.instance << " position " << other.free_op.position
              << ", but the new allocation is ordered only after position "
              << clock_at(block.alloc_clock, other.free_op.instance) << " of that instance";
          break;
        }
        for (const OpRef& use : other.uses) {
          if (ordered_before(use, block.alloc_clock)) continue;
          why << describe(id, block) << " overlaps " << describe(earlier, other)
              << ", whose use at stream instance " << use.instance << " position " << use.position
              << " may still run: the new allocation is ordered only after position "
              << clock_at(block.alloc_clock, use.instance) << " of that instance";
          break;
        }
        if (why.str().empty() && other.free_op.instance != block.alloc.instance) {
          last_reused_from_other_instance_ = true;
        }
        break;
      }
      case BlockRecord::State::freed_by_host:
        break;
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

std::string ReuseOracle::check_use(std::size_t id, const VectorClock& use) const {
  const BlockRecord& block = blocks_[id];
  for (std::size_t earlier = 0; earlier < id; ++earlier) {
    const BlockRecord& other = blocks_[earlier];
    if (!overlap(other, block) || other.state != BlockRecord::State::freed_on_stream) continue;
    const OpRef* unordered = ordered_before(other.free_op, use) ? nullptr : &other.free_op;
    for (const OpRef& earlier_use : other.uses) {
      if (unordered == nullptr && !ordered_before(earlier_use, use)) unordered = &earlier_use;
    }
    if (unordered == nullptr) continue;
    std::ostringstream why;
    why << "a kernel that uses " << describe(id, block) << " after its allocation may run at once with "
        << describe(earlier, other) << "'s work at stream instance " << unordered->instance << " position "
        << unordered->position << ": the use is ordered only after position " << clock_at(use, unordered->instance)
        << " of that instance";
    return why.str();
  }
  return {};
}

std::string ReuseOracle::previous_owners_done(std::size_t id, const GpuModel& gpu) const {
  const BlockRecord& block = blocks_[id];
  for (std::size_t earlier = 0; earlier < id; ++earlier) {
    const BlockRecord& other = blocks_[earlier];
    if (!overlap(other, block) || other.state != BlockRecord::State::freed_on_stream) continue;
    const OpRef* pending = gpu.is_complete(other.free_op) ? nullptr : &other.free_op;
    for (const OpRef& use : other.uses) {
      if (pending == nullptr && !gpu.is_complete(use)) pending = &use;
    }
    if (pending == nullptr) continue;
    std::ostringstream why;
    why << "a host synchronisation of the stream that allocated " << describe(id, block)
        << " returned, but " << describe(earlier, other) << " may still be in use at stream instance "
        << pending->instance << " position " << pending->position
        << ": the allocating stream never waited for it";
    return why.str();
  }
  return {};
}

}  // namespace streampool::testing::model
