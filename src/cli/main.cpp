// streampool: run a program under streampool, render its reports, replay and plot its traces.
#include <unistd.h>

#include <climits>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "trace/format.hpp"

namespace {

void usage() {
  std::cerr << "usage: streampool COMMAND ...\n"
               "  run [--fake] [--log L] [--stats F] [--trace F] -- PROGRAM ARGS  run under streampool, report at exit\n"
               "  report STATS.json...                                           render a STREAMPOOL_STATS report\n"
               "  replay TRACE [--release-threshold N] [--reuse-flags F] [--granule N] [--max-pool-size N] [--json]\n"
               "                                                                 replay a trace through the engine on the CPU\n"
               "  plot TRACE -o FILE.html|FILE.svg [replay's options]            memory over time, per pool and stream\n"
               "  export TRACE [--format torch-snapshot|perfetto] -o FILE.pickle|FILE.json [replay's options]\n"
               "                                                                 for PyTorch's memory viewer, Perfetto\n"
               "  version\n";
}

std::string self_path() {
  char path[PATH_MAX];
  const ssize_t length = readlink("/proc/self/exe", path, sizeof path - 1);
  if (length <= 0) return {};
  path[length] = '\0';
  return path;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    usage();
    return 2;
  }
  const std::string command = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  try {
    if (command == "run") return streampool::cli::run_command(args, self_path());
    if (command == "report") return streampool::cli::report_command(args);
    if (command == "replay") return streampool::cli::replay_command(args);
    if (command == "plot") return streampool::cli::plot_command(args);
    if (command == "export") return streampool::cli::export_command(args);
    if (command == "version" || command == "--version") {
      std::cout << "streampool " << STREAMPOOL_CLI_VERSION << " (trace format " << streampool::trace::kFormatVersion
                << ")\n";
      return 0;
    }
    if (command == "help" || command == "--help" || command == "-h") {
      usage();
      return 0;
    }
  } catch (const std::exception& error) {
    std::cerr << "streampool " << command << ": " << error.what() << "\n";
    return 1;
  }
  usage();
  return 2;
}
