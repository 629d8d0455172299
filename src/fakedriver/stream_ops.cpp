#include "stream_ops.hpp"

#include "context.hpp"

namespace fake {

bool capturing(const std::shared_ptr<Stream>& stream) {
  return stream->capture().status != CU_STREAM_CAPTURE_STATUS_NONE;
}

CUresult submit_to_stream(CUstream handle, DefaultStream default_stream, std::function<void()> work,
                          std::vector<TicketWait> waits, bool wait_for_completion) {
  std::shared_ptr<Stream> stream;
  if (CUresult status = resolve_stream(handle, default_stream, stream); status != CUDA_SUCCESS) return status;
  if (capturing(stream)) {
    return wait_for_completion ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
  }
  const std::uint64_t ticket = stream->context()->submit(stream, std::move(work), std::move(waits));
  if (wait_for_completion) stream->wait_until_reached(ticket);
  return CUDA_SUCCESS;
}

}  // namespace fake
