// Small helpers shared by the interposer tests: files of names, command output, and which loaded
// object an address belongs to.
#pragma once

#include <dlfcn.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace streampool::test {

// Non-empty lines of a file with '#' comments removed, first whitespace-separated word of each.
inline std::vector<std::string> words_of_lines(const std::string& path) {
  std::vector<std::string> words;
  std::ifstream input(path);
  for (std::string line; std::getline(input, line);) {
    line = line.substr(0, line.find('#'));
    std::istringstream fields(line);
    std::string word;
    if (fields >> word) words.push_back(word);
  }
  return words;
}

inline std::set<std::string> hooked_names() {
  const auto words = words_of_lines(STREAMPOOL_TEST_HOOKED_SYMBOLS);
  return {words.begin(), words.end()};
}

// stdout of a shell command.
inline std::string command_output(const std::string& command) {
  std::string output;
  if (FILE* pipe = popen(command.c_str(), "r")) {
    char buffer[4096];
    std::size_t got = 0;
    while ((got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, got);
    pclose(pipe);
  }
  return output;
}

// Names `nm -D --defined-only` lists for a shared library.
inline std::set<std::string> defined_dynamic_symbols(const std::string& library) {
  std::set<std::string> names;
  std::istringstream lines(command_output(std::string(STREAMPOOL_TEST_NM) + " -D --defined-only '" + library + "'"));
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string address, type, name;
    if (fields >> address >> type >> name) names.insert(name.substr(0, name.find('@')));
  }
  return names;
}

// The load address of the object containing `address` (nullptr when none).
inline void* object_base_of(const void* address) {
  Dl_info info{};
  if (address == nullptr || dladdr(address, &info) == 0) return nullptr;
  return info.dli_fbase;
}

// The exported symbol at exactly `address`, or "".
inline std::string symbol_at(const void* address) {
  Dl_info info{};
  if (address == nullptr || dladdr(address, &info) == 0 || info.dli_sname == nullptr || info.dli_saddr != address) {
    return {};
  }
  return info.dli_sname;
}

}  // namespace streampool::test
