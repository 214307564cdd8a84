#pragma once
// The timed verdict experiments' shared set-up (test_verdicts*.cpp): the busy-machine check that
// skips them, a scratch folder holding their matrix, the list of rows a noisy host explains, and
// one repeat of an attempt that missed.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
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

// One attempt of a timed experiment: the rows that broke its promise (`wrong`), those this host
// could not judge (`withheld`: the verdict withheld, or the processes spread too far), its output,
// and its own folder ("" where the experiment keeps one folder for every attempt).
struct Attempt {
  std::vector<std::string> wrong, withheld;
  std::string out;
  std::filesystem::path dir;
  bool missed() const { return !wrong.empty() || !withheld.empty(); }
};

// A shared 2-core machine sometimes changes speed for part of a minute: runs `run`, and an attempt
// that missed is printed (its folder removed) and run once more with fresh processes. Returns the
// attempt to judge: its wrong rows fail the test; withheld rows alone skip it.
template <class Run>
Attempt run_with_one_repeat(Run&& run) {
  Attempt at = run();
  if (at.missed()) {
    std::cout << "attempt 1 missed (repeated once):" << row_lines(at.wrong) << row_lines(at.withheld) << "\n" << at.out << "\n";
    if (!at.dir.empty()) std::filesystem::remove_all(at.dir);
    at = run();
  }
  return at;
}

}  // namespace knn::testing
