// cuGetExportTable: NVIDIA's driver hands its own runtime private tables of functions, each named by
// a UUID; cuda.h declares the entry point but none of the tables, whose meanings are known only from
// public reverse engineering. The fake serves none of them and answers CUDA_ERROR_NOT_SUPPORTED, as
// it does for every entry point it does not implement.
//
// Why none: NVIDIA's cudart 13 starts (first runtime call, statically or dynamically linked) by
// asking for the tables below, in this order, and then calls the "software validity" table's
// function with the versions 13000, 13001 and 13002, the current time and a 16-byte result buffer.
// It compares each result with a keyed hash it computes itself (of the process and thread ids, the
// tables' addresses and the devices' UUIDs and PCI ids) and, on a mismatch or an error, fails every
// runtime call with cudaErrorSoftwareValidityNotEstablished (an error the function returns, or a
// missing table, becomes the runtime's error instead). The answer is a check that the driver is
// NVIDIA's; the fake cannot give it without forging it, so programs linked to NVIDIA's cudart do not
// run over the fake. Programs linked to streampool's runtime do (it asks for no export table).
//
// The names are those of the public descriptions, for the trace (STREAMPOOL_FAKE_TRACE=1), which
// shows every table a program asks for.
#include <cstring>

#include "api_guard.hpp"

namespace fake {
namespace {

struct KnownTable {
  unsigned char id[16];
  const char* name;
};

constexpr KnownTable kKnownTables[] = {
    // Asked for first, before cuInit; cudart goes on without it. No public description.
    {{0xf8, 0xcf, 0xf9, 0x51, 0x21, 0x46, 0x8b, 0x4e, 0xb9, 0xe2, 0xfb, 0x46, 0x9e, 0x7c, 0x0d, 0xd9}, "unnamed"},
    // The runtime's interface: modules from fat binaries, a device's primary context.
    {{0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9}, "cudart interface"},
    // Buffers in which the runtime keeps the state of tools' (profilers') callbacks.
    {{0xa0, 0x94, 0x79, 0x8c, 0x2e, 0x74, 0x2e, 0x74, 0x93, 0xf2, 0x08, 0x00, 0x20, 0x0c, 0x0a, 0x66},
     "tools runtime callback hooks"},
    {{0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47, 0x82, 0x98, 0xf6, 0xe7, 0x8a, 0x3a, 0xec, 0xdc}, "tools TLS"},
    // Per-context storage of the runtime's state, with a destructor run when the context goes.
    {{0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11, 0xa8, 0xc3, 0x68, 0xf3, 0x55, 0xd8, 0x95, 0x93},
     "context local storage"},
    {{0x26, 0x3e, 0x88, 0x60, 0x7c, 0xd2, 0x61, 0x43, 0x92, 0xf6, 0xbb, 0xd5, 0x00, 0x6d, 0xfa, 0x7e}, "context checks"},
    // The check that the driver is NVIDIA's (see above): where NVIDIA's cudart 13 stops.
    {{0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b, 0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1, 0xf2},
     "software validity check"},
    {{0x0c, 0xa5, 0x0b, 0x8c, 0x10, 0x04, 0x92, 0x9a, 0x89, 0xa7, 0xd0, 0xdf, 0x10, 0xe7, 0x72, 0x86}, "context create bypass"},
    {{0x19, 0x5b, 0xcb, 0xf4, 0xd6, 0x7d, 0x02, 0x4a, 0xac, 0xc5, 0x1d, 0x29, 0xce, 0xa6, 0x31, 0xae}, "heap access"},
    {{0xb1, 0x05, 0x41, 0xe1, 0xf7, 0xc7, 0xc7, 0x4a, 0x9f, 0x64, 0xf2, 0x23, 0xbe, 0x99, 0xf1, 0xe2},
     "device extended runtime"},
};

const char* table_name(const CUuuid& id) {
  for (const KnownTable& table : kKnownTables) {
    if (std::memcmp(table.id, id.bytes, sizeof table.id) == 0) return table.name;
  }
  return "unknown";
}

CUresult get_export_table(const void** table, const CUuuid* id) {
  if (table == nullptr || id == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *table = nullptr;
  if (trace_enabled()) {
    const auto* b = reinterpret_cast<const unsigned char*>(id->bytes);
    trace_detail("%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x %s", b[0], b[1], b[2], b[3], b[4],
                 b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15], table_name(*id));
  }
  return CUDA_ERROR_NOT_SUPPORTED;
}

}  // namespace
}  // namespace fake

FAKE_EXPORT CUresult cuGetExportTable(const void** ppExportTable, const CUuuid* pExportTableId) {
  FAKE_ENTRY(fake::get_export_table(ppExportTable, pExportTableId));
}
