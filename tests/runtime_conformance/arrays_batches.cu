// Copies between arrays, 3D allocations, memsets and peer copies, batches of copies, prefetches and
// discards, and the per-thread (_ptds/_ptsz) forms of the copy functions, which a program built with
// --default-stream per-thread calls (declared here: cuda_runtime_api.h names them only under that
// flag). No kernel runs here; the 3D batch copy needs the GPU's driver (the fake has none).
#include <cstring>
#include <numeric>
#include <vector>

#include "conformance.cuh"

extern "C" {
cudaError_t cudaMemcpy2DToArray_ptds(cudaArray_t dst, size_t wOffset, size_t hOffset, const void* src, size_t spitch,
                                     size_t width, size_t height, cudaMemcpyKind kind);
cudaError_t cudaMemcpy2DFromArrayAsync_ptsz(void* dst, size_t dpitch, cudaArray_const_t src, size_t wOffset,
                                            size_t hOffset, size_t width, size_t height, cudaMemcpyKind kind,
                                            cudaStream_t stream);
cudaError_t cudaMemcpyToSymbol_ptds(const void* symbol, const void* src, size_t count, size_t offset,
                                    cudaMemcpyKind kind);
cudaError_t cudaMemcpyFromSymbol_ptds(void* dst, const void* symbol, size_t count, size_t offset, cudaMemcpyKind kind);
cudaError_t cudaMemset3D_ptds(cudaPitchedPtr pitchedDevPtr, int value, cudaExtent extent);
cudaError_t cudaMemcpy3DPeerAsync_ptsz(const cudaMemcpy3DPeerParms* p, cudaStream_t stream);
cudaError_t cudaMemcpyBatchAsync_ptsz(void* const* dsts, const void* const* srcs, const size_t* sizes, size_t count,
                                      cudaMemcpyAttributes* attrs, size_t* attrsIdxs, size_t numAttrs,
                                      cudaStream_t stream);
cudaError_t cudaGetDriverEntryPoint_ptsz(const char* symbol, void** funcPtr, unsigned long long flags,
                                         cudaDriverEntryPointQueryResult* driverStatus);
}

