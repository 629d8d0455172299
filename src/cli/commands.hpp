// The streampool command's sub-commands (main.cpp dispatches). Each returns the exit status.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "json.hpp"

namespace streampool::cli {

// `run`'s options, before the program and its arguments (args[program] onwards).
struct RunOptions {
  bool fake = false;
  bool quiet = false;
  std::string log;
  std::string stats;
  std::string trace;
  std::size_t program = 0;
};
// False for a usage error: an unknown option, or no program.
bool parse_run_options(const std::vector<std::string>& args, RunOptions* options);

int run_command(const std::vector<std::string>& args, const std::string& self);
int report_command(const std::vector<std::string>& args);
int replay_command(const std::vector<std::string>& args);
int plot_command(const std::vector<std::string>& args);
int export_command(const std::vector<std::string>& args);  // export.hpp

// "1.5 MiB"
std::string human_bytes(double bytes);
// The report of one STREAMPOOL_STATS file, as `streampool run` prints it at exit.
std::string render_report(const Json& report, const std::string& title);
// Reads a STREAMPOOL_STATS report: false with "<path>: <why>" in *error when the file is not a
// regular file, is too large, is not JSON, or is not a report.
bool read_report(const std::string& path, Json* report, std::string* error);
// A size argument: a number with an optional K/M/G suffix (powers of 1024).
bool parse_size(const std::string& text, std::uint64_t* bytes);

}  // namespace streampool::cli
