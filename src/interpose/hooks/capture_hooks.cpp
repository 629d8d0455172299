// Graph capture: the hooks count captures in progress (see capture_tracker.hpp), so that
// allocations skip the cuStreamIsCapturing query while none can be running, and keep streampool's
// own marker operations out of every capture. A begin announces itself before the real call (and
// waits for the marker operations already under way), and settles once it returned: counted if it
// succeeded. An end uncounts when the capture really ended (success, or an invalidated capture,
// which also ends it); a refused end leaves the capture going, and counted. A count left too high
// only costs speed, never correctness.
#include "call_counters.hpp"
#include "driver/capture_tracker.hpp"
#include "process_state.hpp"

namespace streampool::interpose {

namespace {

template <class RealCall>
CUresult counted_begin(CUstream stream, bool per_thread, RealCall real_call) noexcept {
  driver::capture_begin_announce();
  const CUresult result = real_call();
  driver::capture_begin_settle(result == CUDA_SUCCESS, stream, per_thread);
  driver::check_captures_after("cuStreamBeginCapture");
  return result;
}

CUresult counted_end(CUresult result, CUstream stream, bool per_thread) noexcept {
  if (result == CUDA_SUCCESS || result == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED ||
      result == CUDA_ERROR_STREAM_CAPTURE_UNJOINED) {
    driver::capture_ended(stream, per_thread);
  }
  return result;
}

}  // namespace

}  // namespace streampool::interpose

using streampool::interpose::Hook;
namespace sp = streampool::interpose;
using streampool::driver::real;

// Captures are counted in pass-through mode too: harmless, and the count stays right for the report.
STREAMPOOL_HOOK CUresult cuStreamBeginCapture(CUstream hStream) {
  sp::count_call(Hook::cuStreamBeginCapture);
  return sp::counted_begin(hStream, false, [&] { return sp::forward(real().cuStreamBeginCapture, hStream); });
}

STREAMPOOL_HOOK CUresult cuStreamBeginCapture_ptsz(CUstream hStream) {
  sp::count_call(Hook::cuStreamBeginCapture_ptsz);
  return sp::counted_begin(hStream, true, [&] { return sp::forward(real().cuStreamBeginCapture_ptsz, hStream); });
}

STREAMPOOL_HOOK CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode) {
  sp::count_call(Hook::cuStreamBeginCapture_v2);
  return sp::counted_begin(hStream, false,
                           [&] { return sp::forward(real().cuStreamBeginCapture_v2, hStream, mode); });
}

STREAMPOOL_HOOK CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode) {
  sp::count_call(Hook::cuStreamBeginCapture_v2_ptsz);
  return sp::counted_begin(hStream, true,
                           [&] { return sp::forward(real().cuStreamBeginCapture_v2_ptsz, hStream, mode); });
}

STREAMPOOL_HOOK CUresult cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph, const CUgraphNode* dependencies,
                                                     const CUgraphEdgeData* dependencyData, size_t numDependencies,
                                                     CUstreamCaptureMode mode) {
  sp::count_call(Hook::cuStreamBeginCaptureToGraph);
  return sp::counted_begin(hStream, false, [&] {
    return sp::forward(real().cuStreamBeginCaptureToGraph, hStream, hGraph, dependencies, dependencyData,
                       numDependencies, mode);
  });
}

STREAMPOOL_HOOK CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream hStream, CUgraph hGraph,
                                                          const CUgraphNode* dependencies,
                                                          const CUgraphEdgeData* dependencyData,
                                                          size_t numDependencies, CUstreamCaptureMode mode) {
  sp::count_call(Hook::cuStreamBeginCaptureToGraph_ptsz);
  return sp::counted_begin(hStream, true, [&] {
    return sp::forward(real().cuStreamBeginCaptureToGraph_ptsz, hStream, hGraph, dependencies, dependencyData,
                       numDependencies, mode);
  });
}

STREAMPOOL_HOOK CUresult cuStreamEndCapture(CUstream hStream, CUgraph* phGraph) {
  sp::count_call(Hook::cuStreamEndCapture);
  return sp::counted_end(sp::forward(real().cuStreamEndCapture, hStream, phGraph), hStream, false);
}

STREAMPOOL_HOOK CUresult cuStreamEndCapture_ptsz(CUstream hStream, CUgraph* phGraph) {
  sp::count_call(Hook::cuStreamEndCapture_ptsz);
  return sp::counted_end(sp::forward(real().cuStreamEndCapture_ptsz, hStream, phGraph), hStream, true);
}
