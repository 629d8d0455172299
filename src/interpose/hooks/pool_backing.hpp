// A pool's backing as every hook that creates a pool gives it to the engine: charged to the cap
// (control/process_limit.hpp), its mappings NVTX heaps with that mode on (insight/nvtx_registry.hpp).
// The one place the wrappers' order is decided: the registry sees only what the cap let through.
#pragma once

#include <memory>

#include "control/process_limit.hpp"
#include "core/backing.hpp"
#include "core/pool_props.hpp"
#include "insight/nvtx_registry.hpp"

namespace streampool::interpose {

inline std::unique_ptr<core::Backing> hooked_backing(const core::PoolProps& props,
                                                     std::unique_ptr<core::Backing> backing) {
  return insight_hooks::nvtx_observed(control_hooks::capped(props, std::move(backing)));
}

}  // namespace streampool::interpose
