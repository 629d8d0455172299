// The stream-ordered pool engine over this project's own memory: host memory reserved with
// plain address arithmetic, and streams that complete at once.
#include <cstdint>
#include <cstdio>
#include <memory>

#include <streampool/core/engine.hpp>

namespace {

namespace core = streampool::core;

class ArenaBacking final : public core::Backing {
 public:
  std::size_t granule_bytes() const override { return 1u << 20; }
  std::size_t reservation_bytes() const override { return std::size_t{1} << 32; }
  core::Status reserve(std::size_t bytes, std::uintptr_t* base) override {
    *base = next_;
    next_ += bytes;
    return core::Status::success;
  }
  core::Status unreserve(std::uintptr_t, std::size_t) override { return core::Status::success; }
  core::Status map(std::uintptr_t, std::size_t bytes, std::span<const core::AccessDescriptor>) override {
    mapped_ += bytes;
    return core::Status::success;
  }
  core::Status unmap(std::uintptr_t, std::size_t bytes) override {
    mapped_ -= bytes;
    return core::Status::success;
  }
  core::Status set_access(std::uintptr_t, std::size_t, std::span<const core::AccessDescriptor>) override {
    return core::Status::success;
  }

 private:
  std::uintptr_t next_ = std::uintptr_t{1} << 40;
  std::size_t mapped_ = 0;
};

class InstantOrdering final : public core::Ordering {
 public:
  core::StreamKind stream_kind(core::StreamKey) override { return core::StreamKind::non_blocking; }
  core::Status record(core::StreamKey, core::Marker* marker) override {
    *marker = ++markers_;
    return core::Status::success;
  }
  core::Status query(core::Marker) override { return core::Status::success; }
  core::Status wait(core::StreamKey, core::Marker) override { return core::Status::success; }
  void recycle(core::Marker) override {}

 private:
  core::Marker markers_ = 0;
};

}  // namespace

int main() {
  InstantOrdering ordering;
  core::Engine engine(ordering);
  core::Pool* pool = nullptr;
  if (engine.create_pool(core::PoolProps{}, std::make_unique<ArenaBacking>(), &pool) != core::Status::success) return 1;
  void* first = nullptr;
  void* second = nullptr;
  if (engine.allocate(pool, 1000, 1, &first) != core::Status::success) return 1;
  if (engine.free(first, 1) != core::Status::success) return 1;
  if (engine.allocate(pool, 1000, 1, &second) != core::Status::success) return 1;
  const core::PoolStats stats = engine.stats(pool);
  std::printf("engine: same-stream reuse %s, used %llu, reserved %llu\n", first == second ? "yes" : "no",
              static_cast<unsigned long long>(stats.used_current), static_cast<unsigned long long>(stats.reserved_current));
  return first == second ? 0 : 1;
}
