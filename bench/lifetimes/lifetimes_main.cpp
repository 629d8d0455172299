// lifetimes_bench: does host memory and time per lifetime stay flat while a program creates and
// ends streams, threads and pools for as long as it runs?
//
// Each phase runs its lifetimes in ten equal parts and, after each part (a checkpoint), prints
// the time per lifetime over that part and the process's RSS and VmSize. Flat means: after the
// first part (which grows caches and arenas once), memory stops growing, and the time per
// lifetime stays where it was. With --max-rss-growth-kib=N a phase whose RSS grew by more than N
// KiB between the 2nd and the last checkpoint fails the run (exit status 1); the same for the
// address space with --max-vmsize-growth-kib=N.
//
// Meant to run with LD_PRELOAD=libstreampool.so (STREAMPOOL_LIBCUDA naming the driver beneath):
// it refuses to run otherwise unless --allow-without-streampool is given.
//
// Usage: lifetimes_bench [--quick] [--phases=streams,threads,pools] [--streams=N] [--threads=N]
//                        [--pools=N] [--max-rss-growth-kib=N] [--max-vmsize-growth-kib=N]
//                        [--allow-without-streampool]
//   full counts: 1,000,000 streams, 100,000 threads, 100,000 pools; --quick: 1/100 of them.
#include <dlfcn.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lifetimes.hpp"
#include "process_memory.hpp"

namespace lifetimes {
namespace {

constexpr int kCheckpoints = 10;

struct Options {
  std::uint64_t streams = 1'000'000;
  std::uint64_t threads = 100'000;
  std::uint64_t pools = 100'000;
  std::vector<std::string> phases{"streams", "threads", "pools"};
  std::optional<std::uint64_t> max_rss_growth_kib;
  std::optional<std::uint64_t> max_vmsize_growth_kib;
  bool allow_without_streampool = false;
};

struct Checkpoint {
  std::uint64_t done = 0;
  double ns_per_lifetime = 0;
  ProcessMemory memory;
};

struct PhaseResult {
  std::vector<Checkpoint> checkpoints;
  bool failed = false;
};

bool starts_with(std::string_view text, std::string_view prefix) { return text.substr(0, prefix.size()) == prefix; }

std::vector<std::string> split(std::string_view text) {
  std::vector<std::string> parts;
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    parts.emplace_back(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
  }
  return parts;
}

bool parse(int argc, char** argv, Options* options) {
  bool quick = false;
  std::optional<std::uint64_t> streams, threads, pools;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    auto value = [&arg](std::string_view name) { return std::strtoull(arg.substr(name.size()).data(), nullptr, 10); };
    if (arg == "--quick") {
      quick = true;
    } else if (arg == "--allow-without-streampool") {
      options->allow_without_streampool = true;
    } else if (starts_with(arg, "--phases=")) {
      options->phases = split(arg.substr(9));
    } else if (starts_with(arg, "--streams=")) {
      streams = value("--streams=");
    } else if (starts_with(arg, "--threads=")) {
      threads = value("--threads=");
    } else if (starts_with(arg, "--pools=")) {
      pools = value("--pools=");
    } else if (starts_with(arg, "--max-rss-growth-kib=")) {
      options->max_rss_growth_kib = value("--max-rss-growth-kib=");
    } else if (starts_with(arg, "--max-vmsize-growth-kib=")) {
      options->max_vmsize_growth_kib = value("--max-vmsize-growth-kib=");
    } else {
      std::fprintf(stderr, "lifetimes_bench: unknown argument %s\n", argv[i]);
      return false;
    }
  }
  if (quick) {
    options->streams /= 100;
    options->threads /= 100;
    options->pools /= 100;
  }
  if (streams) options->streams = *streams;
  if (threads) options->threads = *threads;
  if (pools) options->pools = *pools;
  for (const std::string& phase : options->phases) {
    if (phase != "streams" && phase != "threads" && phase != "pools") {
      std::fprintf(stderr, "lifetimes_bench: unknown phase %s\n", phase.c_str());
      return false;
    }
  }
  return true;
}

const char* error_name(CUresult result) {
  const char* name = nullptr;
  if (cuGetErrorName(result, &name) != CUDA_SUCCESS || name == nullptr) name = "unknown CUDA error";
  return name;
}

// The fake driver's count of calls that reached `entry_point` (0 on a real driver).
unsigned long long driver_calls(const char* entry_point) {
  const char* path = std::getenv("STREAMPOOL_LIBCUDA");
  void* driver = path == nullptr ? nullptr : dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  if (driver == nullptr) return 0;
  using Counter = unsigned long long (*)(const char*);
  auto counter = reinterpret_cast<Counter>(dlsym(driver, "streampool_fake_counter"));
  const unsigned long long calls = counter == nullptr ? 0 : counter(entry_point);
  dlclose(driver);
  return calls;
}

using Lifetime = std::function<CUresult(std::uint64_t index, const char** failed_call)>;

PhaseResult run_phase(const char* name, std::uint64_t count, const Lifetime& lifetime) {
  PhaseResult result;
  std::printf("\n%-8s %10s %10s %16s %12s %14s\n", "phase", "checkpoint", "lifetimes", "ns_per_lifetime", "rss_kib",
              "vmsize_kib");
  std::uint64_t done = 0;
  for (int checkpoint = 1; checkpoint <= kCheckpoints && !result.failed; ++checkpoint) {
    const std::uint64_t until = count * static_cast<std::uint64_t>(checkpoint) / kCheckpoints;
    const std::uint64_t part = until - done;
    const auto start = std::chrono::steady_clock::now();
    for (; done < until; ++done) {
      const char* failed_call = "?";
      if (CUresult status = lifetime(done, &failed_call); status != CUDA_SUCCESS) {
        std::printf("%s: lifetime %llu failed: %s returned %s\n", name, static_cast<unsigned long long>(done),
                    failed_call, error_name(status));
        result.failed = true;
        break;
      }
    }
    const auto elapsed = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start);
    Checkpoint point{done, part == 0 ? 0.0 : elapsed.count() / static_cast<double>(part), read_process_memory()};
    result.checkpoints.push_back(point);
    std::printf("%-8s %7d/%-2d %10llu %16.0f %12llu %14llu\n", name, checkpoint, kCheckpoints,
                static_cast<unsigned long long>(point.done), point.ns_per_lifetime,
                static_cast<unsigned long long>(point.memory.rss_kib),
                static_cast<unsigned long long>(point.memory.vmsize_kib));
    std::fflush(stdout);
  }
  return result;
}