namespace {

__device__ unsigned g_words[16];

// A 2D array of `width` x `height` bytes (one unsigned char channel).
cudaArray_t byte_array(std::size_t width, std::size_t height) {
  cudaArray_t array = nullptr;
  const cudaChannelFormatDesc desc = cudaCreateChannelDesc<unsigned char>();
  EXPECT_CUDA(cudaMallocArray(&array, &desc, width, height));
  return array;
}

std::vector<unsigned char> counting(std::size_t bytes, unsigned char first = 0) {
  std::vector<unsigned char> values(bytes);
  std::iota(values.begin(), values.end(), first);
  return values;
}

TEST(ArrayCopies, ArrayToArrayRunsOnAcrossRowsFromBothOffsets) {
  constexpr std::size_t kWidth = 16, kHeight = 4;
  cudaArray_t source = byte_array(kWidth, kHeight);
  cudaArray_t target = byte_array(kWidth, kHeight);
  const std::vector<unsigned char> values = counting(kWidth * kHeight);
  const std::vector<unsigned char> zeros(kWidth * kHeight, 0);
  ASSERT_CUDA(cudaMemcpy2DToArray(source, 0, 0, values.data(), kWidth, kWidth, kHeight, cudaMemcpyHostToDevice));
  ASSERT_CUDA(cudaMemcpy2DToArray(target, 0, 0, zeros.data(), kWidth, kWidth, kHeight, cudaMemcpyHostToDevice));

  // 40 bytes from (4, 1) of the source to (8, 0) of the target.
  ASSERT_CUDA(cudaMemcpyArrayToArray(target, 8, 0, source, 4, 1, 40, cudaMemcpyDeviceToDevice));

  std::vector<unsigned char> back(kWidth * kHeight);
  ASSERT_CUDA(cudaMemcpy2DFromArray(back.data(), kWidth, target, 0, 0, kWidth, kHeight, cudaMemcpyDeviceToHost));
  std::vector<unsigned char> expected = zeros;
  std::memcpy(expected.data() + 8, values.data() + kWidth + 4, 40);
  EXPECT_EQ(back, expected);
  EXPECT_CUDA(cudaFreeArray(source));
  EXPECT_CUDA(cudaFreeArray(target));
}

TEST(ArrayCopies, TwoDArrayToArrayCopiesTheRectangleOnly) {
  constexpr std::size_t kWidth = 12, kHeight = 6;
  cudaArray_t source = byte_array(kWidth, kHeight);
  cudaArray_t target = byte_array(kWidth, kHeight);
  const std::vector<unsigned char> values = counting(kWidth * kHeight, 1);
  const std::vector<unsigned char> zeros(kWidth * kHeight, 0);
  ASSERT_CUDA(cudaMemcpy2DToArray(source, 0, 0, values.data(), kWidth, kWidth, kHeight, cudaMemcpyHostToDevice));
  ASSERT_CUDA(cudaMemcpy2DToArray(target, 0, 0, zeros.data(), kWidth, kWidth, kHeight, cudaMemcpyHostToDevice));

  // 5 x 3 bytes from (2, 1) to (6, 2).
  ASSERT_CUDA(cudaMemcpy2DArrayToArray(target, 6, 2, source, 2, 1, 5, 3, cudaMemcpyDeviceToDevice));

  std::vector<unsigned char> back(kWidth * kHeight);
  ASSERT_CUDA(cudaMemcpy2DFromArray(back.data(), kWidth, target, 0, 0, kWidth, kHeight, cudaMemcpyDeviceToHost));
  std::vector<unsigned char> expected = zeros;
  for (std::size_t row = 0; row < 3; ++row) {
    std::memcpy(expected.data() + (2 + row) * kWidth + 6, values.data() + (1 + row) * kWidth + 2, 5);
  }
  EXPECT_EQ(back, expected);
  EXPECT_CUDA(cudaFreeArray(source));
  EXPECT_CUDA(cudaFreeArray(target));
}

TEST(ArrayCopies, OneDimensionalAsyncCopiesRoundTripInStreamOrder) {
  constexpr std::size_t kWidth = 32, kHeight = 3;
  cudaArray_t array = byte_array(kWidth, kHeight);
  cudaStream_t stream = nullptr;
  ASSERT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const std::vector<unsigned char> values = counting(50, 7);
  std::vector<unsigned char> back(50);

  ASSERT_CUDA(cudaMemcpyToArrayAsync(array, 20, 0, values.data(), values.size(), cudaMemcpyHostToDevice, stream));
  ASSERT_CUDA(cudaMemcpyFromArrayAsync(back.data(), array, 20, 0, back.size(), cudaMemcpyDeviceToHost, stream));
  ASSERT_CUDA(cudaStreamSynchronize(stream));

  EXPECT_EQ(back, values);
  EXPECT_CUDA(cudaStreamDestroy(stream));
  EXPECT_CUDA(cudaFreeArray(array));
}

TEST(ArrayCopies, ArrayToArrayChecksItsArgumentsAsCudartDoes) {
  cudaArray_t array = byte_array(8, 2);
  conformance::clear_last_error();

  EXPECT_EQ(cudaMemcpyArrayToArray(array, 0, 0, nullptr, 0, 0, 4, cudaMemcpyDeviceToDevice),
            cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaMemcpy2DArrayToArray(array, 0, 0, array, 0, 0, 4, 1, static_cast<cudaMemcpyKind>(7)),
            cudaErrorInvalidMemcpyDirection);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidMemcpyDirection);
  EXPECT_CUDA(cudaFreeArray(array));
}

