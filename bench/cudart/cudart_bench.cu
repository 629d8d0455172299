// The runtime's own overhead: kernel launches, small copies and the stream-ordered allocation pair,
// timed through whatever libcudart.so.13 the program runs with. The same source is built linked to
// NVIDIA's cudart (run plain, and under LD_PRELOAD=libstreampool.so) and with `-cudart none`
// linked to streampool's runtime; cudart_bench.py runs them interleaved and compares.
//
//   cudart_bench [--min-time SECONDS] [--filter SUBSTRING] [--list]
//
// Prints one JSON object: which library answered cudaLaunchKernel, and for each workload the
// nanoseconds per operation (the best of three timed batches, after a warm-up batch).
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <climits>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace {

__global__ void empty_kernel() {}
__global__ void one_argument_kernel(int* out) {
  if (out != nullptr && threadIdx.x == 1024) *out = 1;  // never true: the kernel does nothing
}

bool g_failed = false;

#define CHECK(call)                                                                       \
  do {                                                                                    \
    const cudaError_t check_error_ = (call);                                              \
    if (check_error_ != cudaSuccess) {                                                    \
      std::fprintf(stderr, "%s:%d: %s -> %s\n", __FILE__, __LINE__, #call,                \
                   cudaGetErrorName(check_error_));                                       \
      g_failed = true;                                                                    \
    }                                                                                     \
  } while (false)

struct Workload {
  const char* name;
  const char* what;
  int ops_per_call;                 // operations one call of `body` performs
  std::function<void()> body;       // must leave the GPU idle when it returns
};

double now_ns() {
  return static_cast<double>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

// Over the fake driver (CUDART_BENCH_FAKE_DRIVER names it) launches are recorded, not run: the
// record is emptied between batches so that a long run does not grow without bound.
void forget_fake_launches() {
  static void (*const reset)() = [] {
    const char* path = std::getenv("CUDART_BENCH_FAKE_DRIVER");
    void* library = path != nullptr ? dlopen(path, RTLD_LAZY | RTLD_NOLOAD) : nullptr;
    return library != nullptr ? reinterpret_cast<void (*)()>(dlsym(library, "streampool_fake_launch_reset")) : nullptr;
  }();
  if (reset != nullptr) reset();
}

// ns per operation: calls `body` until min_time has passed, three times, keeps the fastest batch.
double measure(const Workload& workload, double min_time_s) {
  workload.body();  // warm-up: lazy module load, pool growth, first-touch of pinned pages
  double best = -1;
  for (int batch = 0; batch < 3 && !g_failed; ++batch) {
    forget_fake_launches();
    long calls = 0;
    const double start = now_ns();
    double elapsed = 0;
    do {
      workload.body();
      ++calls;
      elapsed = now_ns() - start;
    } while (elapsed < min_time_s * 1e9 / 3 && !g_failed);
    const double per_op = elapsed / static_cast<double>(calls * workload.ops_per_call);
    if (best < 0 || per_op < best) best = per_op;
  }
  return best;
}

std::string library_of(const void* symbol) {
  Dl_info info{};
  if (symbol == nullptr || dladdr(symbol, &info) == 0 || info.dli_fname == nullptr) return "unknown";
  // The file itself: streampool's runtime is also reached through a link named libcudart.so.13.
  char resolved[PATH_MAX];
  return realpath(info.dli_fname, resolved) != nullptr ? resolved : info.dli_fname;
}

std::string json_escape(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  double min_time_s = 0.3;
  std::string filter;
  bool list = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--min-time") == 0 && i + 1 < argc) {
      min_time_s = std::atof(argv[++i]);
    } else if (std::strcmp(argv[i], "--filter") == 0 && i + 1 < argc) {
      filter = argv[++i];
    } else if (std::strcmp(argv[i], "--list") == 0) {
      list = true;
    } else {
      std::fprintf(stderr, "usage: %s [--min-time SECONDS] [--filter SUBSTRING] [--list]\n", argv[0]);
      return 2;
    }
  }

  constexpr int kLaunchBatch = 1000;   // launches between two synchronizations
  constexpr int kCopyBatch = 100;      // async copies between two synchronizations
  constexpr int kPairBatch = 1000;     // alloc+free pairs between two synchronizations
  constexpr size_t kSmall = 4096;      // "small" copy
  constexpr size_t kOneMiB = size_t{1} << 20;

  cudaStream_t stream = nullptr;
  int* device_a = nullptr;
  int* device_b = nullptr;
  void* pinned = nullptr;
  std::vector<char> pageable(kSmall, 1);
  if (!list) {
    CHECK(cudaSetDevice(0));
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CHECK(cudaMalloc(&device_a, kSmall));
    CHECK(cudaMalloc(&device_b, kSmall));
    CHECK(cudaMallocHost(&pinned, kSmall));
    if (g_failed) return 1;
  }
  // A fixed sequence of sizes between 256 B and 16 MiB (the same in every build and run).
  std::vector<size_t> random_sizes;
  unsigned state = 12345;
  for (int i = 0; i < 64; ++i) {
    state = state * 1664525u + 1013904223u;
    random_sizes.push_back(size_t{256} << ((state >> 8) % 17));
  }

  // The default pool of device 0 keeps what it holds at a synchronize.
  const auto keep_pool_memory = [] {
    cudaMemPool_t pool = nullptr;
    CHECK(cudaDeviceGetDefaultMemPool(&pool, 0));
    unsigned long long keep = ~0ULL;  // the attribute is a cuuint64_t
    CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  };

  void* one_argument = nullptr;
  void* launch_args[] = {&one_argument};
  const std::vector<Workload> workloads = {
      {"launch_chevron", "empty<<<1,1,0,s>>>() x1000, one cudaStreamSynchronize", kLaunchBatch,
       [&] {
         for (int i = 0; i < kLaunchBatch; ++i) empty_kernel<<<1, 1, 0, stream>>>();
         CHECK(cudaStreamSynchronize(stream));
       }},
      {"launch_api", "cudaLaunchKernel(one-argument kernel) x1000, one cudaStreamSynchronize", kLaunchBatch,
       [&] {
         for (int i = 0; i < kLaunchBatch; ++i) {
           CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(&one_argument_kernel), dim3(1), dim3(1),
                                  launch_args, 0, stream));
         }
         CHECK(cudaStreamSynchronize(stream));
       }},
      {"launch_sync", "empty<<<1,1,0,s>>>() + cudaStreamSynchronize (round trip)", 1,
       [&] {
         empty_kernel<<<1, 1, 0, stream>>>();
         CHECK(cudaStreamSynchronize(stream));
       }},
      {"get_set_device", "cudaGetDevice + cudaSetDevice of the same device (a device guard)", 1,
       [&] {
         int device = -1;
         CHECK(cudaGetDevice(&device));
         CHECK(cudaSetDevice(device));
       }},
      {"memcpy_h2d_pinned", "cudaMemcpy 4 KiB pinned host -> device", 1,
       [&] { CHECK(cudaMemcpy(device_a, pinned, kSmall, cudaMemcpyHostToDevice)); }},
      {"memcpy_d2h_pinned", "cudaMemcpy 4 KiB device -> pinned host", 1,
       [&] { CHECK(cudaMemcpy(pinned, device_a, kSmall, cudaMemcpyDeviceToHost)); }},
      {"memcpy_h2d_pageable", "cudaMemcpy 4 KiB pageable host -> device", 1,
       [&] { CHECK(cudaMemcpy(device_a, pageable.data(), kSmall, cudaMemcpyHostToDevice)); }},
      {"memcpy_d2h_pageable", "cudaMemcpy 4 KiB device -> pageable host", 1,
       [&] { CHECK(cudaMemcpy(pageable.data(), device_a, kSmall, cudaMemcpyDeviceToHost)); }},
      {"memcpy_d2d", "cudaMemcpy 4 KiB device -> device", 1,
       [&] { CHECK(cudaMemcpy(device_b, device_a, kSmall, cudaMemcpyDeviceToDevice)); }},
      {"memcpy_async_h2d_pinned", "cudaMemcpyAsync 4 KiB pinned -> device on s x100, one synchronize", kCopyBatch,
       [&] {
         for (int i = 0; i < kCopyBatch; ++i) {
           CHECK(cudaMemcpyAsync(device_a, pinned, kSmall, cudaMemcpyHostToDevice, stream));
         }
         CHECK(cudaStreamSynchronize(stream));
       }},
      {"memcpy_async_d2d", "cudaMemcpyAsync 4 KiB device -> device on s x100, one synchronize", kCopyBatch,
       [&] {
         for (int i = 0; i < kCopyBatch; ++i) {
           CHECK(cudaMemcpyAsync(device_b, device_a, kSmall, cudaMemcpyDeviceToDevice, stream));
         }
         CHECK(cudaStreamSynchronize(stream));
       }},
      {"pair_1MiB", "cudaMallocAsync 1 MiB + cudaFreeAsync on s x1000, one synchronize", kPairBatch,
       [&] {
         for (int i = 0; i < kPairBatch; ++i) {
           void* pointer = nullptr;
           CHECK(cudaMallocAsync(&pointer, kOneMiB, stream));
           CHECK(cudaFreeAsync(pointer, stream));
         }
         CHECK(cudaStreamSynchronize(stream));
       }},
      {"pair_random_sizes", "cudaMallocAsync + cudaFreeAsync, 64 sizes 256 B..16 MiB, on s x1024, one synchronize",
       kPairBatch, [&] {
         for (int i = 0; i < kPairBatch; ++i) {
           void* pointer = nullptr;
           CHECK(cudaMallocAsync(&pointer, random_sizes[static_cast<size_t>(i) % random_sizes.size()], stream));
           CHECK(cudaFreeAsync(pointer, stream));
         }
         CHECK(cudaStreamSynchronize(stream));
       }},
      // The same pairs with the default pool keeping its memory at a synchronize (release threshold
      // UINT64_MAX, as PyTorch and JAX set it): the allocator alone, without the pool shrinking to
      // nothing and growing again once per batch (the two runs above pay that). Last, as they
      // leave the threshold set.
      {"pair_1MiB_kept", "the pair 1 MiB x1000, one synchronize, release threshold UINT64_MAX", kPairBatch,
       [&] {
         keep_pool_memory();
         for (int i = 0; i < kPairBatch; ++i) {
           void* pointer = nullptr;
           CHECK(cudaMallocAsync(&pointer, kOneMiB, stream));
           CHECK(cudaFreeAsync(pointer, stream));
         }
         CHECK(cudaStreamSynchronize(stream));
       }},
      {"pair_random_sizes_kept", "the pair of 64 sizes 256 B..16 MiB x1024, one synchronize, threshold UINT64_MAX",
       kPairBatch, [&] {
         keep_pool_memory();
         for (int i = 0; i < kPairBatch; ++i) {
           void* pointer = nullptr;
           CHECK(cudaMallocAsync(&pointer, random_sizes[static_cast<size_t>(i) % random_sizes.size()], stream));
           CHECK(cudaFreeAsync(pointer, stream));
         }
         CHECK(cudaStreamSynchronize(stream));
       }},
  };

  if (list) {
    for (const Workload& workload : workloads) std::printf("%s\t%s\n", workload.name, workload.what);
    return 0;
  }

  const char* preload = std::getenv("LD_PRELOAD");
  std::printf("{\n  \"runtime\": \"%s\",\n  \"preload\": \"%s\",\n  \"min_time_s\": %g,\n  \"workloads\": {",
              json_escape(library_of(dlsym(RTLD_DEFAULT, "cudaLaunchKernel"))).c_str(),
              json_escape(preload != nullptr ? preload : "").c_str(), min_time_s);
  const char* separator = "\n";
  for (const Workload& workload : workloads) {
    if (!filter.empty() && std::strstr(workload.name, filter.c_str()) == nullptr) continue;
    const double ns = measure(workload, min_time_s);
    if (g_failed) break;
    std::printf("%s    \"%s\": %.2f", separator, workload.name, ns);
    std::fflush(stdout);
    separator = ",\n";
  }
  std::printf("\n  },\n  \"ok\": %s\n}\n", g_failed ? "false" : "true");
  cudaFreeHost(pinned);
  cudaFree(device_a);
  cudaFree(device_b);
  cudaStreamDestroy(stream);
  return g_failed ? 1 : 0;
}
