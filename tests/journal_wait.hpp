#pragma once
// Waiting for a run in another process to book results, instead of sleeping a fixed time: on a busy
// 2-core machine (CI under ctest -j2) the start of a process and its first tiny case took from 0.2 s
// to over 1.2 s, too close to a fixed 1.5 s sleep for a test that must signal after that result.
#include <algorithm>
#include <chrono>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "results_journal.hpp"

namespace knn::testing {

// True once the run writing `results_path` has booked `count` results in its journal (the header
// line, then one line per result); false after `limit_s` seconds without them.
inline bool wait_for_booked(const std::string& results_path, int count, double limit_s = 60) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit_s);
  while (std::chrono::steady_clock::now() < end) {
    std::ifstream in(journal_path(results_path));
    const auto lines = std::count(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>(), '\n');
    if (lines >= count + 1) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

}  // namespace knn::testing
