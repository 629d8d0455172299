// One engine and one pool over the in-memory doubles (no GPU, no driver): what every engine
// benchmark measures against. The backing only does bookkeeping, so the numbers are the
// engine's own host cost; the ordering double is never consulted on the same-stream path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "core/engine.hpp"
#include "doubles/in_memory_backing.hpp"
#include "doubles/scripted_ordering.hpp"

namespace streampool::corebench {

inline constexpr std::size_t KiB = 1024;
inline constexpr std::size_t MiB = 1024 * KiB;

// Stream keys far from the reserved ones the adapters use for the legacy / per-thread streams.
inline constexpr core::StreamKey kFirstStream = 0x10000;
inline core::StreamKey stream_for_thread(int thread_index) {
  return kFirstStream + static_cast<core::StreamKey>(thread_index) * 0x100;
}

struct BenchEngine {
  BenchEngine() {
    // STREAMPOOL_RELEASE=auto runs every benchmark under the self-tuning release policy, to
    // compare it with CUDA's threshold rule on the same workloads.
    const char* release = std::getenv("STREAMPOOL_RELEASE");
    if (release != nullptr && std::strcmp(release, "auto") == 0) {
      engine.set_release_policy(core::ReleasePolicy::self_tuning());
    }
    auto owned = std::make_unique<testing::InMemoryBacking>();
    backing = owned.get();
    auto status = engine.create_pool(core::PoolProps{}, std::move(owned), &pool);
    created = core::ok(status) && pool != nullptr;
  }
  // Like PyTorch and RMM: keep everything once reserved.
  bool keep_all_memory() {
    const std::uint64_t threshold = UINT64_MAX;
    return core::ok(engine.set_attribute(pool, core::PoolAttribute::release_threshold, &threshold));
  }

  testing::ScriptedOrdering ordering;
  core::Engine engine{ordering};
  core::Pool* pool = nullptr;
  testing::InMemoryBacking* backing = nullptr;  // owned by the pool; counts map / unmap calls
  bool created = false;
};

}  // namespace streampool::corebench
