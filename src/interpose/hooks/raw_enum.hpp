// The number a program stored in an enum-typed field of a struct it handed us.
//
// cuda.h's enums have no fixed underlying type, so their values are only those of the smallest
// bit-field that holds every enumerator (0 .. 0x7fffffff for the ones with a *_MAX entry). A
// program may still store anything there (handleTypes = 0xffffffff, location.type = -1), and
// loading such a field as the enum is undefined behaviour, which UBSan's -fsanitize=enum turns
// into an abort. So fields reached through the caller's pointers are read as bytes, as the int
// they are in the C ABI, and compared as ints. Enum parameters passed by value are converted
// with static_cast<int> where they arrive: that reads a register, not memory.
#pragma once

#include <cstring>
#include <type_traits>

namespace streampool::interpose {

template <class Enum>
int raw_enum(const Enum& field) noexcept {
  static_assert(std::is_enum_v<Enum> && sizeof(Enum) == sizeof(int), "a C enum field of int size");
  int value = 0;
  std::memcpy(&value, &field, sizeof value);
  return value;
}

}  // namespace streampool::interpose
