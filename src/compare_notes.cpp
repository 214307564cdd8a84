// `knnbench compare`'s notes above the table: what differs between the two runs (devices, hosts,
// host memory, an incomplete run), between what their answers were validated against, and
// unrelated versions that moved together.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "compare.hpp"
#include "report.hpp"     // format_ms
#include "selection.hpp"  // version_less
#include "terminal.hpp"   // version_runs

namespace knn {
namespace {

std::string devices_text(const std::vector<DeviceInfo>& devs) {
  if (devs.empty()) return "no GPU";
  std::vector<std::pair<std::string, int>> groups;  // "name (cc x, N SMs)" × count, in ordinal order
  for (const auto& d : devs) {
    const std::string label = fmt::format("{} (cc {}.{}, {} SMs)", d.name, d.cc_major, d.cc_minor, d.sm_count);
    if (!groups.empty() && groups.back().first == label)
      ++groups.back().second;
    else
      groups.emplace_back(label, 1);
  }
  std::vector<std::string> parts;
  for (const auto& [label, count] : groups) parts.push_back(fmt::format("{}× {}", count, label));
  return fmt::format("{}", fmt::join(parts, " + "));
}

bool same_devices(const RunInfo& a, const RunInfo& b) {
  if (a.devices.size() != b.devices.size()) return false;
  for (std::size_t i = 0; i < a.devices.size(); ++i) {
    const auto &x = a.devices[i], &y = b.devices[i];
    if (x.name != y.name || x.cc_major != y.cc_major || x.cc_minor != y.cc_minor || x.sm_count != y.sm_count || x.total_memory != y.total_memory)
      return false;
  }
  return true;
}

}  // namespace

std::vector<std::string> header_notes(const RunSummary& sa, const RunSummary& sb) {
  const RunInfo &a = sa.info, &b = sb.info;
  std::vector<std::string> notes;
  if (!same_devices(a, b))
    notes.push_back(fmt::format("Devices differ: A has {}; B has {}. Compared anyway: comparing machines is the point.", devices_text(a.devices),
                                devices_text(b.devices)));
  if (a.host.cpu_model != b.host.cpu_model || a.host.cores != b.host.cores || a.host.omp_threads != b.host.omp_threads)
    notes.push_back(fmt::format("Hosts differ: A has {} ({} cores, {} OpenMP threads); B has {} ({} cores, {} OpenMP threads).", a.host.cpu_model,
                                a.host.cores, a.host.omp_threads, b.host.cpu_model, b.host.cores, b.host.omp_threads));
  if (a.host_memory != b.host_memory)
    notes.push_back(fmt::format("Host memory differs: A {}, B {}; transfer times are not like for like.", to_string(a.host_memory),
                                to_string(b.host_memory)));
  for (const auto* s : {&sa, &sb})
    if (!s->info.complete) notes.push_back(fmt::format("{} is an incomplete run (interrupted or still running).", s->file));
  return notes;
}

std::vector<std::string> ground_truth_notes(const std::vector<ComparedPair>& pairs) {
  // (A's ground truth, B's) -> case -> versions, in the report's order.
  std::map<std::pair<std::string, std::string>, std::map<int, std::vector<std::string>>> differ;
  for (const auto& p : pairs)
    if (!p.a_ground_truth.empty() && !p.b_ground_truth.empty() && p.a_ground_truth != p.b_ground_truth)
      differ[{p.a_ground_truth, p.b_ground_truth}][p.case_id].push_back(p.version);
  std::vector<std::string> notes;
  for (auto& [truths, cases] : differ) {
    std::vector<std::string> where;
    for (auto& [id, versions] : cases) {
      std::sort(versions.begin(), versions.end(), version_less);
      where.push_back(fmt::format("case {} ({})", id, version_runs(versions)));
    }
    notes.push_back(fmt::format("Validated against different ground truths: A against {}, B against {}, for {}. The times are compared all the same.",
                                truths.first, truths.second, fmt::join(where, ", ")));
  }
  return notes;
}

std::vector<std::string> min_change_notes(const std::vector<ComparedPair>& pairs, const CompareOptions& opts) {
  std::vector<std::string> notes;
  for (const auto& p : pairs)
    if (p.under_min_change && !p.hidden)
      notes.push_back(fmt::format("{} case {}: B changed by {:+.1f}% but only {} ms ({} -> {} ms), under --min-change {} ms: SAME "
                                  "(--min-change 0 judges such pairs by --threshold, noise and p alone).",
                                  p.version, p.case_id, p.effect_pct(), format_ms(std::abs(p.b_median_ms - p.a_median_ms)),
                                  format_ms(p.a_median_ms), format_ms(p.b_median_ms), opts.min_change_ms));
  return notes;
}

std::vector<std::string> drift_notes(const std::vector<VersionGeomean>& geomeans, double min_effect_pct) {
  std::vector<std::string> notes;
  for (const int sign : {+1, -1}) {
    std::vector<const VersionGeomean*> moved;
    for (const auto& g : geomeans)
      if (g.pairs >= kDriftMinPairs && std::isfinite(g.geomean) && sign * 100 * (g.geomean - 1) > min_effect_pct) moved.push_back(&g);
    if (int(moved.size()) < kDriftMinVersions) continue;
    std::vector<std::string> parts;
    for (const auto* g : moved) parts.push_back(fmt::format("{} {:+.1f}%", g->version, 100 * (g->geomean - 1)));
    notes.push_back(fmt::format(
        "{} versions moved the same way, each beyond --threshold {}% (geometric mean of B/A over its cases): {}. Many versions "
        "moving together often means the machine's speed changed between the runs (load, clocks, the neighbours of a virtual "
        "machine: compare the runs' load averages, and which phases moved) rather than their code; a change to code they share "
        "does the same (docs/measurement.md). The verdicts above stand.",
        moved.size(), min_effect_pct, fmt::join(parts, ", ")));
  }
  return notes;
}

}  // namespace knn
