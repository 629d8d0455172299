// Entry points: a minimal stream capture. The fake tracks each stream's capture status and id so that
// callers (and streampool's pass-through during capture) see CUDA's answers; it records no work:
// work submitted to a capturing stream is not run, and cuStreamEndCapture returns an empty graph
// (graph.hpp) that can be instantiated, launched (it does nothing) and destroyed.
#include <atomic>

#include "api_guard.hpp"
#include "capture_rules.hpp"
#include "driver.hpp"
#include "graph.hpp"
#include "stream_ops.hpp"

namespace fake {
namespace {

std::atomic<std::uint64_t> next_capture_id{1};

CUresult begin_capture(CUstream handle, DefaultStream default_stream, CUstreamCaptureMode mode) {
  if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
      mode != CU_STREAM_CAPTURE_MODE_RELAXED) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::shared_ptr<Stream> stream;
  if (CUresult status = resolve_stream(handle, default_stream, stream); status != CUDA_SUCCESS) return status;
  if (stream->kind() == StreamKind::legacy_default) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (capturing(stream)) return CUDA_ERROR_ILLEGAL_STATE;
  Stream::Capture capture;
  capture.status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
  capture.id = next_capture_id++;
  auto graph = std::make_unique<Graph>();
  graph->capture_id = capture.id;
  capture.graph = register_graph(std::move(graph));
  stream->set_capture(capture);
  if (mode == CU_STREAM_CAPTURE_MODE_GLOBAL) global_capture_began(stream);
  return CUDA_SUCCESS;
}

CUresult end_capture(CUstream handle, DefaultStream default_stream, CUgraph* graph_out) {
  if (graph_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::shared_ptr<Stream> stream;
  if (CUresult status = resolve_stream(handle, default_stream, stream); status != CUDA_SUCCESS) return status;
  const Stream::Capture capture = stream->capture();
  if (capture.status == CU_STREAM_CAPTURE_STATUS_NONE) return CUDA_ERROR_ILLEGAL_STATE;
  stream->set_capture(Stream::Capture{});
  global_capture_ended(stream.get());
  if (capture.status == CU_STREAM_CAPTURE_STATUS_INVALIDATED) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  *graph_out = capture.graph;
  return CUDA_SUCCESS;
}

CUresult is_capturing(CUstream handle, DefaultStream default_stream, CUstreamCaptureStatus* status_out) {
  if (status_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::shared_ptr<Stream> stream;
  if (CUresult status = resolve_stream(handle, default_stream, stream); status != CUDA_SUCCESS) return status;
  *status_out = stream->capture().status;
  return CUDA_SUCCESS;
}

CUresult capture_info(CUstream handle, DefaultStream default_stream, CUstreamCaptureStatus* status_out,
                      cuuint64_t* id_out, CUgraph* graph_out, const CUgraphNode** dependencies_out,
                      const CUgraphEdgeData** edge_data_out, size_t* dependency_count_out) {
  if (status_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::shared_ptr<Stream> stream;
  if (CUresult status = resolve_stream(handle, default_stream, stream); status != CUDA_SUCCESS) return status;
  const Stream::Capture capture = stream->capture();
  *status_out = capture.status;
  if (capture.status == CU_STREAM_CAPTURE_STATUS_NONE) return CUDA_SUCCESS;  // outputs other than status are undefined
  if (id_out != nullptr) *id_out = capture.id;
  if (graph_out != nullptr) *graph_out = capture.graph;
  if (dependencies_out != nullptr) *dependencies_out = nullptr;
  if (edge_data_out != nullptr) *edge_data_out = nullptr;
  if (dependency_count_out != nullptr) *dependency_count_out = 0;
  return CUDA_SUCCESS;
}

}  // namespace
}  // namespace fake

using namespace fake;

#undef cuStreamBeginCapture
#undef cuStreamGetCaptureInfo
FAKE_EXPORT CUresult cuStreamBeginCapture(CUstream hStream);
FAKE_EXPORT CUresult cuStreamBeginCapture_ptsz(CUstream hStream);
FAKE_EXPORT CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode);
FAKE_EXPORT CUresult cuStreamEndCapture_ptsz(CUstream hStream, CUgraph* phGraph);
FAKE_EXPORT CUresult cuStreamIsCapturing_ptsz(CUstream hStream, CUstreamCaptureStatus* captureStatus);
FAKE_EXPORT CUresult cuStreamGetCaptureInfo(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                            cuuint64_t* id_out);
FAKE_EXPORT CUresult cuStreamGetCaptureInfo_ptsz(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                                 cuuint64_t* id_out);
FAKE_EXPORT CUresult cuStreamGetCaptureInfo_v2(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                               cuuint64_t* id_out, CUgraph* graph_out,
                                               const CUgraphNode** dependencies_out, size_t* numDependencies_out);
FAKE_EXPORT CUresult cuStreamGetCaptureInfo_v2_ptsz(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                                    cuuint64_t* id_out, CUgraph* graph_out,
                                                    const CUgraphNode** dependencies_out,
                                                    size_t* numDependencies_out);
FAKE_EXPORT CUresult cuStreamGetCaptureInfo_v3(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                               cuuint64_t* id_out, CUgraph* graph_out,
                                               const CUgraphNode** dependencies_out,
                                               const CUgraphEdgeData** edgeData_out, size_t* numDependencies_out);
FAKE_EXPORT CUresult cuStreamGetCaptureInfo_v3_ptsz(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                                    cuuint64_t* id_out, CUgraph* graph_out,
                                                    const CUgraphNode** dependencies_out,
                                                    const CUgraphEdgeData** edgeData_out,
                                                    size_t* numDependencies_out);

FAKE_EXPORT CUresult cuStreamBeginCapture(CUstream hStream) {
  FAKE_ENTRY(begin_capture(hStream, DefaultStream::legacy, CU_STREAM_CAPTURE_MODE_GLOBAL));
}
FAKE_EXPORT CUresult cuStreamBeginCapture_ptsz(CUstream hStream) {
  FAKE_ENTRY(begin_capture(hStream, DefaultStream::per_thread, CU_STREAM_CAPTURE_MODE_GLOBAL));
}
FAKE_EXPORT CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode) {
  FAKE_ENTRY(begin_capture(hStream, DefaultStream::legacy, mode));
}
FAKE_EXPORT CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode) {
  FAKE_ENTRY(begin_capture(hStream, DefaultStream::per_thread, mode));
}
FAKE_EXPORT CUresult cuStreamEndCapture(CUstream hStream, CUgraph* phGraph) {
  FAKE_ENTRY(end_capture(hStream, DefaultStream::legacy, phGraph));
}
FAKE_EXPORT CUresult cuStreamEndCapture_ptsz(CUstream hStream, CUgraph* phGraph) {
  FAKE_ENTRY(end_capture(hStream, DefaultStream::per_thread, phGraph));
}
FAKE_EXPORT CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
  FAKE_ENTRY(exchange_thread_capture_mode(mode));
}
FAKE_EXPORT CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus* captureStatus) {
  FAKE_ENTRY(is_capturing(hStream, DefaultStream::legacy, captureStatus));
}
FAKE_EXPORT CUresult cuStreamIsCapturing_ptsz(CUstream hStream, CUstreamCaptureStatus* captureStatus) {
  FAKE_ENTRY(is_capturing(hStream, DefaultStream::per_thread, captureStatus));
}
FAKE_EXPORT CUresult cuStreamGetCaptureInfo(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                            cuuint64_t* id_out) {
  FAKE_ENTRY(capture_info(hStream, DefaultStream::legacy, captureStatus_out, id_out, nullptr, nullptr, nullptr, nullptr));
}
FAKE_EXPORT CUresult cuStreamGetCaptureInfo_ptsz(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                                 cuuint64_t* id_out) {
  FAKE_ENTRY(
      capture_info(hStream, DefaultStream::per_thread, captureStatus_out, id_out, nullptr, nullptr, nullptr, nullptr));
}
FAKE_EXPORT CUresult cuStreamGetCaptureInfo_v2(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                               cuuint64_t* id_out, CUgraph* graph_out,
                                               const CUgraphNode** dependencies_out, size_t* numDependencies_out) {
  FAKE_ENTRY(capture_info(hStream, DefaultStream::legacy, captureStatus_out, id_out, graph_out, dependencies_out,
                          nullptr, numDependencies_out));
}
FAKE_EXPORT CUresult cuStreamGetCaptureInfo_v2_ptsz(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                                    cuuint64_t* id_out, CUgraph* graph_out,
                                                    const CUgraphNode** dependencies_out,
                                                    size_t* numDependencies_out) {
  FAKE_ENTRY(capture_info(hStream, DefaultStream::per_thread, captureStatus_out, id_out, graph_out, dependencies_out,
                          nullptr, numDependencies_out));
}
FAKE_EXPORT CUresult cuStreamGetCaptureInfo_v3(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                               cuuint64_t* id_out, CUgraph* graph_out,
                                               const CUgraphNode** dependencies_out,
                                               const CUgraphEdgeData** edgeData_out, size_t* numDependencies_out) {
  FAKE_ENTRY(capture_info(hStream, DefaultStream::legacy, captureStatus_out, id_out, graph_out, dependencies_out,
                          edgeData_out, numDependencies_out));
}
FAKE_EXPORT CUresult cuStreamGetCaptureInfo_v3_ptsz(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                                    cuuint64_t* id_out, CUgraph* graph_out,
                                                    const CUgraphNode** dependencies_out,
                                                    const CUgraphEdgeData** edgeData_out,
                                                    size_t* numDependencies_out) {
  FAKE_ENTRY(capture_info(hStream, DefaultStream::per_thread, captureStatus_out, id_out, graph_out, dependencies_out,
                          edgeData_out, numDependencies_out));
}
