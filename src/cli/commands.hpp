// The streampool command's sub-commands (main.cpp dispatches). Each returns the exit status.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "json.hpp"

namespace streampool::cli {

int run_command(const std::vector<std::string>& args, const std::string& self);
int report_command(const std::vector<std::string>& args);
int replay_command(const std::vector<std::string>& args);
int plot_command(const std::vector<std::string>& args);

// "1.5 MiB"
std::string human_bytes(double bytes);
// The report of one STREAMPOOL_STATS file, as `streampool run` prints it at exit.
std::string render_report(const Json& report, const std::string& title);
// Reads a whole file; false when it cannot be read.
bool read_file(const std::string& path, std::string* text);
// A size argument: a number with an optional K/M/G suffix (powers of 1024).
bool parse_size(const std::string& text, std::uint64_t* bytes);

}  // namespace streampool::cli
