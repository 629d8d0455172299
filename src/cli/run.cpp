// `streampool run [options] -- program args`: runs a program under streampool and prints a short
// report at exit. The preload library is added to any LD_PRELOAD the program already has; the
// real driver is found by libstreampool.so itself, or the fake one is named with --fake.
#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "commands.hpp"

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

void usage() {
  std::cerr << "usage: streampool run [--fake] [--log LEVEL] [--stats FILE] [--trace FILE] [--quiet] -- PROGRAM [ARGS...]\n"
               "  --fake         run over streampool's CPU-only fake driver (no GPU needed)\n"
               "  --log LEVEL    STREAMPOOL_LOG: error, warn, info or debug (one line per allocator event)\n"
               "  --stats FILE   keep the JSON report there (%p: the process id)\n"
               "  --trace FILE   record a trace (%p: the process id); see streampool replay and plot\n"
               "  --quiet        no report at exit\n";
}

}  // namespace

int run_command(const std::vector<std::string>& args, const std::string& self) {
  bool fake = false;
  bool quiet = false;
  std::string log;
  std::string stats;
  std::string trace_path;
  std::size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg == "--fake") {
      fake = true;
    } else if (arg == "--quiet") {
      quiet = true;
    } else if ((arg == "--log" || arg == "--stats" || arg == "--trace") && i + 1 < args.size()) {
      (arg == "--log" ? log : arg == "--stats" ? stats : trace_path) = args[++i];
    } else if (!arg.empty() && arg[0] == '-') {
      usage();
      return 2;
    } else {
      break;  // the program, without "--"
    }
  }
  if (i >= args.size()) {
    usage();
    return 2;
  }
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
    std::string path;
    for (std::size_t k = 0; k < stats.size(); ++k) {
      if (stats[k] == '%' && k + 1 < stats.size() && (stats[k + 1] == 'p' || stats[k + 1] == '%')) {
        path += stats[k + 1] == 'p' ? std::to_string(child) : "%";
        ++k;
      } else {
        path += stats[k];
      }
    }
    reports.push_back(path);
  }
  if (!quiet) {
    std::cerr << "\n";
    if (reports.empty()) std::cerr << "streampool run: the program left no report (it never reached the CUDA driver)\n";
    for (const std::string& path : reports) {
      std::string text;
      Json report;
      std::string error;
      if (!read_file(path, &text) || !parse_json(text, &report, &error)) {
        std::cerr << "streampool run: no report in " << path << "\n";
        continue;
      }
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
  return exit_status;
}

}  // namespace streampool::cli
