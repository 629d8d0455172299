// The number a program stored in an enum-typed field of a struct it handed us.
//
// cuda.h's enums have no fixed underlying type, so their values are only those of the smallest
// bit-field that holds every enumerator (0 .. 0x7fffffff for the ones with a *_MAX entry). A
// program may still store anything there (handleTypes = 0xffffffff, location.type = -1), and
// loading such a field as the enum is undefined behaviour, which UBSan's -fsanitize=enum turns
// into an abort. So fields reached through the caller's pointers are read as bytes, as the int
// they are in the C ABI, and compared as ints. Enum parameters passed by value are read the same
// way where they arrive (raw_enum(parameter)): clang checks every read of an enum-typed variable,
// parameters included, and GCC would too once one spills to memory. A call that forwards such a
// value to the real driver calls it through the same entry point typed with an int (as_int_abi):
// the int reaches the driver exactly as the program passed it, never held in an enum on the way.
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

// A C entry point's type with every enum parameter an int (the same ABI on every platform CUDA
// runs on: an unscoped C enum of int size is passed as an int).
template <class T>
using IntIfEnum = std::conditional_t<std::is_enum_v<T>, int, T>;

template <class Result, class... Params>
auto as_int_abi(Result (*entry)(Params...)) noexcept {
  using IntTyped = Result (*)(IntIfEnum<Params>...);
  return reinterpret_cast<IntTyped>(reinterpret_cast<void (*)()>(entry));
}

}  // namespace streampool::interpose
