#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "core/errors.hpp"
#include "core/registry.hpp"
#include "output_file.hpp"
#include "report.hpp"
#include "selection.hpp"
#include "terminal.hpp"  // version_runs

namespace knn {

const char* to_string(Status s) {
  switch (s) {
    case Status::pass: return "pass";
    case Status::fail: return "fail";
    case Status::inexact: return "inexact";
    case Status::skip: return "skip";
  }
  return "?";
}

void write_file_atomically(const std::string& path, const std::string& content) { write_output_file(path, content); }

std::string format_ms(double ms) {
  if (ms >= 100) return fmt::format("{:.1f}", ms);
  if (ms >= 1) return fmt::format("{:.3f}", ms);
  if (ms >= 0.001) return fmt::format("{:.4f}", ms);
  return fmt::format("{:.2e}", ms);
}

double phase_median(const Result& r, const std::string& phase) {
  const auto it = r.phase_samples_ms.find(phase);
  if (it == r.phase_samples_ms.end()) return -1;
  if (it->second.empty()) {  // a trimmed file: the median it recorded
    const auto recorded = r.phase_recorded_median_ms.find(phase);
    return recorded != r.phase_recorded_median_ms.end() ? recorded->second : -1;
  }
  return median_of(it->second);
}

std::string version_phases_text(const Result& r) {
  // Transfers first, then the work, then the copy back, as a call runs.
  static const std::vector<std::string> order{"alloc", "h2d", "pitch", "transpose", "distances", "reduce", "kernel", "d2h", "merge"};
  std::vector<std::string> names;
  for (const auto& o : order)
    if (r.phase_samples_ms.count(o)) names.push_back(o);
  for (const auto& [name, samples] : r.phase_samples_ms)
    if (name != "build" && name != "query" && std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  std::string s;
  for (const auto& n : names) s += fmt::format("{}{} {}", s.empty() ? "" : ", ", n, format_ms(phase_median(r, n)));
  return s;
}

std::string summary_cell(const Result& r) {
  if (r.interrupted) return "interrupted";
  switch (r.status) {
    case Status::fail: return "FAIL";
    case Status::skip: return "skip";
    case Status::pass: break;
    case Status::inexact: break;
  }
  return format_ms(r.stats.median) + (r.status == Status::inexact ? "!" : "") + (r.validated ? "" : "*") +
         (r.noise_target_missed ? "~" : "");
}

std::string ground_truth_remark(const Result& r) {
  return r.validated && r.validation.ground_truth != ValidationReport().ground_truth ? r.validation.ground_truth : "";
}

std::string ground_truth_legend(const std::vector<Result>& results) {
  std::map<std::string, std::map<int, std::vector<std::string>>> by_truth;  // ground truth -> case -> versions
  std::map<int, int> validated;                                             // case -> validated results
  for (const auto& r : results) {
    if (!r.validated) continue;
    ++validated[r.problem_case.id];
    const std::string truth = ground_truth_remark(r);
    if (!truth.empty()) by_truth[truth][r.problem_case.id].push_back(r.label());
  }
  std::string s;
  for (auto& [truth, cases] : by_truth) {
    std::string where;
    for (auto& [id, versions] : cases) {
      std::sort(versions.begin(), versions.end(), version_less);
      // The versions are named only where others of the case were validated against something else.
      where += fmt::format("{}case {}{}", where.empty() ? "" : ", ", id,
                           int(versions.size()) == validated[id] ? "" : fmt::format(" ({})", version_runs(versions)));
    }
    s += fmt::format("Validated against {}: {}.\n", truth, where);
  }
  return s;
}

std::string inexact_text(const Result& r) {
  const ValidationReport& v = r.validation;
  return fmt::format("{} of {} queries wrong, {} wrong neighbours of {}, recall@topk {:.6g}", v.wrong_queries,
                     v.queries_checked, v.wrong_neighbors(), v.checked, v.recall());
}

std::string inexact_legend(const std::vector<Result>& results) {
  std::string s;
  for (const auto& r : results)
    if (r.status == Status::inexact)
      s += fmt::format("{}{} case {}: {}", s.empty() ? "" : "; ", r.label(), r.problem_case.id, inexact_text(r));
  if (s.empty()) return s;
  return "! = inexact: a peer's answer failed validation (graded, not a failure; --strict-peers makes it one): " + s + ".\n";
}

std::string summary_legend(const std::vector<Result>& results) {
  bool unvalidated = false, missed = false;
  for (const auto& r : results) {
    unvalidated = unvalidated || (r.status == Status::pass && !r.validated);
    missed = missed || (timed(r.status) && r.noise_target_missed);
  }
  std::string s = inexact_legend(results);
  if (unvalidated) s += "* = not validated (--no-validate).\n";
  if (missed) s += "~ = missed its noise target: sampling stopped before the median's noise fell below the target.\n";
  return s + ground_truth_legend(results);
}

std::string host_memory_text(const RunInfo& info) {
  if (info.devices.empty() && info.host_memory == HostMemory::pageable)
    return fmt::format("pageable (pinned memory needs a CUDA device, none here: {})", info.device_note);
  return to_string(info.host_memory);
}

std::string format_noise_pct(double pct) { return std::isfinite(pct) ? fmt::format("{:.1f}", pct) : "-"; }

std::string result_remarks(const Result& r) {
  std::vector<std::string> parts;
  if (r.interrupted) parts.push_back("interrupted");
  if (r.noise_target_missed) parts.push_back("missed its noise target");
  if (r.calls_per_sample > 1) parts.push_back(fmt::format("{} calls per sample", r.calls_per_sample));
  const ResultClocks& c = r.clocks;
  if (c.recorded() && c.changed())
    parts.push_back(fmt::format("SM clock {:.0f} -> {:.0f} MHz, throttle {} -> {}", c.sm_clock_mhz_before, c.sm_clock_mhz_after,
                                c.throttle_before.empty() ? "?" : c.throttle_before, c.throttle_after.empty() ? "?" : c.throttle_after));
  std::string s;
  for (const auto& p : parts) s += (s.empty() ? "" : "; ") + p;
  return s;
}

std::vector<std::vector<std::string>> summary_table(const std::vector<Result>& results) {
  std::vector<int> case_ids;
  std::vector<std::string> versions;
  std::map<std::pair<std::string, int>, std::string> cell;
  for (const auto& r : results) {
    if (std::find(case_ids.begin(), case_ids.end(), r.problem_case.id) == case_ids.end()) case_ids.push_back(r.problem_case.id);
    if (std::find(versions.begin(), versions.end(), r.label()) == versions.end()) versions.push_back(r.label());
    cell[{r.label(), r.problem_case.id}] = summary_cell(r);
  }
  std::sort(case_ids.begin(), case_ids.end());
  std::sort(versions.begin(), versions.end(), version_less);
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> head{"version"};
  for (int id : case_ids) head.push_back(fmt::format("case {}", id));
  rows.push_back(head);
  for (const auto& v : versions) {
    std::vector<std::string> row{v};
    for (int id : case_ids) {
      const auto it = cell.find({v, id});
      row.push_back(it == cell.end() ? "-" : it->second);
    }
    rows.push_back(row);
  }
  return rows;
}

}  // namespace knn
