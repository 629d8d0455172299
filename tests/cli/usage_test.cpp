// The streampool command explains itself: help on stdout with exit status 0, for the command and
// for each sub-command; an unknown command or option named on stderr before the usage, exit
// status 2; `plot` says which files it writes; `replay` restates the options it ran with and what
// it rounded, in its text and its JSON.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace {

const std::string kTrace = std::string(STREAMPOOL_TEST_DATA) + "/demo.trace";

struct CommandRun {
  int exit_status = -1;
  std::string out;
  std::string err;
};

std::string file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// `streampool ARGS...` with its stdout and stderr kept apart.
CommandRun run_command(const std::vector<std::string>& args) {
  const std::string stem = "/tmp/streampool_cli_usage_" + std::to_string(getpid());
  const pid_t child = fork();
  if (child == 0) {
    alarm(20);
    const int out = open((stem + ".out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int err = open((stem + ".err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (out < 0 || err < 0 || dup2(out, STDOUT_FILENO) < 0 || dup2(err, STDERR_FILENO) < 0) _exit(126);
    std::vector<char*> argv{const_cast<char*>(STREAMPOOL_TEST_CLI)};
    for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  CommandRun run;
  int status = 0;
  if (child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status)) run.exit_status = WEXITSTATUS(status);
  run.out = file_text(stem + ".out");
  run.err = file_text(stem + ".err");
  std::remove((stem + ".out").c_str());
  std::remove((stem + ".err").c_str());
  return run;
}

bool starts_with(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

TEST(Usage, HelpListsTheCommandsOnStdoutAndExitsZero) {
  for (const char* help : {"--help", "-h", "help"}) {
    const CommandRun run = run_command({help});

    EXPECT_EQ(run.exit_status, 0) << help;
    EXPECT_TRUE(starts_with(run.out, "usage: streampool COMMAND")) << help << ": " << run.out;
    EXPECT_NE(run.out.find("  replay TRACE"), std::string::npos) << help;
    EXPECT_EQ(run.err, "") << help;
  }
}

TEST(Usage, EachCommandsHelpPrintsItsOwnUsageOnStdoutAndExitsZero) {
  for (const char* command : {"run", "report", "replay", "plot", "export", "version"}) {
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{command, "--help"}, {command, "-h"}, {"help", command}}) {
      const CommandRun run = run_command(args);

      EXPECT_EQ(run.exit_status, 0) << args[0] << " " << args[1];
      EXPECT_TRUE(starts_with(run.out, std::string("usage: streampool ") + command))
          << args[0] << " " << args[1] << ": " << run.out;
      EXPECT_EQ(run.err, "") << args[0] << " " << args[1];
    }
  }
}

TEST(Usage, HelpAfterOtherOptionsIsStillHelp) {
  const CommandRun run = run_command({"replay", kTrace, "--granule", "4M", "--help"});

  EXPECT_EQ(run.exit_status, 0);
  EXPECT_TRUE(starts_with(run.out, "usage: streampool replay")) << run.out;
}

TEST(Usage, AnUnknownCommandIsNamedBeforeTheUsageWithExitStatusTwo) {
  const CommandRun run = run_command({"frobnicate"});

  EXPECT_EQ(run.exit_status, 2);
  EXPECT_TRUE(starts_with(run.err, "streampool: unknown command 'frobnicate'\nusage: streampool COMMAND")) << run.err;
  EXPECT_EQ(run.out, "");
}

TEST(Usage, AnUnknownOptionOfTheCommandIsNamedBeforeTheUsage) {
  const CommandRun run = run_command({"--frobnicate"});

  EXPECT_EQ(run.exit_status, 2);
  EXPECT_TRUE(starts_with(run.err, "streampool: unknown option '--frobnicate'\nusage: streampool COMMAND")) << run.err;
}

TEST(Usage, AnUnknownOptionOfEachCommandIsNamedBeforeItsUsage) {
  const std::vector<std::vector<std::string>> cases = {
      {"run", "--frobnicate", "--", "true"},
      {"report", "--frobnicate", "stats.json"},
      {"replay", kTrace, "--frobnicate"},
      {"plot", kTrace, "-o", "out.svg", "--frobnicate"},
      {"export", kTrace, "-o", "out.json", "--frobnicate"},
  };
  for (const std::vector<std::string>& args : cases) {
    const CommandRun run = run_command(args);

    EXPECT_EQ(run.exit_status, 2) << args[0];
    EXPECT_TRUE(starts_with(run.err, "streampool " + args[0] + ": unknown option '--frobnicate'\nusage: streampool " +
                                         args[0]))
        << args[0] << ": " << run.err;
  }
}

TEST(Usage, RunSaysWhichOptionLacksItsValue) {
  const CommandRun run = run_command({"run", "--trace"});

  EXPECT_EQ(run.exit_status, 2);
  EXPECT_TRUE(starts_with(run.err, "streampool run: option '--trace' needs a value\nusage: streampool run")) << run.err;
}

TEST(Usage, PlotToAFileOfAnotherKindSaysWhichExtensionsItWrites) {
  const CommandRun run = run_command({"plot", kTrace, "-o", "/tmp/streampool_cli_usage.png"});

  EXPECT_EQ(run.exit_status, 2);
  EXPECT_EQ(run.err,
            "streampool plot: cannot write '/tmp/streampool_cli_usage.png': plot writes .html (a self-contained page) or "
            ".svg (the drawing alone), chosen by the extension\n");
}

TEST(Usage, PlotsHelpNamesTheExtensionsItWrites) {
  const CommandRun run = run_command({"plot", "--help"});

  EXPECT_NE(run.out.find("writes .html (a self-contained page) or .svg (the drawing alone)"), std::string::npos)
      << run.out;
}

TEST(ReplayOptions, WithoutOptionsTheReplaySaysItKeptTheRecordedSettings) {
  const CommandRun run = run_command({"replay", kTrace});

  EXPECT_EQ(run.exit_status, 0);
  EXPECT_NE(run.out.find("\n  options: release threshold as recorded, reuse flags as recorded, granule 2.0 MiB, max "
                         "pool size as recorded\n"),
            std::string::npos)
      << run.out;
}

TEST(ReplayOptions, APoolCapThatIsNotAWholeGrowthChunkIsRestatedAsRoundedUp) {
  const CommandRun run = run_command({"replay", kTrace, "--max-pool-size", "100M"});

  EXPECT_EQ(run.exit_status, 0);
  EXPECT_NE(run.out.find("max pool size 128.0 MiB (100.0 MiB asked, rounded up to the 32.0 MiB growth chunk; pools "
                         "with a smaller one keep theirs)\n"),
            std::string::npos)
      << run.out;
}

TEST(ReplayOptions, EveryOptionGivenIsRestated) {
  const CommandRun run = run_command(
      {"replay", kTrace, "--release-threshold", "1G", "--reuse-flags", "internal,follow", "--granule", "4M"});

  EXPECT_EQ(run.exit_status, 0);
  EXPECT_NE(run.out.find("  options: release threshold 1.0 GiB (every pool), reuse flags follow,internal (every pool), "
                         "granule 4.0 MiB, max pool size as recorded\n"),
            std::string::npos)
      << run.out;
}

TEST(ReplayOptions, APoolCapOfPartGranulesSaysHowMuchOfItIsMapped) {
  const CommandRun run = run_command({"replay", kTrace, "--max-pool-size", "96M", "--granule", "64M"});

  EXPECT_EQ(run.exit_status, 0);
  EXPECT_NE(run.out.find("max pool size 96.0 MiB (64.0 MiB of it in whole granules; pools with a smaller one keep "
                         "theirs)\n"),
            std::string::npos)
      << run.out;
}

TEST(ReplayOptions, TheJsonRestatesTheOptionsAndTheRounding) {
  const CommandRun run = run_command({"replay", kTrace, "--max-pool-size", "100M", "--granule", "64M", "--json"});

  EXPECT_EQ(run.exit_status, 0);
  EXPECT_NE(run.out.find("\"options\":{\"release_threshold\":null,\"reuse_flags\":null,\"granule\":67108864,"
                         "\"max_pool_size\":134217728,\"max_pool_size_asked\":104857600,"
                         "\"max_pool_size_mappable\":134217728}"),
            std::string::npos)
      << run.out;
}

}  // namespace
