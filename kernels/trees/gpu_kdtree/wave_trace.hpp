#pragma once
// v16's path line: the active queries per wave and the lanes per wave, as text. Host code only (the
// CPU tests check the rules).
#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace knn::kd {

// Active queries per wave as wave:queries (waves from 1): every wave up to 120, else the first 40,
// then waves about 5 % apart, and the last (the curve of seed 004's Figures 19-21; scripts/plots/plot_waves.py).
inline std::string active_trace(const std::vector<int>& active) {
  std::string trace;
  for (std::size_t w = 0, shown = 0; w < active.size(); ++w) {
    if (active.size() > 120 && w >= 40 && w + 1 < active.size() && w < shown + std::max<std::size_t>(1, shown / 20)) continue;
    trace += fmt::format("{}{}:{}", trace.empty() ? "" : " ", w + 1, active[w]);
    shown = w;
  }
  return trace;
}

// Lanes per wave as runs: "1 (waves 1-20), 2 (21-30), 8 (31-84)".
inline std::string lanes_trace(const std::vector<int>& lanes) {
  std::string trace;
  for (std::size_t w = 0, from = 0; w < lanes.size(); ++w) {
    if (w + 1 < lanes.size() && lanes[w + 1] == lanes[w]) continue;
    trace += fmt::format("{}{} ({}{}{})", trace.empty() ? "" : ", ", lanes[w], from == 0 ? "waves " : "", from + 1,
                         w > from ? fmt::format("-{}", w + 1) : std::string());
    from = w + 1;
  }
  return trace;
}

// The heap kernel's insertions in the first wave (v16.first_batch, its value in effect and whether it
// was auto; `taken`: that wave ran at one lane a query from unstaged leaves), as the path says them.
inline std::string heaps_text(int first_batch, bool taken, bool is_auto) {
  const std::string value = is_auto ? fmt::format("first_batch=auto: {}", first_batch) : fmt::format("first_batch={}", first_batch);
  if (first_batch <= 0) return fmt::format("top-k heaps in shared memory (each row put in as it is found, {})", value);
  if (!taken)
    return fmt::format("top-k heaps in shared memory ({} not taken: the first wave ran at more than one lane a query "
                       "or from staged leaves)",
                       value);
  return fmt::format("top-k heaps in shared memory (the first wave's rows closer than the K-th held and put in after every {} rows, {})",
                     first_batch, value);
}

}  // namespace knn::kd
