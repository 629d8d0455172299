// Submitting work to a stream as the entry points do: resolve the handle (0 meaning the legacy or the
// per-thread default stream, per the entry point's variant), respect graph capture (work on a
// capturing stream is recorded by CUDA, not run; the fake records nothing and runs nothing), and
// add the legacy stream's implicit synchronisation.
#pragma once

#include <functional>
#include <memory>

#include "driver.hpp"

namespace fake {

// Runs `work` in stream order on `handle` after `waits`; with `wait_for_completion` the caller also
// waits for it (synchronous copies and memsets run on the default stream this way).
CUresult submit_to_stream(CUstream handle, DefaultStream default_stream, std::function<void()> work,
                          std::vector<TicketWait> waits = {}, bool wait_for_completion = false);

bool capturing(const std::shared_ptr<Stream>& stream);

}  // namespace fake
