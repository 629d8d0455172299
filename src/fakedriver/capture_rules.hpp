// What a global-mode capture does not survive, as NVIDIA's driver 580 behaves (measured on an
// H200, bench/results/2026-11-30-reuse-safety): any cuEventQuery, a cuStreamQuery of another stream,
// and cuStreamGetFlags / cuStreamGetId of the capturing stream, from any thread, fail with
// CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidate every global capture in progress. Records
// and waits on other streams and the VMM calls are safe there. Captures begun in thread-local or
// relaxed mode are not affected, nor are calls from a thread whose capture mode is relaxed
// (cuThreadExchangeStreamCaptureMode), as CUDA documents.
#pragma once

#include <cuda.h>

#include <memory>

namespace fake {

class Stream;

void global_capture_began(const std::shared_ptr<Stream>& stream);
void global_capture_ended(const Stream* stream);
// A call a global capture does not survive: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED (every global
// capture in progress now invalidated) if there is one, CUDA_SUCCESS otherwise.
CUresult refuse_during_global_capture();
// cuThreadExchangeStreamCaptureMode: the calling thread's mode (global until changed).
CUresult exchange_thread_capture_mode(CUstreamCaptureMode* mode);

}  // namespace fake
