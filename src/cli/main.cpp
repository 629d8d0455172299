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

void usage(std::ostream& out) {
  out << "usage: streampool COMMAND ...   (streampool COMMAND --help: its options)\n"
               "  run [--fake] [--log L] [--stats F] [--trace F] -- PROGRAM ARGS  run under streampool, report at exit\n"
               "  report STATS.json...                                           render a STREAMPOOL_STATS report\n"
               "  replay TRACE [--release-threshold N] [--reuse-flags F] [--granule N] [--max-pool-size N] [--json]\n"
               "                                                                 replay a trace through the engine on the CPU\n"
               "  plot TRACE -o FILE.html|FILE.svg [replay's options]            memory over time, per pool and stream\n"
               "  export TRACE [--format torch-snapshot|perfetto] -o FILE.pickle|FILE.json [replay's options]\n"
               "                                                                 for PyTorch's memory viewer, Perfetto\n"
               "  version\n"
               "  help [COMMAND]\n";
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
    usage(std::cerr);
    return 2;
  }
  std::string command = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  // `streampool help COMMAND` is `streampool COMMAND --help`.
  if (command == "help" && !args.empty()) {
    command = args[0];
    args = {"--help"};
  }
  try {
    if (command == "run") return streampool::cli::run_command(args, self_path());
    if (command == "report") return streampool::cli::report_command(args);
    if (command == "replay") return streampool::cli::replay_command(args);
    if (command == "plot") return streampool::cli::plot_command(args);
    if ((command == "version" || command == "--version") && !args.empty() && streampool::cli::is_help(args[0])) {
      std::cout << "usage: streampool version   the command's version and the trace format it reads\n";
      return 0;
    }
    if (command == "export") return streampool::cli::export_command(args);
    if (command == "version" || command == "--version") {
      std::cout << "streampool " << STREAMPOOL_CLI_VERSION << " (trace format " << streampool::trace::kFormatVersion
                << ")\n";
      return 0;
    }
    if (command == "help" || command == "--help" || command == "-h") {
      usage(std::cout);
      return 0;
    }
  } catch (const std::exception& error) {
    std::cerr << "streampool " << command << ": " << error.what() << "\n";
    return 1;
  }
  std::cerr << "streampool: unknown " << (!command.empty() && command[0] == '-' ? "option '" : "command '") << command
            << "'\n";
  usage(std::cerr);
  return 2;
}
