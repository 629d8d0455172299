// The library as streampool loads it: by absolute path, with NVIDIA's file and SONAME.
#include <dlfcn.h>
#include <link.h>

#include <cstring>
#include <string>

#include "fake_test_support.hpp"

extern "C" CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream hStream);

namespace fake_test {
namespace {

std::string soname_of(void* handle) {
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr) return {};
  const char* strings = nullptr;
  const ElfW(Dyn)* soname = nullptr;
  for (const ElfW(Dyn)* entry = map->l_ld; entry->d_tag != DT_NULL; ++entry) {
    if (entry->d_tag == DT_STRTAB) strings = reinterpret_cast<const char*>(entry->d_un.d_ptr);
    if (entry->d_tag == DT_SONAME) soname = entry;
  }
  return strings != nullptr && soname != nullptr ? std::string(strings + soname->d_un.d_val) : std::string();
}

TEST(LibraryTest, OpensByAbsolutePathAsLibcudaSoOneAndAnswersTheStubProbe) {
  void* handle = dlopen(FAKE_LIBCUDA_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  using GetProcAddress = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
  auto get_proc_address = reinterpret_cast<GetProcAddress>(dlsym(handle, "cuGetProcAddress_v2"));
  ASSERT_NE(get_proc_address, nullptr);
  void* function = nullptr;
  CUdriverProcAddressQueryResult status{};

  const CUresult probe = get_proc_address("", &function, 13000, 0, &status);

  EXPECT_EQ(soname_of(handle), "libcuda.so.1");
  EXPECT_NE(std::strstr(FAKE_LIBCUDA_PATH, "/fakecuda/libcuda.so.1"), nullptr);
  EXPECT_EQ(probe, CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(dlsym(handle, "cuMemAllocAsync_ptsz"), reinterpret_cast<void*>(&cuMemAllocAsync_ptsz));
  dlclose(handle);
}

}  // namespace
}  // namespace fake_test
