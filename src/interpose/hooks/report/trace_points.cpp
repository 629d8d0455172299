#include "trace_points.hpp"


namespace streampool::interpose::trace_detail {
constinit thread_local std::uintptr_t served_pool __attribute__((tls_model("initial-exec"))) = 0;
}  // namespace streampool::interpose::trace_detail

namespace streampool::interpose::trace_detail {

void log_event(trace::Op op, std::uint16_t flags, CUresult result, std::uint64_t stream, std::uint64_t pool,
               std::uint64_t size, std::uint64_t address) noexcept {
  STREAMPOOL_LOG_DEBUG("%.*s%s stream %#llx pool %#llx size %llu address %#llx -> %d",
                       static_cast<int>(trace::op_name(static_cast<std::uint16_t>(op)).size()),
                       trace::op_name(static_cast<std::uint16_t>(op)).data(),
                       (flags & trace::kPerThreadVariant) != 0 ? " (per-thread)" : "",
                       static_cast<unsigned long long>(stream), static_cast<unsigned long long>(pool),
                       static_cast<unsigned long long>(size), static_cast<unsigned long long>(address),
                       static_cast<int>(result));
}

}  // namespace streampool::interpose::trace_detail
