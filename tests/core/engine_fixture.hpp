// A fresh engine over the doubles, with a few streams and helpers that read as the driver
// behaviour they stand for.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "core/engine.hpp"
#include "core/sizes.hpp"
#include "doubles/forwarding_backing.hpp"
#include "doubles/in_memory_backing.hpp"
#include "doubles/scripted_ordering.hpp"

namespace streampool::testing {

inline constexpr std::size_t KiB = 1024;
inline constexpr std::size_t MiB = 1024 * KiB;

class EngineTest : public ::testing::Test {
 protected:
  static constexpr core::StreamKey kStream1 = 0x1000;
  static constexpr core::StreamKey kStream2 = 0x2000;
  static constexpr core::StreamKey kStream3 = 0x3000;
  static constexpr core::StreamKey kLegacy = 0x10;

  // The pool gets a backing that forwards to one the fixture keeps: a test may read
  // last_backing after the engine has reclaimed the pool; last_backing_released says whether it has.
  core::Pool* make_pool(core::PoolProps props = {}, InMemoryBacking::Config config = {}) {
    backings.push_back(std::make_unique<InMemoryBacking>(config));
    last_backing = backings.back().get();
    released.push_back(std::make_unique<bool>(false));
    last_backing_released = released.back().get();
    core::Pool* pool = nullptr;
    EXPECT_EQ(engine.create_pool(props, std::make_unique<ForwardingBacking>(*last_backing, last_backing_released),
                                 &pool),
              core::Status::success);
    return pool;
  }
  std::uintptr_t alloc(core::Pool* pool, std::size_t bytes, core::StreamKey stream) {
    void* ptr = nullptr;
    EXPECT_EQ(engine.allocate(pool, bytes, stream, &ptr), core::Status::success);
    return reinterpret_cast<std::uintptr_t>(ptr);
  }
  core::Status try_alloc(core::Pool* pool, std::size_t bytes, core::StreamKey stream, std::uintptr_t* out) {
    void* ptr = nullptr;
    core::Status status = engine.allocate(pool, bytes, stream, &ptr);
    *out = reinterpret_cast<std::uintptr_t>(ptr);
    return status;
  }
  void free(std::uintptr_t address, core::StreamKey stream) {
    EXPECT_EQ(engine.free(reinterpret_cast<void*>(address), stream), core::Status::success);
  }
  template <typename T>
  T attribute(core::Pool* pool, core::PoolAttribute which) {
    T value{};
    EXPECT_EQ(engine.get_attribute(pool, which, &value), core::Status::success);
    return value;
  }
  template <typename T>
  core::Status set_attribute(core::Pool* pool, core::PoolAttribute which, T value) {
    return engine.set_attribute(pool, which, &value);
  }
  std::uint64_t reserved(core::Pool* pool) { return engine.stats(pool).reserved_current; }
  std::uint64_t used(core::Pool* pool) { return engine.stats(pool).used_current; }
  // The program synchronises the host with a stream (cuStreamSynchronize).
  void synchronize(core::StreamKey stream) {
    auto ticket = engine.ticket_for_stream(stream, /*releases=*/true);
    ordering.complete(stream);
    engine.commit(ticket);
  }
  // The program records an event on `from` and makes `to` wait for it.
  void event_wait(core::StreamKey from, core::StreamKey to, core::EventKey event = 0xE0) {
    engine.event_recorded(event, from);
    engine.stream_waited(to, event);
  }

  // Declared before the engine: they outlive the pools that forward to them.
  std::vector<std::unique_ptr<InMemoryBacking>> backings;
  std::vector<std::unique_ptr<bool>> released;
  ScriptedOrdering ordering;
  core::Engine engine{ordering};
  InMemoryBacking* last_backing = nullptr;
  bool* last_backing_released = nullptr;
};

}  // namespace streampool::testing
