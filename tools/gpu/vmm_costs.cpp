// What each VMM call costs on NVIDIA's driver, so that the engine's growth and release can be
// shaped by measurement (docs/DESIGN.md, "Growth and release"): 32 MiB mapped three ways, each
// phase timed on its own, median of ROUNDS rounds (default 20).
//
//   vmm_costs [ROUNDS]
//
//   granules    16 allocations of 2 MiB: cuMemCreate, cuMemMap, cuMemRelease and cuMemSetAccess
//               for each; cuMemUnmap for each (what the engine does for a growth mapped granule by
//               granule)
//   batched     the same 16 allocations, one cuMemSetAccess over the 32 MiB, one cuMemUnmap over the
//               32 MiB (printed as refused if the driver does not take a range over several mappings)
//   one-unit    one allocation of 32 MiB: one call of each
// Prints one line per way: microseconds for create, map, release, access, unmap and the total.
#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cu_check.hpp"

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

struct Phases {
  double create = 0, map = 0, release = 0, access = 0, unmap = 0;
  double total() const { return create + map + release + access + unmap; }
};

CUmemAllocationProp prop_for(int device) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  return prop;
}

// `pieces` allocations of `piece` bytes from `base`; batched: one access and one unmap call.
// Returns false if a batched unmap was refused (then each piece is unmapped on its own).
bool one_round(CUdeviceptr base, size_t piece, int pieces, bool batched, int device, Phases* out) {
  const CUmemAllocationProp prop = prop_for(device);
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  std::vector<CUmemGenericAllocationHandle> handles(pieces);
  auto t = Clock::now();
  for (int i = 0; i < pieces; ++i) CHECK(cuMemCreate(&handles[i], piece, &prop, 0));
  out->create += since(t);
  t = Clock::now();
  for (int i = 0; i < pieces; ++i) CHECK(cuMemMap(base + i * piece, piece, 0, handles[i], 0));
  out->map += since(t);
  t = Clock::now();
  for (int i = 0; i < pieces; ++i) CHECK(cuMemRelease(handles[i]));
  out->release += since(t);
  t = Clock::now();
  if (batched) {
    CHECK(cuMemSetAccess(base, piece * pieces, &access, 1));
  } else {
    for (int i = 0; i < pieces; ++i) CHECK(cuMemSetAccess(base + i * piece, piece, &access, 1));
  }
  out->access += since(t);
  t = Clock::now();
  bool whole = true;
  if (batched && pieces > 1) {
    if (cuMemUnmap(base, piece * pieces) != CUDA_SUCCESS) {
      whole = false;
      for (int i = 0; i < pieces; ++i) CHECK(cuMemUnmap(base + i * piece, piece));
    }
  } else {
    for (int i = 0; i < pieces; ++i) CHECK(cuMemUnmap(base + i * piece, piece));
  }
  out->unmap += since(t);
  return whole;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void measure(const char* name, CUdeviceptr base, size_t piece, int pieces, bool batched, int rounds, int device) {
  std::vector<Phases> all(rounds);
  bool whole = true;
  one_round(base, piece, pieces, batched, device, &all[0]);  // warm-up
  for (int r = 0; r < rounds; ++r) {
    all[r] = Phases{};
    whole = one_round(base, piece, pieces, batched, device, &all[r]) && whole;
  }
  auto pick = [&](double Phases::*field) {
    std::vector<double> v;
    for (const Phases& p : all) v.push_back(p.*field);
    return median(v);
  };
  std::vector<double> totals;
  for (const Phases& p : all) totals.push_back(p.total());
  std::printf("%-9s create %7.1f  map %7.1f  release %7.1f  access %7.1f  unmap %7.1f  total %8.1f us%s\n", name,
              pick(&Phases::create), pick(&Phases::map), pick(&Phases::release), pick(&Phases::access),
              pick(&Phases::unmap), median(totals), whole ? "" : "  (one unmap over several mappings refused)");
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 20;
  const CUdevice device = start_on_device_0();
  const CUmemAllocationProp prop = prop_for(device);
  size_t granule = 0;
  CHECK(cuMemGetAllocationGranularity(&granule, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  const size_t span = 32u << 20;
  CUdeviceptr base = 0;
  CHECK(cuMemAddressReserve(&base, span, span, 0, 0));
  std::printf("granule %zu bytes, 32 MiB mapped three ways, median of %d rounds\n", granule, rounds);
  measure("granules", base, granule, static_cast<int>(span / granule), false, rounds, device);
  measure("batched", base, granule, static_cast<int>(span / granule), true, rounds, device);
  measure("one-unit", base, span, 1, false, rounds, device);
  CHECK(cuMemAddressFree(base, span));
  CHECK(cuDevicePrimaryCtxRelease(device));
  return 0;
}
