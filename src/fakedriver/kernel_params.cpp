#include "kernel_params.hpp"

#include <cstdint>
#include <cstring>
#include <string_view>

namespace fake {
namespace {

constexpr std::uint32_t kFatBinaryMagic = 0xBA55ED50u;
constexpr unsigned char kElfMagic[4] = {0x7f, 'E', 'L', 'F'};
constexpr std::uint16_t kCubinEntryKind = 2;
constexpr std::uint64_t kCompressedFlags = 0x2000 | 0x8000;
constexpr unsigned char kParameterInfoAttribute = 0x17;
constexpr std::string_view kInfoPrefix = ".nv.info.";
// A cubin's ELF header never exceeds this; its sections lie within the size it states.
constexpr std::size_t kElfHeaderBytes = 64;
constexpr std::size_t kSectionHeaderBytes = 64;

// Bounds-checked little-endian reads from [data, data + size).
class Bytes {
 public:
  Bytes(const unsigned char* data, std::size_t size) : data_(data), size_(size) {}
  bool has(std::size_t offset, std::size_t bytes) const { return offset <= size_ && bytes <= size_ - offset; }
  template <class T>
  T read(std::size_t offset) const {
    T value{};
    std::memcpy(&value, data_ + offset, sizeof value);
    return value;
  }
  const unsigned char* at(std::size_t offset) const { return data_ + offset; }
  std::size_t size() const { return size_; }