// Prints the phase's flatness; false when it failed or its memory grew past a bound.
bool judge(const char* name, const PhaseResult& result, const Options& options) {
  if (result.failed || result.checkpoints.size() < 2) {
    std::printf("%s: FAILED (a lifetime failed before the last checkpoint)\n", name);
    return false;
  }
  const Checkpoint& second = result.checkpoints[1];
  const Checkpoint& last = result.checkpoints.back();
  const auto growth = [](std::uint64_t from, std::uint64_t to) {
    return static_cast<long long>(to) - static_cast<long long>(from);
  };
  const long long rss_growth = growth(second.memory.rss_kib, last.memory.rss_kib);
  const long long vmsize_growth = growth(second.memory.vmsize_kib, last.memory.vmsize_kib);
  std::printf("%s: %llu lifetimes; from checkpoint 2 to %d: rss %+lld KiB, vmsize %+lld KiB, "
              "ns/lifetime %.0f -> %.0f\n",
              name, static_cast<unsigned long long>(last.done), kCheckpoints, rss_growth, vmsize_growth,
              second.ns_per_lifetime, last.ns_per_lifetime);
  bool flat = true;
  const auto check = [&](const char* what, long long grown, const std::optional<std::uint64_t>& bound) {
    if (!bound) return;
    const bool within = grown <= static_cast<long long>(*bound);
    std::printf("%s: %s growth %+lld KiB, bound %llu KiB: %s\n", name, what, grown,
                static_cast<unsigned long long>(*bound), within ? "flat" : "NOT FLAT");
    flat &= within;
  };
  check("rss", rss_growth, options.max_rss_growth_kib);
  check("vmsize", vmsize_growth, options.max_vmsize_growth_kib);
  return flat;
}

int run(const Options& options) {
  const bool preloaded = dlsym(RTLD_DEFAULT, "streampool_version") != nullptr;
  const char* driver = std::getenv("STREAMPOOL_LIBCUDA");
  std::printf("lifetimes_bench: allocator %s, driver %s\n", preloaded ? "streampool" : "the driver's own",
              driver != nullptr ? driver : "(default search)");
  std::printf("counts: %llu streams, %llu threads, %llu pools; %d checkpoints each\n",
              static_cast<unsigned long long>(options.streams), static_cast<unsigned long long>(options.threads),
              static_cast<unsigned long long>(options.pools), kCheckpoints);
  if (!preloaded && !options.allow_without_streampool) {
    std::fprintf(stderr, "lifetimes_bench: libstreampool.so is not preloaded (see --allow-without-streampool)\n");
    return 2;
  }
  Device device;
  const char* failed_call = "?";
  if (CUresult status = open_device(&device, &failed_call); status != CUDA_SUCCESS) {
    std::fprintf(stderr, "lifetimes_bench: %s returned %s\n", failed_call, error_name(status));
    return 2;
  }
  const ProcessMemory start = read_process_memory();
  std::printf("start: rss %llu KiB, vmsize %llu KiB\n", static_cast<unsigned long long>(start.rss_kib),
              static_cast<unsigned long long>(start.vmsize_kib));

  bool all_flat = true;
  for (const std::string& phase : options.phases) {
    PhaseResult result;
    if (phase == "streams") {
      result = run_phase("streams", options.streams,
                         [&device](std::uint64_t, const char** failed) { return stream_lifetime(device, failed); });
    } else if (phase == "threads") {
      result = run_phase("threads", options.threads,
                         [&device](std::uint64_t, const char** failed) { return thread_lifetime(device, failed); });
    } else {
      const unsigned long long reserves = driver_calls("cuMemAddressReserve");
      const unsigned long long frees = driver_calls("cuMemAddressFree");
      result = run_phase("pools", options.pools, [&device](std::uint64_t index, const char** failed) {
        return pool_lifetime(device, index, failed);
      });
      std::printf("pools: the driver saw %llu cuMemAddressReserve and %llu cuMemAddressFree calls\n",
                  driver_calls("cuMemAddressReserve") - reserves, driver_calls("cuMemAddressFree") - frees);
    }
    all_flat &= judge(phase.c_str(), result, options);
  }
  return all_flat ? 0 : 1;
}

}  // namespace
}  // namespace lifetimes

int main(int argc, char** argv) {
  lifetimes::Options options;
  if (!lifetimes::parse(argc, argv, &options)) return 2;
  return lifetimes::run(options);
}
