// The parameter layout of each kernel of a module image, so that a recorded launch can keep its
// arguments' bytes (the fake runs no kernel, but tests check what a runtime passed).
//
// Where the layout comes from: a cubin (ELF) holds, per kernel, a section ".nv.info.<kernel name>"
// of attributes, each a format byte, an attribute byte and then (format 3) a 16-bit value or
// (format 4) a 16-bit size and that many bytes. Attribute 0x17 (format 4, 12 bytes) describes one
// parameter: a 32-bit word, the parameter's ordinal (16 bits), its offset in the parameter buffer
// (16 bits), and a 32-bit word whose bits 18 and up are its size in bytes. (Read off cubins nvcc 13
// writes: fill(int*, int, double, char) lists ordinals 0..3 at offsets 0, 8, 16, 24, sizes 8, 4, 8, 1.)
// A fat binary (magic 0xBA55ED50: 32-bit magic, 16-bit version, 16-bit header size, 64-bit size of
// the entries) holds entries, each a header (16-bit kind, 2 for a cubin; 16-bit version; 32-bit header
// size; 32-bit payload size; ... 64-bit flags at byte 40, 0x2000 and 0x8000 meaning compressed) and
// its payload.
//
// Anything else (PTX, a compressed entry, an attribute format not listed) yields no layout for the
// kernels concerned: their launches are recorded without arguments. Images are trusted no further
// than their own sizes say: every read is bounds-checked against them.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace fake {

struct ParameterSlot {
  unsigned offset;  // in the kernel's parameter buffer
  unsigned size;
};

// Kernel name -> its parameters, by ordinal.
using ParameterLayouts = std::map<std::string, std::vector<ParameterSlot>>;

// The layouts found in `image`: a fat binary (its cubin entries) or a cubin. `image_bytes` bounds a
// cubin given alone; 0 means "as large as its own headers say" (cuModuleLoadData passes no size).
ParameterLayouts parameter_layouts(const void* image, std::size_t image_bytes = 0);

}  // namespace fake
