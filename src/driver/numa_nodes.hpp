// The host's NUMA nodes, for validating CU_MEM_LOCATION_TYPE_HOST_NUMA ids the way the driver
// does: an id names a node only if the kernel lists it (/sys/devices/system/node/node<id>). A
// machine without that directory (no NUMA support compiled in) has node 0 alone.
#pragma once

namespace streampool::driver {

bool host_numa_node_exists(int node) noexcept;

}  // namespace streampool::driver
