// `streampool run [options] -- program args`: runs a program under streampool and prints a short
// report at exit. The preload library is added to any LD_PRELOAD the program already has; the
// real driver is found by libstreampool.so itself, or the fake one is named with --fake.
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "commands.hpp"
#include "trace/format.hpp"

namespace streampool::cli {

namespace {

bool exists(const std::string& path) { return access(path.c_str(), R_OK) == 0; }

std::string folder_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// The first candidate that exists: the environment's, next to the installed command, the build's.
std::string locate(const char* variable, const std::string& self, const std::string& installed, const char* built) {
  if (const char* given = std::getenv(variable); given != nullptr && given[0] != '\0') return given;
  const std::string beside = folder_of(self) + "/../" + installed;
  if (exists(beside)) return beside;
  if (exists(built)) return built;
  return {};
}

// `setting` with %p as `pid` and %% as %, as the preload expands STREAMPOOL_STATS and STREAMPOOL_TRACE.
std::string expand(const std::string& setting, pid_t pid) {
  std::string path;
  for (std::size_t k = 0; k < setting.size(); ++k) {
    if (setting[k] == '%' && k + 1 < setting.size() && (setting[k + 1] == 'p' || setting[k + 1] == '%')) {
      path += setting[k + 1] == 'p' ? std::to_string(pid) : "%";
      ++k;
    } else {
      path += setting[k];
    }
  }
  return path;
}

// Whether the preload could create or replace `setting` (for any process id): its folder is a
// writable directory, and a file already there is a regular one (the preload writes nothing else).
// Checked before the program runs, so that a long run does not end with its report lost.
bool can_write(const std::string& setting, std::string* why) {
  const std::string path = expand(setting, getpid());
  const std::string folder = folder_of(path);
  struct stat status {};
  if (stat(folder.c_str(), &status) != 0 || access(folder.c_str(), W_OK | X_OK) != 0) {
    *why = folder + ": " + std::strerror(errno);
    return false;
  }
  if (stat(path.c_str(), &status) == 0 && !S_ISREG(status.st_mode)) {
    *why = "not a regular file";
    return false;
  }
  return true;
}

// What the preload left at `path` (a trace's header at least), or why there is nothing.
bool left_a_trace(const std::string& path, std::string* why) {
  struct stat status {};
  if (stat(path.c_str(), &status) != 0) {
    *why = std::strerror(errno);
    return false;
  }
  if (!S_ISREG(status.st_mode) || static_cast<std::size_t>(status.st_size) < sizeof(trace::FileHeader)) {
    *why = S_ISREG(status.st_mode) ? "shorter than a trace's header" : "not a regular file";
    return false;
  }
  return true;
}

void usage(std::ostream& out) {
  out << "usage: streampool run [--fake] [--log LEVEL] [--stats FILE] [--trace FILE] [--quiet] -- PROGRAM [ARGS...]\n"
               "  --fake         run over streampool's CPU-only fake driver (no GPU needed)\n"
               "  --log LEVEL    STREAMPOOL_LOG: error, warn, info or debug (one line per allocator event)\n"
               "  --stats FILE   keep the JSON report there (%p: the process id)\n"
               "  --trace FILE   record a trace (%p: the process id); see streampool replay and plot\n"
               "  --quiet        no report at exit\n";
}

}  // namespace

bool parse_run_options(const std::vector<std::string>& args, RunOptions* options) {
  std::size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (is_help(arg)) {
      options->help = true;
      return true;
    }
    if (arg == "--fake") {
      options->fake = true;
    } else if (arg == "--quiet") {
      options->quiet = true;
    } else if ((arg == "--log" || arg == "--stats" || arg == "--trace") && i + 1 < args.size()) {
      (arg == "--log" ? options->log : arg == "--stats" ? options->stats : options->trace) = args[++i];
    } else if (!arg.empty() && arg[0] == '-') {
      options->unknown = arg;
      return false;
    } else {
      break;  // the program, without "--"
    }
  }
  options->program = i;
  return i < args.size();
}

