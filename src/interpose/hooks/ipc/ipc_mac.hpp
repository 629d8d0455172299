// The message authentication code of cuMemPoolExportPointer's export data: SipHash-2-4 (Aumasson and
// Bernstein), a keyed pseudo-random function made for short messages, run under two independent
// 128-bit keys to give a 128-bit tag. The keys are the exporting pool's secret: they never leave
// the exporting process, which alone checks tags (see ipc_exporter.cpp), so data an importer makes
// up or alters is refused unless it guesses 128 bits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace streampool::interpose::ipc {

struct MacKey {
  std::uint64_t words[4] = {};  // two SipHash keys: words[0..1] and words[2..3]
};

namespace detail {

constexpr std::uint64_t rotl(std::uint64_t value, int bits) noexcept {
  return (value << bits) | (value >> (64 - bits));
}

inline std::uint64_t siphash24(std::uint64_t k0, std::uint64_t k1, const unsigned char* bytes,
                               std::size_t size) noexcept {
  std::uint64_t v0 = 0x736f6d6570736575ull ^ k0;
  std::uint64_t v1 = 0x646f72616e646f6dull ^ k1;
  std::uint64_t v2 = 0x6c7967656e657261ull ^ k0;
  std::uint64_t v3 = 0x7465646279746573ull ^ k1;
  auto round = [&] {
    v0 += v1; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32);
    v2 += v3; v3 = rotl(v3, 16); v3 ^= v2;
    v0 += v3; v3 = rotl(v3, 21); v3 ^= v0;
    v2 += v1; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32);
  };
  const std::size_t whole = size - size % 8;
  for (std::size_t at = 0; at < whole; at += 8) {
    std::uint64_t word = 0;
    std::memcpy(&word, bytes + at, 8);  // little-endian hosts (x86-64, aarch64)
    v3 ^= word;
    round();
    round();
    v0 ^= word;
  }
  std::uint64_t last = static_cast<std::uint64_t>(size) << 56;
  for (std::size_t at = whole; at < size; ++at) last |= static_cast<std::uint64_t>(bytes[at]) << (8 * (at - whole));
  v3 ^= last;
  round();
  round();
  v0 ^= last;
  v2 ^= 0xff;
  round();
  round();
  round();
  round();
  return v0 ^ v1 ^ v2 ^ v3;
}

}  // namespace detail

struct MacTag {
  std::uint64_t words[2] = {};
};

inline MacTag mac_of(const MacKey& key, const unsigned char* bytes, std::size_t size) noexcept {
  return MacTag{{detail::siphash24(key.words[0], key.words[1], bytes, size),
                 detail::siphash24(key.words[2], key.words[3], bytes, size)}};
}

// Compares without an early exit, so that timing tells nothing about how much of a tag was right.
inline bool same_tag(const MacTag& a, const MacTag& b) noexcept {
  std::uint64_t difference = (a.words[0] ^ b.words[0]) | (a.words[1] ^ b.words[1]);
  return difference == 0;
}

}  // namespace streampool::interpose::ipc
