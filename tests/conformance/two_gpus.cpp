// Implementation of the two-GPU group's helpers (see two_gpus.hpp).
#include "two_gpus.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

namespace conformance::two_gpus {
namespace {

// streampool_delayed_fill(u32* data, u64 count, u32 value, u64 delay_ns): every thread spins on
// %globaltimer until delay_ns passed, then the grid writes `value` into data[0 .. count) with a
// grid-stride loop. PTX ISA 7.0 for sm_70 and later; the driver JIT-compiles it for the GPU.
constexpr const char kFillPtx[] = R"(
.version 7.0
.target sm_70
.address_size 64

.visible .entry streampool_delayed_fill(
  .param .u64 data,
  .param .u64 count,
  .param .u32 value,
  .param .u64 delay_ns)
{
  .reg .pred %p<3>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<12>;

  ld.param.u64 %rd1, [data];
  ld.param.u64 %rd2, [count];
  ld.param.u32 %r1, [value];
  ld.param.u64 %rd3, [delay_ns];
  cvta.to.global.u64 %rd4, %rd1;
  mov.u64 %rd5, %globaltimer;
WAIT:
  mov.u64 %rd6, %globaltimer;
  sub.u64 %rd7, %rd6, %rd5;
  setp.lt.u64 %p1, %rd7, %rd3;
  @%p1 bra WAIT;
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.u32 %r5, %r2, %r3, %r4;
  cvt.u64.u32 %rd8, %r5;
  mov.u32 %r6, %nctaid.x;
  mul.lo.u32 %r7, %r6, %r3;
  cvt.u64.u32 %rd9, %r7;
FILL:
  setp.ge.u64 %p2, %rd8, %rd2;
  @%p2 bra DONE;
  shl.b64 %rd10, %rd8, 2;
  add.u64 %rd11, %rd4, %rd10;
  st.global.u32 [%rd11], %r1;
  add.u64 %rd8, %rd8, %rd9;
  bra.uni FILL;
DONE:
  ret;
}
)";

constexpr unsigned kThreadsPerBlock = 256;
constexpr std::size_t kMaxBlocks = 1024;

}  // namespace

std::string writer_name(Writer writer) { return writer == Writer::kernel ? "Kernel" : "Memset"; }

CUcontext device1_context() {
  static const CUcontext context = [] {
    CUdevice device = 0;
    CUcontext retained = nullptr;
    if (cuDeviceGet(&device, 1) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&retained, device) != CUDA_SUCCESS) {
      return static_cast<CUcontext>(nullptr);
    }
    return retained;
  }();
  return context;
}

ScopedContext::ScopedContext(CUcontext context) {
  (void)cuCtxGetCurrent(&previous_);
  status_ = cuCtxSetCurrent(context);
}

ScopedContext::~ScopedContext() { (void)cuCtxSetCurrent(previous_); }

ContextStream::ContextStream(CUcontext context) : context_(context) {
  ScopedContext scope(context_);
  status_ = scope.status() != CUDA_SUCCESS ? scope.status() : cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING);
  if (status_ != CUDA_SUCCESS) stream_ = nullptr;
}

ContextStream::~ContextStream() {
  if (stream_ == nullptr) return;
  ScopedContext scope(context_);
  (void)cuStreamSynchronize(stream_);
  (void)cuStreamDestroy(stream_);
}

ContextEvent::ContextEvent(CUcontext context) {
  ScopedContext scope(context);
  status_ = scope.status() != CUDA_SUCCESS ? scope.status() : cuEventCreate(&event_, CU_EVENT_DISABLE_TIMING);
  if (status_ != CUDA_SUCCESS) event_ = nullptr;
}

ContextEvent::~ContextEvent() {
  if (event_ != nullptr) (void)cuEventDestroy(event_);
}

CUresult fill_kernel(CUcontext context, CUfunction* function) {
  static std::map<CUcontext, CUfunction> loaded;  // the group's tests run on one thread
  if (auto found = loaded.find(context); found != loaded.end()) {
    *function = found->second;
    return CUDA_SUCCESS;
  }
  ScopedContext scope(context);
  if (scope.status() != CUDA_SUCCESS) return scope.status();
  char error_log[4096] = {};
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {error_log, reinterpret_cast<void*>(std::uintptr_t{sizeof error_log})};
  CUmodule module = nullptr;
  CUresult result = cuModuleLoadDataEx(&module, kFillPtx, 2, options, values);
  if (result != CUDA_SUCCESS) {
    std::printf("two-gpus: cuModuleLoadDataEx failed: %s\n", error_log);
    return result;
  }
  result = cuModuleGetFunction(function, module, "streampool_delayed_fill");
  if (result == CUDA_SUCCESS) loaded.emplace(context, *function);
  return result;
}

