#pragma once
// Running the knnbench binary from a test: its exit code and its output.
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

namespace knn::testing {

struct Run {
  int code;
  std::string out;  // stdout and stderr together
};

// Runs `binary args` through the shell (stdout is a pipe, so no colour and no progress line).
inline Run run(const std::string& binary, const std::string& args) {
  const std::string cmd = binary + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  Run r{-1, ""};
  if (!p) return r;
  std::array<char, 4096> buf;
  while (std::fgets(buf.data(), buf.size(), p)) r.out += buf.data();
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

// A file name in this process's own temporary folder.
inline std::string tmp_path(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("knn_cli_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

}  // namespace knn::testing
