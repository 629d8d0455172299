#include "capped_backing.hpp"

namespace streampool::interpose::control_hooks {

core::Status CappedBacking::reserve(std::size_t bytes, std::uintptr_t* base) {
  if (!chunked_) return inner_->reserve(bytes, base);
  if (!budget_.try_charge(device_, bytes)) return core::Status::out_of_memory;
  const core::Status status = inner_->reserve(bytes, base);
  if (!core::ok(status)) budget_.uncharge(device_, bytes);
  return status;
}

core::Status CappedBacking::unreserve(std::uintptr_t base, std::size_t bytes) {
  const core::Status status = inner_->unreserve(base, bytes);
  if (chunked_ && core::ok(status)) budget_.uncharge(device_, bytes);
  return status;
}

core::Status CappedBacking::map(std::uintptr_t address, std::size_t bytes,
                                std::span<const core::AccessDescriptor> access) {
  if (chunked_) return inner_->map(address, bytes, access);
  if (!budget_.try_charge(device_, bytes)) return core::Status::out_of_memory;
  const core::Status status = inner_->map(address, bytes, access);
  if (!core::ok(status)) budget_.uncharge(device_, bytes);
  return status;
}

core::Status CappedBacking::unmap(std::uintptr_t address, std::size_t bytes) {
  const core::Status status = inner_->unmap(address, bytes);
  if (!chunked_ && core::ok(status)) budget_.uncharge(device_, bytes);
  return status;
}

}  // namespace streampool::interpose::control_hooks