CUresult enqueue_write(Writer writer, CUcontext context, CUstream stream, CUdeviceptr data, std::size_t count,
                       std::uint32_t value, unsigned delay_ms) {
  ScopedContext scope(context);
  if (scope.status() != CUDA_SUCCESS) return scope.status();
  if (writer == Writer::memset) {
    if (delay_ms > 0) {
      if (CUresult result = enqueue_long_kernel(stream, delay_ms); result != CUDA_SUCCESS) return result;
    }
    return cuMemsetD32Async(data, value, count, stream);
  }
  CUfunction function = nullptr;
  if (CUresult result = fill_kernel(context, &function); result != CUDA_SUCCESS) return result;
  unsigned long long words = count;
  unsigned long long delay_ns = 1000000ULL * delay_ms;
  std::uint32_t pattern = value;
  void* arguments[] = {&data, &words, &pattern, &delay_ns};
  const auto blocks = static_cast<unsigned>(
      std::clamp<std::size_t>((count + kThreadsPerBlock - 1) / kThreadsPerBlock, 1, kMaxBlocks));
  return cuLaunchKernel(function, blocks, 1, 1, kThreadsPerBlock, 1, 1, 0, stream, arguments, nullptr);
}

CUresult read_words(CUstream stream, CUdeviceptr data, std::size_t count, std::vector<std::uint32_t>* words) {
  words->assign(count, 0);
  if (CUresult result = cuMemcpyDtoHAsync(words->data(), data, count * sizeof(std::uint32_t), stream);
      result != CUDA_SUCCESS) {
    return result;
  }
  return cuStreamSynchronize(stream);
}

std::string mismatch(const std::vector<std::uint32_t>& words, std::uint32_t expected) {
  const auto first = std::find_if(words.begin(), words.end(), [expected](std::uint32_t word) { return word != expected; });
  if (first == words.end()) return {};
  const auto differing = std::count_if(words.begin(), words.end(), [expected](std::uint32_t word) { return word != expected; });
  std::ostringstream text;
  text << differing << " of " << words.size() << " words differ; word " << (first - words.begin()) << " is 0x"
       << std::hex << *first << ", expected 0x" << expected;
  return text.str();
}

CUmemPoolProps pool_props_on(int device_id) {
  CUmemPoolProps props = device_pool_props();
  props.location.id = device_id;
  return props;
}

void TwoGpusTest::SetUp() {
  int count = 0;
  CU_ASSERT_OK(cuDeviceGetCount(&count));
  if (count < 2) {
    GTEST_SKIP() << "needs two devices; this driver has " << count
                 << " (over the fake driver: STREAMPOOL_FAKE_DEVICES=2)";
  }
  int one_to_zero = 0;
  int zero_to_one = 0;
  CU_ASSERT_OK(cuDeviceCanAccessPeer(&one_to_zero, 1, 0));
  CU_ASSERT_OK(cuDeviceCanAccessPeer(&zero_to_one, 0, 1));
  if (one_to_zero == 0 || zero_to_one == 0) {
    GTEST_SKIP() << "devices 0 and 1 cannot access each other (cuDeviceCanAccessPeer: 1->0 " << one_to_zero
                 << ", 0->1 " << zero_to_one << ")";
  }
  CU_ASSERT_OK(cuCtxGetCurrent(&context0_));
  ASSERT_NE(context0_, nullptr);
  context1_ = device1_context();
  ASSERT_NE(context1_, nullptr) << "cuDevicePrimaryCtxRetain(device 1) failed";
}

void TwoGpusTest::TearDown() {
  if (context1_ != nullptr) {
    ScopedContext scope(context1_);
    (void)cuCtxSynchronize();
  }
  if (context0_ != nullptr) (void)cuCtxSetCurrent(context0_);
}

void TwoGpusTest::require_writer(Writer writer) {
  if (writer != Writer::kernel) return;
  if (on_fake_driver()) {
    GTEST_SKIP() << "the fake driver runs no kernels (the Memset variant of this test covers the scenario there)";
  }
  CUfunction function = nullptr;
  CU_ASSERT_OK(fill_kernel(context1_, &function)) << " (loading the PTX fill kernel on device 1)";
}

}  // namespace conformance::two_gpus
