// Launches record their arguments: kernelParams copied by the parameter layout of the module's cubin
// (its ".nv.info.<kernel>" section), or the `extra` buffer as it is. The images here are built by
// hand in the form nvcc 13 writes them (kernel_params.hpp describes it).
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "fake_test_support.hpp"

extern "C" unsigned long long streampool_fake_launch_count();
extern "C" int streampool_fake_launch_arguments(unsigned long long index, void* buffer, unsigned long long buffer_bytes,
                                                unsigned long long* argument_bytes);
extern "C" void streampool_fake_launch_reset();

namespace fake_test {
namespace {

// A module image built in place (a fixed buffer keeps the compiler's bounds analysis quiet).
struct Image {
  std::array<unsigned char, 1024> bytes{};
  std::size_t size = 0;
  template <class T>
  void put(std::size_t at, T value) {
    std::memcpy(bytes.data() + at, &value, sizeof value);
    size = std::max(size, at + sizeof value);
  }
  void put_bytes(std::size_t at, const void* data, std::size_t count) {
    std::memcpy(bytes.data() + at, data, count);
    size = std::max(size, at + count);
  }
};

// One parameter attribute (format 4, attribute 0x17): ordinal, offset, size.
void add_parameter(Image& info, std::uint16_t ordinal, std::uint16_t offset, std::uint32_t size) {
  const std::size_t at = info.size;
  info.put<std::uint8_t>(at, 4);
  info.put<std::uint8_t>(at + 1, 0x17);
  info.put<std::uint16_t>(at + 2, 12);
  info.put<std::uint32_t>(at + 4, 0);
  info.put<std::uint16_t>(at + 8, ordinal);
  info.put<std::uint16_t>(at + 10, offset);
  info.put<std::uint32_t>(at + 12, (size << 18) | 0xf000);
}

// A cubin with one section ".nv.info.<kernel>": an attribute of format 3 first (as nvcc writes
// them), then the parameters of kernel(int*, int, double, char) in reverse order, as nvcc lists them.
Image cubin(const std::string& kernel) {
  Image info;
  info.put<std::uint8_t>(0, 3);
  info.put<std::uint8_t>(1, 0x19);
  info.put<std::uint16_t>(2, 25);
  add_parameter(info, 3, 24, 1);
  add_parameter(info, 2, 16, 8);
  add_parameter(info, 1, 8, 4);
  add_parameter(info, 0, 0, 8);
  const std::string names = std::string("\0.shstrtab\0.nv.info.", 20) + kernel + std::string(1, '\0');
  const std::size_t names_at = 64;
  const std::size_t info_at = names_at + names.size();
  const std::size_t headers_at = (info_at + info.size + 7) / 8 * 8;
  Image elf;
  const unsigned char ident[] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
  elf.put_bytes(0, ident, sizeof ident);
  elf.put_bytes(names_at, names.data(), names.size());
  elf.put_bytes(info_at, info.bytes.data(), info.size);
  auto section = [&](std::size_t index, std::uint32_t name, std::uint32_t type, std::size_t at, std::size_t size) {
    const std::size_t base = headers_at + index * 64;
    elf.put<std::uint32_t>(base, name);
    elf.put<std::uint32_t>(base + 4, type);
    elf.put<std::uint64_t>(base + 0x18, at);
    elf.put<std::uint64_t>(base + 0x20, size);
    elf.size = std::max(elf.size, base + 64);
  };
  section(0, 0, 0, 0, 0);
  section(1, 1, 3 /* SHT_STRTAB */, names_at, names.size());
  section(2, 11, 0x70000000 /* SHT_CUDA_INFO */, info_at, info.size);
  elf.put<std::uint64_t>(0x28, headers_at);
  elf.put<std::uint16_t>(0x3a, 64);
  elf.put<std::uint16_t>(0x3c, 3);
  elf.put<std::uint16_t>(0x3e, 1);
  return elf;
}

// A fat binary holding one cubin entry (kind 2), uncompressed.
Image fat_binary(const Image& cubin_image) {
  Image image;
  image.put<std::uint32_t>(0, 0xBA55ED50u);
  image.put<std::uint16_t>(4, 1);
  image.put<std::uint16_t>(6, 16);
  image.put<std::uint64_t>(8, 64 + cubin_image.size);
  image.put<std::uint16_t>(16, 2);
  image.put<std::uint16_t>(18, 0x0101);
  image.put<std::uint32_t>(20, 64);
  image.put<std::uint32_t>(24, static_cast<std::uint32_t>(cubin_image.size));
  image.put<std::uint64_t>(16 + 40, 0x11);  // 64-bit, Linux
  image.put_bytes(16 + 64, cubin_image.bytes.data(), cubin_image.size);
  return image;
}

Image text(const std::string& source) {
  Image image;
  image.put_bytes(0, source.c_str(), source.size() + 1);
  return image;
}

class LaunchArgumentsTest : public FakeDriverTest {
 protected:
  void SetUp() override {
    FakeDriverTest::SetUp();
    streampool_fake_launch_reset();
  }
  void TearDown() override {
    if (module_ != nullptr) cuModuleUnload(module_);
    FakeDriverTest::TearDown();
  }
  CUfunction load(const Image& image, const char* kernel) {
    image_ = image;
    EXPECT_EQ(cuModuleLoadData(&module_, image_.bytes.data()), CUDA_SUCCESS);
    CUfunction function = nullptr;
    EXPECT_EQ(cuModuleGetFunction(&function, module_, kernel), CUDA_SUCCESS);
    return function;
  }
  static std::vector<unsigned char> recorded_arguments(unsigned long long index) {
    unsigned long long bytes = 0;
    std::vector<unsigned char> buffer(64, 0xee);
    if (streampool_fake_launch_arguments(index, buffer.data(), buffer.size(), &bytes) != 0) return {};
    buffer.resize(bytes);
    return buffer;
  }
  Image image_;
  CUmodule module_ = nullptr;
};

constexpr const char* kKernel = "_Z4fillPiidc";

std::vector<unsigned char> expected_buffer(std::uint64_t pointer, int value, double real, char letter) {
  std::vector<unsigned char> buffer(25, 0);
  std::memcpy(buffer.data(), &pointer, 8);
  std::memcpy(buffer.data() + 8, &value, 4);
  std::memcpy(buffer.data() + 16, &real, 8);
  std::memcpy(buffer.data() + 24, &letter, 1);
  return buffer;
}

TEST_F(LaunchArgumentsTest, KernelParamsAreLaidOutAsTheFatBinarysCubinSays) {
  CUfunction function = load(fat_binary(cubin(kKernel)), kKernel);
  std::uint64_t pointer = 0x1122334455667788u;
  int value = 0x0a0b0c0d;
  double real = 1.5;
  char letter = 'Z';
  void* params[] = {&pointer, &value, &real, &letter};

  ASSERT_EQ(cuLaunchKernel(function, 2, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr), CUDA_SUCCESS);

  EXPECT_EQ(recorded_arguments(0), expected_buffer(pointer, value, real, letter));
}

TEST_F(LaunchArgumentsTest, ABareCubinGivesTheLayoutToo) {
  CUfunction function = load(cubin(kKernel), kKernel);
  std::uint64_t pointer = 42;
  int value = -1;
  double real = -0.25;
  char letter = 'a';
  void* params[] = {&pointer, &value, &real, &letter};

  ASSERT_EQ(cuLaunchKernel(function, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr), CUDA_SUCCESS);

  EXPECT_EQ(recorded_arguments(0), expected_buffer(pointer, value, real, letter));
}

TEST_F(LaunchArgumentsTest, AnExtraBufferIsRecordedAsItIs) {
  CUfunction function = load(text("// PTX: no parameter layout"), "kernel");
  unsigned char buffer[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  std::size_t size = sizeof buffer;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buffer, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};

  ASSERT_EQ(cuLaunchKernel(function, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, extra), CUDA_SUCCESS);

  EXPECT_EQ(recorded_arguments(0), std::vector<unsigned char>(buffer, buffer + sizeof buffer));
}

TEST_F(LaunchArgumentsTest, WithoutALayoutTheLaunchIsRecordedWithoutArguments) {
  CUfunction function = load(text("// PTX: no parameter layout"), "kernel");
  int value = 3;
  void* params[] = {&value};

  ASSERT_EQ(cuLaunchKernel(function, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr), CUDA_SUCCESS);

  EXPECT_EQ(streampool_fake_launch_count(), 1u);
  unsigned long long bytes = 0;
  EXPECT_EQ(streampool_fake_launch_arguments(0, nullptr, 0, &bytes), -1);
}

TEST_F(LaunchArgumentsTest, ParamsAndExtraTogetherAreInvalidValue) {
  CUfunction function = load(cubin(kKernel), kKernel);
  int value = 3;
  void* params[] = {&value};
  void* extra[] = {CU_LAUNCH_PARAM_END};

  EXPECT_EQ(cuLaunchKernel(function, 1, 1, 1, 1, 1, 1, 0, nullptr, params, extra), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(streampool_fake_launch_count(), 0u);
}

}  // namespace
}  // namespace fake_test
