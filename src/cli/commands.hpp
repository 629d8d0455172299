// The streampool command's sub-commands (main.cpp dispatches). Each returns the exit status.
#pragma once

#include <cstdint>
#include <iosfwd>
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
  bool help = false;    // --help or -h among the options: nothing else is checked
  std::string unknown;  // after a usage error: the option not understood, or the one missing its value
};
// False for a usage error: an unknown option, an option without its value, or no program; true,
// with `help` set, for --help.
bool parse_run_options(const std::vector<std::string>& args, RunOptions* options);

// Each prints its usage on stdout and returns 0 for --help or -h, and says what it does not
// understand ("streampool replay: unknown option '--x'") before its usage on stderr, returning 2.
int run_command(const std::vector<std::string>& args, const std::string& self);
int report_command(const std::vector<std::string>& args);
int replay_command(const std::vector<std::string>& args);
int plot_command(const std::vector<std::string>& args);
int export_command(const std::vector<std::string>& args);  // export.hpp

// Whether `arg` asks for a command's help.
bool is_help(const std::string& arg);
// Whether any of `args` asks for it (a --help after other options is still help).
bool any_help(const std::vector<std::string>& args);
// "streampool COMMAND: unknown option 'ARG'" (or "unexpected argument" for one not an option) on stderr.
void say_not_understood(const char* command, const std::string& arg);

// "1.5 MiB"
std::string human_bytes(double bytes);
// The report of one STREAMPOOL_STATS file, as `streampool run` prints it at exit.
std::string render_report(const Json& report, const std::string& title);
// Reads a STREAMPOOL_STATS report: false with "<path>: <why>" in *error when the file is not a
// regular file, is too large, is not JSON, or is not a report.
bool read_report(const std::string& path, Json* report, std::string* error);
// Fragmentation, the one definition of it the command's reports use (`run`'s and `report`'s table
// per pool, `replay`'s per pool and for all pools together): the share of the peak reservation
// that was never in use at once, 1 - peak used / peak reserved; 0 with nothing reserved.
double fragmentation(double peak_used, double peak_reserved);
// A size argument: a number with an optional K/M/G suffix (powers of 1024).
bool parse_size(const std::string& text, std::uint64_t* bytes);

}  // namespace streampool::cli
