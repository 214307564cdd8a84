#pragma once
// Reading `knnbench ab --json` rows in the timed experiments (test_verdicts_ab*.cpp).
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace knn::testing {

// The widest max/min of one side's per-process medians in a row, and where it is.
inline std::pair<double, std::string> widest_spread(const nlohmann::json& row) {
  std::pair<double, std::string> out{1, ""};
  for (const char* side : {"a", "b"}) {
    const auto m = row[side]["medians_ms"].get<std::vector<double>>();
    const auto [lo, hi] = std::minmax_element(m.begin(), m.end());
    if (*hi / *lo > out.first) out = {*hi / *lo, fmt::format("side {} of case {}: {:.3f} to {:.3f} ms", side, row["case"].get<int>(), *lo, *hi)};
  }
  return out;
}

}  // namespace knn::testing