TEST(Memory3D, Malloc3DPitchesRowsAndMemset3DFillsTheBoxOnly) {
  constexpr std::size_t kWidth = 40, kHeight = 5, kDepth = 3;
  cudaPitchedPtr box{};
  ASSERT_CUDA(cudaMalloc3D(&box, make_cudaExtent(kWidth, kHeight, kDepth)));
  EXPECT_NE(box.ptr, nullptr);
  EXPECT_GE(box.pitch, kWidth);
  EXPECT_EQ(box.xsize, kWidth);
  EXPECT_EQ(box.ysize, kHeight);

  ASSERT_CUDA(cudaMemset3D(box, 0, make_cudaExtent(kWidth, kHeight, kDepth)));
  ASSERT_CUDA(cudaMemset3D(box, 0x5a, make_cudaExtent(10, 2, 2)));
  std::vector<unsigned char> back(kWidth * kHeight * kDepth, 0xff);
  cudaMemcpy3DParms copy{};
  copy.srcPtr = box;
  copy.dstPtr = make_cudaPitchedPtr(back.data(), kWidth, kWidth, kHeight);
  copy.extent = make_cudaExtent(kWidth, kHeight, kDepth);
  copy.kind = cudaMemcpyDeviceToHost;
  ASSERT_CUDA(cudaMemcpy3D(&copy));

  std::size_t set = 0;
  for (std::size_t z = 0; z < kDepth; ++z) {
    for (std::size_t y = 0; y < kHeight; ++y) {
      for (std::size_t x = 0; x < kWidth; ++x) {
        const unsigned char want = (x < 10 && y < 2 && z < 2) ? 0x5a : 0;
        ASSERT_EQ(back[(z * kHeight + y) * kWidth + x], want) << x << "," << y << "," << z;
        set += want != 0;
      }
    }
  }
  EXPECT_EQ(set, 10u * 2 * 2);
  EXPECT_CUDA(cudaFree(box.ptr));
}