 private:
  const unsigned char* data_;
  std::size_t size_;
};

std::vector<ParameterSlot> parse_info_section(const Bytes& section) {
  std::vector<ParameterSlot> by_ordinal;
  std::size_t at = 0;
  while (section.has(at, 4)) {
    const unsigned char format = *section.at(at);
    const unsigned char attribute = *section.at(at + 1);
    if (format == 3) {  // a 16-bit value
      at += 4;
      continue;
    }
    if (format != 4) break;  // a format whose length is not known: stop here
    const std::size_t bytes = section.read<std::uint16_t>(at + 2);
    if (!section.has(at + 4, bytes)) break;
    if (attribute == kParameterInfoAttribute && bytes >= 12) {
      const unsigned ordinal = section.read<std::uint16_t>(at + 4 + 4);
      const unsigned offset = section.read<std::uint16_t>(at + 4 + 6);
      const unsigned size = section.read<std::uint32_t>(at + 4 + 8) >> 18;
      if (ordinal < 4096) {
        if (by_ordinal.size() <= ordinal) by_ordinal.resize(ordinal + 1, ParameterSlot{0, 0});
        by_ordinal[ordinal] = ParameterSlot{offset, size};
      }
    }
    at += 4 + bytes;
  }
  return by_ordinal;
}

// A 64-bit little-endian ELF: the size its section headers say it spans, or 0 if it is not one.
std::size_t elf_extent(const unsigned char* image) {
  if (std::memcmp(image, kElfMagic, sizeof kElfMagic) != 0 || image[4] != 2 || image[5] != 1) return 0;
  const Bytes header(image, kElfHeaderBytes);
  const auto section_offset = static_cast<std::size_t>(header.read<std::uint64_t>(0x28));
  const auto section_count = header.read<std::uint16_t>(0x3c);
  std::size_t extent = section_offset + std::size_t{section_count} * kSectionHeaderBytes;
  // Sections may also lie after the table of their headers.
  const Bytes table(image + section_offset, std::size_t{section_count} * kSectionHeaderBytes);
  for (std::size_t index = 0; index < section_count; ++index) {
    const auto end = table.read<std::uint64_t>(index * kSectionHeaderBytes + 0x18) +
                     table.read<std::uint64_t>(index * kSectionHeaderBytes + 0x20);
    if (table.read<std::uint32_t>(index * kSectionHeaderBytes + 4) != 8 /* SHT_NOBITS */ && end > extent &&
        end < (std::uint64_t{1} << 40)) {
      extent = static_cast<std::size_t>(end);
    }
  }
  return extent;
}

void parse_cubin(const Bytes& elf, ParameterLayouts& layouts) {
  if (!elf.has(0, kElfHeaderBytes) || std::memcmp(elf.at(0), kElfMagic, sizeof kElfMagic) != 0) return;
  const auto section_offset = elf.read<std::uint64_t>(0x28);
  const auto entry_bytes = elf.read<std::uint16_t>(0x3a);
  const auto section_count = elf.read<std::uint16_t>(0x3c);
  const auto names_index = elf.read<std::uint16_t>(0x3e);
  if (entry_bytes < kSectionHeaderBytes || names_index >= section_count) return;
  if (!elf.has(section_offset, std::size_t{section_count} * entry_bytes)) return;
  auto section = [&](std::size_t index, std::uint64_t* offset, std::uint64_t* size) {
    const std::size_t base = section_offset + index * entry_bytes;
    *offset = elf.read<std::uint64_t>(base + 0x18);
    *size = elf.read<std::uint64_t>(base + 0x20);
    return elf.has(*offset, *size);
  };
  std::uint64_t names_offset = 0;
  std::uint64_t names_size = 0;
  if (!section(names_index, &names_offset, &names_size)) return;
  for (std::size_t index = 0; index < section_count; ++index) {
    const auto name_at = elf.read<std::uint32_t>(section_offset + index * entry_bytes);
    if (name_at >= names_size) continue;
    const auto* name_start = reinterpret_cast<const char*>(elf.at(names_offset + name_at));
    const std::string_view name(name_start, strnlen(name_start, names_size - name_at));
    if (!name.starts_with(kInfoPrefix) || name.size() == kInfoPrefix.size()) continue;
    std::uint64_t offset = 0;
    std::uint64_t size = 0;
    if (!section(index, &offset, &size)) continue;
    layouts[std::string(name.substr(kInfoPrefix.size()))] = parse_info_section(Bytes(elf.at(offset), size));
  }
}

void parse_fat_binary(const unsigned char* image, ParameterLayouts& layouts) {
  const Bytes header(image, 16);
  const auto header_bytes = header.read<std::uint16_t>(6);
  const auto entries_bytes = header.read<std::uint64_t>(8);
  if (header_bytes < 16 || entries_bytes > (std::uint64_t{1} << 40)) return;
  const Bytes entries(image + header_bytes, static_cast<std::size_t>(entries_bytes));
  std::size_t at = 0;
  while (entries.has(at, 48)) {
    const auto kind = entries.read<std::uint16_t>(at);
    const auto entry_header_bytes = entries.read<std::uint32_t>(at + 4);
    const auto payload_bytes = entries.read<std::uint32_t>(at + 8);
    if (entry_header_bytes < 48 || !entries.has(at + entry_header_bytes, payload_bytes)) return;
    const auto flags = entries.read<std::uint64_t>(at + 40);
    if (kind == kCubinEntryKind && (flags & kCompressedFlags) == 0) {
      parse_cubin(Bytes(entries.at(at + entry_header_bytes), payload_bytes), layouts);
    }
    at += std::size_t{entry_header_bytes} + payload_bytes;
  }
}

}  // namespace

ParameterLayouts parameter_layouts(const void* image, std::size_t image_bytes) {
  ParameterLayouts layouts;
  if (image == nullptr) return layouts;
  const auto* bytes = static_cast<const unsigned char*>(image);
  std::uint32_t magic = 0;
  std::memcpy(&magic, bytes, sizeof magic);
  if (magic == kFatBinaryMagic) {
    parse_fat_binary(bytes, layouts);
  } else if (std::memcmp(bytes, kElfMagic, sizeof kElfMagic) == 0) {
    parse_cubin(Bytes(bytes, image_bytes != 0 ? image_bytes : elf_extent(bytes)), layouts);
  }
  return layouts;
}

}  // namespace fake