int run_command(const std::vector<std::string>& args, const std::string& self) {
  RunOptions options;
  const bool parsed = parse_run_options(args, &options);
  if (parsed && options.help) {
    usage(std::cout);
    return 0;
  }
  if (!parsed) {
    const std::string& arg = options.unknown;
    if (arg == "--log" || arg == "--stats" || arg == "--trace") {
      std::cerr << "streampool run: option '" << arg << "' needs a value\n";
    } else if (!arg.empty()) {
      say_not_understood("run", arg);
    } else {
      std::cerr << "streampool run: no program to run\n";
    }
    usage(std::cerr);
    return 2;
  }
  const bool fake = options.fake;
  const bool quiet = options.quiet;
  const std::string& log = options.log;
  const std::string& stats = options.stats;
  const std::string& trace_path = options.trace;
  const std::size_t i = options.program;
  const std::string preload =
      locate("STREAMPOOL_PRELOAD_LIBRARY", self, STREAMPOOL_CLI_INSTALLED_PRELOAD, STREAMPOOL_CLI_BUILT_PRELOAD);
  if (preload.empty()) {
    std::cerr << "streampool run: cannot find libstreampool.so (set STREAMPOOL_PRELOAD_LIBRARY)\n";
    return 2;
  }
  std::string fake_driver;
  if (fake) {
    fake_driver = locate("STREAMPOOL_FAKE_LIBCUDA", self, STREAMPOOL_CLI_INSTALLED_FAKE, STREAMPOOL_CLI_BUILT_FAKE);
    if (fake_driver.empty()) {
      std::cerr << "streampool run: cannot find the fake driver (set STREAMPOOL_FAKE_LIBCUDA)\n";
      return 2;
    }
  }
  for (const auto& [setting, what] : {std::pair{stats, "report"}, std::pair{trace_path, "trace"}}) {
    std::string why;
    if (!setting.empty() && !can_write(setting, &why)) {
      std::cerr << "streampool run: cannot write the " << what << " to " << setting << ": " << why << "\n";
      return 2;
    }
  }
  // Reports go to a folder of our own unless the caller keeps them: one per process (%p).
  std::string report_dir;
  std::string stats_setting = stats;
  if (stats_setting.empty()) {
    char folder[] = "/tmp/streampool-run-XXXXXX";
    if (mkdtemp(folder) == nullptr) {
      std::cerr << "streampool run: cannot create a folder for the report: " << std::strerror(errno) << "\n";
      return 2;
    }
    report_dir = folder;
    stats_setting = report_dir + "/stats.%p.json";
  }

  const pid_t child = fork();
  if (child < 0) {
    std::cerr << "streampool run: fork: " << std::strerror(errno) << "\n";
    return 2;
  }
  if (child == 0) {
    const char* existing = std::getenv("LD_PRELOAD");
    const std::string chain = existing != nullptr && existing[0] != '\0' ? preload + ":" + existing : preload;
    setenv("LD_PRELOAD", chain.c_str(), 1);
    setenv("STREAMPOOL_STATS", stats_setting.c_str(), 1);
    setenv("STREAMPOOL_TIMING", "1", 1);
    if (!log.empty()) setenv("STREAMPOOL_LOG", log.c_str(), 1);
    if (!trace_path.empty()) setenv("STREAMPOOL_TRACE", trace_path.c_str(), 1);
    if (fake) setenv("STREAMPOOL_LIBCUDA", fake_driver.c_str(), 1);
    std::vector<char*> argv;
    for (std::size_t k = i; k < args.size(); ++k) argv.push_back(const_cast<char*>(args[k].c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    std::cerr << "streampool run: cannot run " << args[i] << ": " << std::strerror(errno) << "\n";
    _exit(127);
  }
  // Ctrl-C is for the program; we stay to print its report.
  signal(SIGINT, SIG_IGN);
  signal(SIGQUIT, SIG_IGN);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  const int exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);

  // The reports: every process's from our folder, or the caller's file for the program itself.
  std::vector<std::string> reports;
  if (!report_dir.empty()) {
    if (DIR* dir = opendir(report_dir.c_str()); dir != nullptr) {
      while (const dirent* entry = readdir(dir)) {
        if (entry->d_name[0] != '.') reports.push_back(report_dir + "/" + entry->d_name);
      }
      closedir(dir);
    }
  } else {
    reports.push_back(expand(stats, child));
  }
  // A file asked for and not there is said, and is a failure even where the program succeeded.
  bool lost = false;
  if (!trace_path.empty()) {
    const std::string path = expand(trace_path, child);
    if (std::string why; !left_a_trace(path, &why)) {
      std::cerr << "streampool run: no trace in " << path << ": " << why
                << " (the program never reached the CUDA driver, or the trace could not be written)\n";
      lost = true;
    }
  }
  if (!quiet || !stats.empty()) {
    if (!quiet) std::cerr << "\n";
    if (reports.empty() && !quiet) {
      std::cerr << "streampool run: the program left no report (it never reached the CUDA driver)\n";
    }
    for (const std::string& path : reports) {
      Json report;
      std::string error;
      if (!read_report(path, &report, &error)) {
        std::cerr << "streampool run: no report in " << error << "\n";
        lost = lost || !stats.empty();
        continue;
      }
      if (quiet) continue;
      std::string title = "process ";
      const auto dot = path.rfind(".json");
      const auto before = path.rfind('.', dot == std::string::npos ? 0 : dot - 1);
      title += report_dir.empty() || before == std::string::npos ? std::to_string(child)
                                                                 : path.substr(before + 1, dot - before - 1);
      title += ", exit status " + std::to_string(exit_status);
      std::cerr << render_report(report, title);
    }
  }
  if (!report_dir.empty()) {
    for (const std::string& path : reports) unlink(path.c_str());
    rmdir(report_dir.c_str());
  }
  return lost && exit_status == 0 ? 1 : exit_status;
}

}  // namespace streampool::cli