TEST(Memory3D, Memset3DAsyncRunsInStreamOrderAndNullOutputIsInvalid) {
  cudaPitchedPtr box{};
  ASSERT_CUDA(cudaMalloc3D(&box, make_cudaExtent(16, 4, 2)));
  cudaStream_t stream = nullptr;
  ASSERT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::vector<unsigned char> back(16 * 4 * 2);

  ASSERT_CUDA(cudaMemset3DAsync(box, 0x21, make_cudaExtent(16, 4, 2), stream));
  cudaMemcpy3DParms copy{};
  copy.srcPtr = box;
  copy.dstPtr = make_cudaPitchedPtr(back.data(), 16, 16, 4);
  copy.extent = make_cudaExtent(16, 4, 2);
  copy.kind = cudaMemcpyDeviceToHost;
  ASSERT_CUDA(cudaMemcpy3DAsync(&copy, stream));
  ASSERT_CUDA(cudaStreamSynchronize(stream));
  EXPECT_EQ(back, std::vector<unsigned char>(back.size(), 0x21));

  conformance::clear_last_error();
  EXPECT_EQ(cudaMalloc3D(nullptr, make_cudaExtent(16, 4, 2)), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_CUDA(cudaStreamDestroy(stream));
  EXPECT_CUDA(cudaFree(box.ptr));
}

TEST(Memory3D, PeerCopyWithinOneDeviceCopiesTheBox) {
  constexpr std::size_t kWidth = 24, kHeight = 3, kDepth = 2;
  cudaPitchedPtr source{}, target{};
  ASSERT_CUDA(cudaMalloc3D(&source, make_cudaExtent(kWidth, kHeight, kDepth)));
  ASSERT_CUDA(cudaMalloc3D(&target, make_cudaExtent(kWidth, kHeight, kDepth)));
  const std::vector<unsigned char> values = counting(kWidth * kHeight * kDepth, 3);
  cudaMemcpy3DParms in{};
  in.srcPtr = make_cudaPitchedPtr(const_cast<unsigned char*>(values.data()), kWidth, kWidth, kHeight);
  in.dstPtr = source;
  in.extent = make_cudaExtent(kWidth, kHeight, kDepth);
  in.kind = cudaMemcpyHostToDevice;
  ASSERT_CUDA(cudaMemcpy3D(&in));

  cudaMemcpy3DPeerParms peer{};
  peer.srcPtr = source;
  peer.srcDevice = 0;
  peer.dstPtr = target;
  peer.dstDevice = 0;
  peer.extent = make_cudaExtent(kWidth, kHeight, kDepth);
  ASSERT_CUDA(cudaMemcpy3DPeer(&peer));

  std::vector<unsigned char> back(values.size());
  cudaMemcpy3DParms out{};
  out.srcPtr = target;
  out.dstPtr = make_cudaPitchedPtr(back.data(), kWidth, kWidth, kHeight);
  out.extent = make_cudaExtent(kWidth, kHeight, kDepth);
  out.kind = cudaMemcpyDeviceToHost;
  ASSERT_CUDA(cudaMemcpy3D(&out));
  EXPECT_EQ(back, values);

  conformance::clear_last_error();
  peer.dstDevice = 1 << 20;
  EXPECT_EQ(cudaMemcpy3DPeer(&peer), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaMemcpy3DPeer(nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_CUDA(cudaFree(source.ptr));
  EXPECT_CUDA(cudaFree(target.ptr));
}

TEST(PerThreadForms, CopiesAndMemsetsUseTheCallingThreadsDefaultStream) {
  constexpr std::size_t kWidth = 16, kHeight = 2;
  cudaArray_t array = byte_array(kWidth, kHeight);
  const std::vector<unsigned char> values = counting(kWidth * kHeight, 9);
  std::vector<unsigned char> back(values.size());

  ASSERT_CUDA(cudaMemcpy2DToArray_ptds(array, 0, 0, values.data(), kWidth, kWidth, kHeight, cudaMemcpyHostToDevice));
  ASSERT_CUDA(cudaMemcpy2DFromArrayAsync_ptsz(back.data(), kWidth, array, 0, 0, kWidth, kHeight,
                                              cudaMemcpyDeviceToHost, nullptr));
  ASSERT_CUDA(cudaStreamSynchronize(cudaStreamPerThread));
  EXPECT_EQ(back, values);

  std::vector<unsigned> words(16), words_back(16);
  std::iota(words.begin(), words.end(), 100u);
  ASSERT_CUDA(cudaMemcpyToSymbol_ptds(g_words, words.data(), sizeof(unsigned) * 16, 0, cudaMemcpyHostToDevice));
  ASSERT_CUDA(
      cudaMemcpyFromSymbol_ptds(words_back.data(), g_words, sizeof(unsigned) * 16, 0, cudaMemcpyDeviceToHost));
  EXPECT_EQ(words_back, words);

  cudaPitchedPtr source{}, target{};
  ASSERT_CUDA(cudaMalloc3D(&source, make_cudaExtent(8, 2, 2)));
  ASSERT_CUDA(cudaMalloc3D(&target, make_cudaExtent(8, 2, 2)));
  ASSERT_CUDA(cudaMemset3D_ptds(source, 0x77, make_cudaExtent(8, 2, 2)));
  cudaMemcpy3DPeerParms peer{};
  peer.srcPtr = source;
  peer.dstPtr = target;
  peer.extent = make_cudaExtent(8, 2, 2);
  ASSERT_CUDA(cudaMemcpy3DPeerAsync_ptsz(&peer, nullptr));
  std::vector<unsigned char> box(8 * 2 * 2);
  cudaMemcpy3DParms out{};
  out.srcPtr = target;
  out.dstPtr = make_cudaPitchedPtr(box.data(), 8, 8, 2);
  out.extent = make_cudaExtent(8, 2, 2);
  out.kind = cudaMemcpyDeviceToHost;
  ASSERT_CUDA(cudaMemcpy3DAsync(&out, cudaStreamPerThread));
  ASSERT_CUDA(cudaStreamSynchronize(cudaStreamPerThread));
  EXPECT_EQ(box, std::vector<unsigned char>(box.size(), 0x77));

  EXPECT_CUDA(cudaFree(source.ptr));
  EXPECT_CUDA(cudaFree(target.ptr));
  EXPECT_CUDA(cudaFreeArray(array));
}

TEST(PerThreadForms, DriverEntryPointByDefaultIsThePerThreadVariant) {
  void* per_thread_default = nullptr;
  void* per_thread = nullptr;
  void* legacy = nullptr;
  cudaDriverEntryPointQueryResult status{};

  ASSERT_CUDA(cudaGetDriverEntryPoint_ptsz("cuMemcpyAsync", &per_thread_default, cudaEnableDefault, &status));
  EXPECT_EQ(status, cudaDriverEntryPointSuccess);
  ASSERT_CUDA(cudaGetDriverEntryPoint("cuMemcpyAsync", &per_thread, cudaEnablePerThreadDefaultStream, &status));
  ASSERT_CUDA(cudaGetDriverEntryPoint("cuMemcpyAsync", &legacy, cudaEnableLegacyStream, &status));

  EXPECT_NE(per_thread_default, nullptr);
  EXPECT_EQ(per_thread_default, per_thread);
  EXPECT_NE(per_thread_default, legacy);
}

// Device buffers of `bytes` each, filled with `fill` + index.
struct Buffers {
  std::vector<void*> pointers;
  Buffers(std::size_t count, std::size_t bytes) : pointers(count) {
    for (void*& pointer : pointers) EXPECT_CUDA(cudaMalloc(&pointer, bytes));
  }
  ~Buffers() {
    for (void* pointer : pointers) EXPECT_CUDA(cudaFree(pointer));
  }
};

TEST(MemoryBatches, BatchCopyCopiesEveryPairInStreamOrder) {
  constexpr std::size_t kCopies = 4, kBytes = 256;
  cudaStream_t stream = nullptr;
  ASSERT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  Buffers sources(kCopies, kBytes), targets(kCopies, kBytes);
  std::vector<std::vector<unsigned char>> values;
  for (std::size_t i = 0; i < kCopies; ++i) {
    values.push_back(counting(kBytes, static_cast<unsigned char>(i * 50)));
    ASSERT_CUDA(cudaMemcpy(sources.pointers[i], values[i].data(), kBytes, cudaMemcpyHostToDevice));
  }
  std::vector<const void*> srcs(sources.pointers.begin(), sources.pointers.end());
  std::vector<std::size_t> sizes(kCopies, kBytes);
  sizes[3] = kBytes / 2;
  // The first two copies take one set of attributes, the last two another.
  cudaMemcpyAttributes attributes[2]{};
  attributes[0].srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  attributes[1].srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  attributes[1].flags = cudaMemcpyFlagPreferOverlapWithCompute;
  std::size_t attribute_indices[2] = {0, 2};
  ASSERT_CUDA(cudaMemsetAsync(targets.pointers[3], 0, kBytes, stream));

  ASSERT_CUDA(cudaMemcpyBatchAsync(targets.pointers.data(), srcs.data(), sizes.data(), kCopies, attributes,
                                   attribute_indices, 2, stream));
  ASSERT_CUDA(cudaStreamSynchronize(stream));

  for (std::size_t i = 0; i < kCopies; ++i) {
    std::vector<unsigned char> back(kBytes);
    ASSERT_CUDA(cudaMemcpy(back.data(), targets.pointers[i], kBytes, cudaMemcpyDeviceToHost));
    std::vector<unsigned char> expected = values[i];
    if (i == 3) std::fill(expected.begin() + kBytes / 2, expected.end(), 0);
    EXPECT_EQ(back, expected) << "copy " << i;
  }
  EXPECT_CUDA(cudaStreamDestroy(stream));
}

TEST(MemoryBatches, BatchCopyOnTheNullStreamIsInvalidValueInThePerThreadFormToo) {
  Buffers source(1, 64), target(1, 64);
  const void* srcs[1] = {source.pointers[0]};
  std::size_t sizes[1] = {64};
  cudaMemcpyAttributes attributes{};
  attributes.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  std::size_t index = 0;

  EXPECT_EQ(cudaMemcpyBatchAsync_ptsz(target.pointers.data(), srcs, sizes, 1, &attributes, &index, 1, nullptr),
            cudaErrorInvalidValue);
  conformance::clear_last_error();
}

TEST(MemoryBatches, BatchCopyWithoutAttributesIsInvalidValueAndTheLastError) {
  cudaStream_t stream = nullptr;
  ASSERT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  Buffers source(1, 64), target(1, 64);
  const void* srcs[1] = {source.pointers[0]};
  std::size_t sizes[1] = {64};
  conformance::clear_last_error();

  EXPECT_EQ(cudaMemcpyBatchAsync(target.pointers.data(), srcs, sizes, 1, nullptr, nullptr, 0, stream),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_CUDA(cudaStreamDestroy(stream));
}

TEST(MemoryBatches, PrefetchAndDiscardBatchesOfManagedRangesTakeTheirPlaceInTheStream) {
  constexpr std::size_t kBytes = 1 << 16;
  void* managed = nullptr;
  ASSERT_CUDA(cudaMallocManaged(&managed, 2 * kBytes));
  cudaStream_t stream = nullptr;
  ASSERT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  void* ranges[2] = {managed, static_cast<char*>(managed) + kBytes};
  std::size_t sizes[2] = {kBytes, kBytes};
  cudaMemLocation locations[2]{};
  locations[0].type = cudaMemLocationTypeDevice;
  locations[0].id = 0;
  locations[1].type = cudaMemLocationTypeHost;
  std::size_t location_indices[2] = {0, 1};

  EXPECT_CUDA(cudaMemPrefetchBatchAsync(ranges, sizes, 2, locations, location_indices, 2, 0, stream));
  EXPECT_CUDA(cudaMemDiscardBatchAsync(ranges, sizes, 1, 0, stream));
  EXPECT_CUDA(cudaMemDiscardAndPrefetchBatchAsync(ranges + 1, sizes + 1, 1, locations, location_indices, 1, 0, stream));
  EXPECT_CUDA(cudaStreamSynchronize(stream));

  conformance::clear_last_error();
  EXPECT_EQ(cudaMemPrefetchBatchAsync(ranges, sizes, 2, locations, location_indices, 2, 1, stream),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_CUDA(cudaStreamDestroy(stream));
  EXPECT_CUDA(cudaFree(managed));
}

// A 3D batch: a pointer-to-array copy and an array-to-pointer copy (element = 4 bytes) in one call,
// then the box back. The fake driver has no 3D batch.
TEST(MemoryBatchesOnGpu, ThreeDBatchCopiesBetweenPointersAndArrays) {
  constexpr std::size_t kWidth = 8, kHeight = 4;
  cudaArray_t array = nullptr;
  const cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
  ASSERT_CUDA(cudaMallocArray(&array, &desc, kWidth, kHeight));
  std::vector<float> values(kWidth * kHeight), back(kWidth * kHeight, -1.0f);
  std::iota(values.begin(), values.end(), 0.25f);
  void* device = nullptr;
  ASSERT_CUDA(cudaMalloc(&device, sizeof(float) * values.size()));
  ASSERT_CUDA(cudaMemcpy(device, values.data(), sizeof(float) * values.size(), cudaMemcpyHostToDevice));
  cudaStream_t stream = nullptr;
  ASSERT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  cudaMemcpy3DBatchOp in{};
  in.src.type = cudaMemcpyOperandTypePointer;
  in.src.op.ptr.ptr = device;
  in.dst.type = cudaMemcpyOperandTypeArray;
  in.dst.op.array.array = array;
  in.extent = make_cudaExtent(kWidth, kHeight, 1);
  in.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  ASSERT_CUDA(cudaMemcpy3DBatchAsync(1, &in, 0, stream));
  cudaMemcpy3DBatchOp out{};
  out.src.type = cudaMemcpyOperandTypeArray;
  out.src.op.array.array = array;
  out.dst.type = cudaMemcpyOperandTypePointer;
  out.dst.op.ptr.ptr = back.data();
  out.extent = make_cudaExtent(kWidth, kHeight, 1);
  out.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  ASSERT_CUDA(cudaMemcpy3DBatchAsync(1, &out, 0, stream));
  ASSERT_CUDA(cudaStreamSynchronize(stream));

  EXPECT_EQ(back, values);
  EXPECT_CUDA(cudaStreamDestroy(stream));
  EXPECT_CUDA(cudaFree(device));
  EXPECT_CUDA(cudaFreeArray(array));
}

}  // namespace
