// Graph capture: the hooks only count captures in progress (see capture_tracker.hpp), so that
// allocations skip the cuStreamIsCapturing query while none can be running. A begin counts when
// it succeeds; an end uncounts when the capture really ended (success, or an invalidated capture,
// which also ends it). A count left too high only costs speed, never correctness.
#include "call_counters.hpp"
#include "driver/capture_tracker.hpp"
#include "process_state.hpp"

namespace streampool::interpose {

namespace {

CUresult counted_begin(CUresult result, CUstream stream, bool per_thread) noexcept {
  if (result == CUDA_SUCCESS) driver::capture_began(stream, per_thread);
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

// Captures are counted in pass-through mode too: harmless, and the count stays right for the report.
STREAMPOOL_HOOK CUresult cuStreamBeginCapture(CUstream hStream) {
  sp::count_call(Hook::cuStreamBeginCapture);
  return sp::counted_begin(sp::forward(streampool::driver::real().cuStreamBeginCapture, hStream), hStream, false);
}

STREAMPOOL_HOOK CUresult cuStreamBeginCapture_ptsz(CUstream hStream) {
  sp::count_call(Hook::cuStreamBeginCapture_ptsz);
  return sp::counted_begin(sp::forward(streampool::driver::real().cuStreamBeginCapture_ptsz, hStream), hStream, true);
}

STREAMPOOL_HOOK CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode) {
  sp::count_call(Hook::cuStreamBeginCapture_v2);
  return sp::counted_begin(sp::forward(streampool::driver::real().cuStreamBeginCapture_v2, hStream, mode), hStream, false);
}

STREAMPOOL_HOOK CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode) {
  sp::count_call(Hook::cuStreamBeginCapture_v2_ptsz);
  return sp::counted_begin(sp::forward(streampool::driver::real().cuStreamBeginCapture_v2_ptsz, hStream, mode), hStream, true);
}

STREAMPOOL_HOOK CUresult cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph, const CUgraphNode* dependencies,
                                                     const CUgraphEdgeData* dependencyData, size_t numDependencies,
                                                     CUstreamCaptureMode mode) {
  sp::count_call(Hook::cuStreamBeginCaptureToGraph);
  return sp::counted_begin(sp::forward(streampool::driver::real().cuStreamBeginCaptureToGraph, hStream, hGraph,
                                       dependencies, dependencyData, numDependencies, mode), hStream, false);
}

STREAMPOOL_HOOK CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream hStream, CUgraph hGraph,
                                                          const CUgraphNode* dependencies,
                                                          const CUgraphEdgeData* dependencyData,
                                                          size_t numDependencies, CUstreamCaptureMode mode) {
  sp::count_call(Hook::cuStreamBeginCaptureToGraph_ptsz);
  return sp::counted_begin(sp::forward(streampool::driver::real().cuStreamBeginCaptureToGraph_ptsz, hStream, hGraph,
                                       dependencies, dependencyData, numDependencies, mode), hStream, true);
}

STREAMPOOL_HOOK CUresult cuStreamEndCapture(CUstream hStream, CUgraph* phGraph) {
  sp::count_call(Hook::cuStreamEndCapture);
  return sp::counted_end(sp::forward(streampool::driver::real().cuStreamEndCapture, hStream, phGraph), hStream, false);
}

STREAMPOOL_HOOK CUresult cuStreamEndCapture_ptsz(CUstream hStream, CUgraph* phGraph) {
  sp::count_call(Hook::cuStreamEndCapture_ptsz);
  return sp::counted_end(sp::forward(streampool::driver::real().cuStreamEndCapture_ptsz, hStream, phGraph), hStream, true);
}
