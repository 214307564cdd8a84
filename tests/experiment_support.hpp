#pragma once
// The timed verdict experiments' shared set-up (test_verdicts*.cpp): the busy-machine check that
// skips them, a scratch folder holding their matrix, and the list of rows a noisy host explains.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace knn::testing {

// Why the machine is too busy for a timed experiment (load average over 1.5 per core), or nothing.
inline std::optional<std::string> machine_busy() {
  double load = 0;
  std::ifstream("/proc/loadavg") >> load;
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  if (load > 1.5 * cores) return fmt::format("machine busy: load average {:.1f} on {} cores", load, cores);
  return std::nullopt;
}

// A fresh folder under the temporary directory, named `stem` and unique, with `matrix` as matrix.json.
inline std::filesystem::path experiment_folder(const std::string& stem, const char* matrix) {
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("{}_{}_{}", stem, ::getpid(), std::random_device{}());
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "matrix.json") << matrix;
  return dir;
}

// The rows a skip names, one per line.
inline std::string row_lines(const std::vector<std::string>& rows) {
  std::string out;
  for (const auto& r : rows) out += "\n  " + r;
  return out;
}

}  // namespace knn::testing
