// The detector for many threads at once (stress tests): a ledger of who owned which memory last.
//
// Every allocation is handed to the ledger, which answers with a Use: the new owner's work on the
// block, and the earlier owners of overlapping memory whose work had not finished when the block
// was handed out. The program queues use_work (a host function) as the new owner's first work on
// its stream: it counts a violation for every earlier owner whose work still runs, sleeps a little
// (the owner "using" the block) and marks itself done. After a host synchronisation of the owner's
// stream returns, check_after_synchronize counts the earlier owners still running as violations too
// (a synchronize that returns, or a query that succeeds, promises the stream's allocations ready).
#pragma once

#include <cuda.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace safety {

struct Use {
  CUdeviceptr block = 0;
  std::size_t bytes = 0;
  int work_us = 0;
  std::vector<std::shared_ptr<const Use>> earlier;  // owners still running at hand-out
  std::atomic<bool> done{false};
  std::atomic<int>* violations = nullptr;
};

inline void CUDA_CB use_work(void* data) {
  auto* use = static_cast<Use*>(data);
  for (const auto& earlier : use->earlier) {
    if (!earlier->done.load()) use->violations->fetch_add(1);
  }
  if (use->work_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(use->work_us));
  use->done.store(true);
}

class OwnershipLedger {
 public:
  // Records `block` as handed to a new owner whose work will take `work_us`; returns its Use,
  // which stays alive as long as the ledger.
  Use* hand_out(CUdeviceptr block, std::size_t bytes, int work_us) {
    auto use = std::make_shared<Use>();
    use->block = block;
    use->bytes = bytes;
    use->work_us = work_us;
    use->violations = &violations_;
    std::lock_guard lock(mutex_);
    auto overlapping = [&](const std::shared_ptr<Use>& last) {
      return last->block < block + bytes && block < last->block + last->bytes;
    };
    for (const auto& last : last_owners_) {
      if (overlapping(last) && !last->done.load()) use->earlier.push_back(last);
    }
    std::erase_if(last_owners_, overlapping);
    last_owners_.push_back(use);
    all_.push_back(use);
    return use.get();
  }

  // After a host synchronisation of the stream `use` was queued on returned.
  void check_after_synchronize(const Use& use) {
    for (const auto& earlier : use.earlier) {
      if (!earlier->done.load()) violations_.fetch_add(1);
    }
  }

  int violations() const { return violations_.load(); }
  std::size_t uses() {
    std::lock_guard lock(mutex_);
    return all_.size();
  }

 private:
  std::mutex mutex_;
  std::vector<std::shared_ptr<Use>> last_owners_;  // the last owner of each piece of memory
  std::vector<std::shared_ptr<Use>> all_;          // keeps every Use alive for queued host functions
  std::atomic<int> violations_{0};
};

}  // namespace safety
