// `streampool export TRACE [--format torch-snapshot|perfetto] -o FILE [replay's what-if options]`
// (export.hpp). Without --format, the output's name says it: .pickle is a torch snapshot,
// .json a Perfetto trace.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <iostream>

#include "commands.hpp"
#include "export.hpp"
#include "trace/files.hpp"

namespace streampool::cli {

bool records_out_of_memory(const trace::Trace& trace) {
  for (const trace::Record& record : trace.records) {
    if (record.op == static_cast<std::uint16_t>(trace::Op::out_of_memory)) return true;
  }
  return false;
}

bool write_all(int fd, const char* bytes, std::size_t size) {
  while (size > 0) {
    const ssize_t written = ::write(fd, bytes, size);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return false;
    bytes += written;
    size -= static_cast<std::size_t>(written);
  }
  return true;
}

std::string hex_of(std::uint64_t value) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

std::string stream_label(std::uint64_t stream) {
  if (stream == 0) return "legacy default stream";
  if (stream == 2) return "per-thread default stream";
  return "stream " + hex_of(stream);
}

namespace {

bool ends_with(const std::string& text, const std::string& tail) {
  return text.size() > tail.size() && text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

void usage(std::ostream& out) {
  out << "usage: streampool export TRACE [--format torch-snapshot|perfetto] -o FILE [what-if options of "
               "streampool replay]\n"
               "  torch-snapshot (FILE.pickle): for python -m torch.cuda._memory_viz trace_plot|segment_plot\n"
               "  perfetto (FILE.json): for ui.perfetto.dev and chrome://tracing\n";
}

}  // namespace

int export_command(const std::vector<std::string>& args) {
  WhatIf what_if;
  std::vector<std::string> rest;
  if (!parse_what_if(args, &what_if, &rest)) return 2;
  std::string path;
  std::string output;
  std::string format;
  if (any_help(rest)) {
    usage(std::cout);
    return 0;
  }
  for (std::size_t i = 0; i < rest.size(); ++i) {
    if ((rest[i] == "-o" || rest[i] == "--output") && i + 1 < rest.size()) {
      output = rest[++i];
    } else if (rest[i] == "--format" && i + 1 < rest.size()) {
      format = rest[++i];
    } else if (path.empty() && !rest[i].empty() && rest[i][0] != '-') {
      path = rest[i];
    } else {
      say_not_understood("export", rest[i]);
      usage(std::cerr);
      return 2;
    }
  }
  if (format.empty()) {
    if (ends_with(output, ".pickle")) format = "torch-snapshot";
    if (ends_with(output, ".json")) format = "perfetto";
  }
  if (path.empty() || output.empty() || (format != "torch-snapshot" && format != "perfetto")) {
    if (!format.empty() && format != "torch-snapshot" && format != "perfetto") {
      std::cerr << "streampool export: unknown format '" << format << "'\n";
    }
    usage(std::cerr);
    return 2;
  }
  trace::Trace recorded;
  std::string error;
  if (!trace::read_trace(path, &recorded, &error)) {
    std::cerr << "streampool: " << error << "\n";
    return 1;
  }
  const char* why = nullptr;
  const int fd = trace::open_output_file(output.c_str(), false, &why);
  if (fd < 0) {
    std::cerr << "streampool export: " << output << ": " << (why != nullptr ? why : "cannot be written") << "\n";
    return 1;
  }
  const bool written = format == "torch-snapshot" ? export_torch_snapshot(path, recorded, what_if, fd, &error)
                                                  : export_perfetto(path, recorded, what_if, fd, &error);
  const bool closed = ::close(fd) == 0;
  if (!written || !closed) {
    // The trace's own refusals read as replay's do ("streampool: <trace>: ..."); a write that
    // failed names the output.
    std::cerr << (written ? "streampool export: " + output + ": cannot be written" : "streampool: " + error) << "\n";
    return 1;
  }
  std::cerr << "streampool export: wrote " << output << " (" << format << ")\n";
  return 0;
}

}  // namespace streampool::cli
